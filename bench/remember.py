"""An agent's memory loop on LoCoMo (development subset): write every session through
`remember`, then ask the questions; the same notes written directly as the anchor.

    .venv/bin/python bench/remember.py [--data /work/shared/datasets/locomo-dev]
        [--ranker hybrid|bm25] [--embedder minilm|standin|none] [--keep DIR]

`--embedder standin` is the tests' loopback embeddings server (a hashed bag of
words): hybrid's fusion and the vectors' path through `embed_on_write` without
the cost of a model; the recall figures then say little about meaning, only
whether the two vaults answer alike.

Two vaults are made from the same session notes (one note per session: front matter
with the date and speakers, each turn a line `D3:7 Caroline: …`):

- direct: each note written with a plain file write (the anchor), then
  `hql index build`;
- remember: an empty vault with `[semantics] embed_on_write = true`; each session in
  order goes through `hql.notes` `remember(text, title, properties)`, which first
  ranks the vault for near-duplicates; the loop's policy when some are proposed is
  to `create` anyway (a session is a new event), and the proposals are counted.

Then every question of categories 1-4 is asked of both vaults through the ranker;
session recall@5 (the share of a question's evidence sessions among the first five
notes), recall@10 and MRR are printed for both, with the time per remember against
the time per plain file write measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DATA = Path("/work/shared/datasets/locomo-dev")
EMBEDDERS = {
    "minilm": 'provider = "local"\nmodel = "sentence-transformers/all-MiniLM-L6-v2"\n',
    "standin": "standin",
    "none": None,
}


def sessions(data: Path) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """Every session as a note (conversation, number, title, properties, text) and every
    question of categories 1-4 with the titles of its evidence sessions."""
    notes, questions = [], []
    for path in sorted(data.glob("*.json")):
        conversation = json.loads(path.read_text())
        talk = conversation.get("conversation", conversation)
        label = path.stem
        number = 1
        while f"session_{number}" in talk:
            turns = talk[f"session_{number}"]
            lines = [f"{turn['dia_id']} {turn['speaker']}: {turn['text']}" for turn in turns]
            notes.append(
                {
                    "title": f"Conversation {label} session {number:02d}",
                    "properties": {
                        "date": talk[f"session_{number}_date_time"],
                        "speakers": [talk["speaker_a"], talk["speaker_b"]],
                    },
                    "text": "\n".join(lines),
                }
            )
            number += 1
        for item in conversation["qa"]:
            if item.get("category") not in (1, 2, 3, 4):
                continue
            evidence = {
                f"Conversation {label} session {int(ref.split(':')[0][1:]):02d}"
                for ref in item.get("evidence", [])
                if ref.startswith("D") and ":" in ref and ref.split(":")[0][1:].isdigit()
            }
            if evidence:
                questions.append({"question": item["question"], "evidence": sorted(evidence)})
    return notes, questions


def toml(embedder: str | None, embed_on_write: bool) -> str:
    if embedder is None:
        return ""
    flag = "embed_on_write = true\n" if embed_on_write else ""
    return (
        f'[semantics]\nindex = ".hql/index.sqlite"\nembed_queries = true\n{flag}\n'
        f"[semantics.embedder]\n{embedder}"
    )


def write_directly(root: Path, notes: list[dict[str, object]]) -> list[float]:
    from hql.notes.frontmatter import FrontMatter

    seconds = []
    for note in notes:
        front = FrontMatter.parse("")
        for key, value in note["properties"].items():  # type: ignore[attr-defined]
            front.set(key, value)
        data = f"---\n{front.text()}---\n# {note['title']}\n\n{note['text']}\n".encode()
        started = time.perf_counter()
        with open(root / f"{note['title']}.md", "wb") as handle:
            handle.write(data)
        seconds.append(time.perf_counter() - started)
    return seconds


def write_by_remember(root: Path, notes: list[dict[str, object]]) -> tuple[list[float], int]:
    import hql.notes
    from hql.notes.reconcile import remember

    memory = hql.notes.open(root)
    seconds, proposed = [], 0
    for note in notes:
        started = time.perf_counter()
        answer = remember(
            memory,
            str(note["text"]),
            title=str(note["title"]),
            properties=note["properties"],  # type: ignore[arg-type]
        )
        if not answer["written"]:  # the loop's policy: a session is a new event
            proposed += 1
            answer = remember(
                memory,
                str(note["text"]),
                title=str(note["title"]),
                properties=note["properties"],  # type: ignore[arg-type]
                create=True,
            )
        seconds.append(time.perf_counter() - started)
        assert answer["written"], answer
    return seconds, proposed


def recall(root: Path, questions: list[dict[str, object]], ranker: str) -> dict[str, float]:
    import hql

    vault = hql.Vault.open(root)
    program = f"import {ranker}\ncards | {ranker}($q) | take(10) | map(h => h.card.name)"
    at5, at10, reciprocal = [], [], []
    for item in questions:
        outcome = hql.run(program, vault=vault, params={"q": item["question"]})
        assert not outcome.failed, outcome.render_reports()
        names = list(outcome.value)
        wanted = set(item["evidence"])  # type: ignore[arg-type]
        at5.append(len(wanted & set(names[:5])) / len(wanted))
        at10.append(len(wanted & set(names[:10])) / len(wanted))
        first = next((rank for rank, name in enumerate(names, 1) if name in wanted), None)
        reciprocal.append(1 / first if first else 0.0)
    return {
        "R@5": statistics.fmean(at5),
        "R@10": statistics.fmean(at10),
        "MRR": statistics.fmean(reciprocal),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--ranker", choices=("hybrid", "bm25"), default="hybrid")
    parser.add_argument("--embedder", choices=sorted(EMBEDDERS), default="minilm")
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args()
    if args.ranker == "hybrid" and args.embedder == "none":
        parser.error("hybrid needs an embedder")
    if args.embedder == "standin":
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
        from standin_embedder import standin_server

        with standin_server() as (endpoint, _state):
            embedder = (
                f'provider = "http"\nendpoint = "{endpoint}"\nmodel = "standin-bow"\n'
                'revision = "1"\n'
            )
            measure(args, embedder)
        return
    measure(args, EMBEDDERS[args.embedder])


def measure(args: argparse.Namespace, embedder: str | None) -> None:
    notes, questions = sessions(args.data)
    base = args.keep or Path(tempfile.mkdtemp(prefix="hql-remember-"))
    direct, remembered = base / "direct", base / "remember"
    for root, on_write in ((direct, False), (remembered, True)):
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        (root / "hql.toml").write_text(toml(embedder, on_write))
    print(
        f"{len(notes)} sessions, {len(questions)} questions (categories 1-4), ranker {args.ranker}"
    )

    plain = write_directly(direct, notes)
    if embedder is not None:
        import hql
        from hql.index.producer import build_index

        started = time.perf_counter()
        build_index(hql.Vault.open(direct))
        build_seconds = time.perf_counter() - started
        build_index(hql.Vault.open(remembered))  # an empty index: embed_on_write fills it
        print(f"direct vault: index built in {build_seconds:.1f} s after the writes")
    by_remember, proposed = write_by_remember(remembered, notes)
    print(
        f"time per note: plain write {1000 * statistics.fmean(plain):.3f} ms, remember "
        f"{1000 * statistics.fmean(by_remember):.1f} ms (x{statistics.fmean(by_remember) / statistics.fmean(plain):.0f}; "
        f"median {1000 * statistics.median(by_remember):.1f} ms; reconciliation, write, catalogue, "
        f"bm25 store{' and vectors' if embedder else ''} included); {proposed} proposals of "
        "near-duplicates, each answered with create"
    )
    for label, root in (("direct", direct), ("remember", remembered)):
        found = recall(root, questions, args.ranker)
        print(f"{label:9} " + "  ".join(f"{key} {value:.3f}" for key, value in found.items()))
    if args.keep is None:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
