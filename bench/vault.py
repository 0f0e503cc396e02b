"""Vault loading speed on synthetic vaults: first load, cached second load, growth.

    .venv/bin/python bench/vault.py            # 1k and 10k cards
    .venv/bin/python bench/vault.py --large    # also 100k cards
    .venv/bin/python bench/vault.py --dialects # only the two link dialects at 10k cards

Each vault has headers (status, owner, tags, a nested block), 3-5 links per
card (some annotated), and one relation card in twenty. The anchor is the
1k-card first load measured in the same run; other figures are printed as
ratios to it, so runs on different machines compare. Each figure is the best
of `--repeats` runs (first loads start from a deleted cache each time), in
CPU seconds of this process and its forked ones, which other work on a
shared machine disturbs far less than wall time. Reading files the OS has
cached costs little CPU, so disk latency is not measured. If `hql.run` exists,
two queries are timed too.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hql.vault import Vault  # noqa: E402

STATUSES = ("todo", "doing", "done")
OWNERS = ("ada", "grace", "edsger", "barbara")
WORDS = [
    "token",
    "session",
    "cookie",
    "header",
    "bearer",
    "scope",
    "grant",
    "client",
    "secret",
    "origin",
]


def generate(root: Path, count: int, seed: int = 7) -> None:
    chance = random.Random(seed)
    for index in range(count):
        folder = root / f"d{index % 50}"
        folder.mkdir(parents=True, exist_ok=True)
        name = f"card-{index}"
        if index % 20 == 19:
            text = _relation(chance, index, count)
        else:
            text = _concept(chance, index, count)
        (folder / f"{name}.hmd").write_text(text, encoding="utf-8")


def _concept(chance: random.Random, index: int, count: int) -> str:
    tags = ", ".join(chance.sample(WORDS, 3))
    links = []
    for _ in range(chance.randint(3, 5)):
        target = f"card-{chance.randrange(count)}"
        annotation = " {relation: mentions, weight: 2}" if chance.random() < 0.3 else ""
        links.append(f"[[{target}]]{annotation}")
    prose = " ".join(chance.choice(WORDS) for _ in range(60))
    return (
        "---\n"
        f"title: Card {index}\n"
        "metadata:\n"
        f"  status: {chance.choice(STATUSES)}\n"
        f"  owner: {chance.choice(OWNERS)}\n"
        f"  tags: [{tags}]\n"
        "  review:\n"
        f"    due: 2026-0{1 + index % 9}-1{index % 9}\n"
        f"    score: {index % 100}\n"
        "---\n"
        f"# Card {index}\n\n{prose}\n\nSee {' and '.join(links)}.\n"
    )


def _relation(chance: random.Random, index: int, count: int) -> str:
    source, target = chance.randrange(count), chance.randrange(count)
    return (
        "---\n"
        f"title: Card {source} relates to card {target}\n"
        "metadata:\n"
        "  knowledge:\n"
        "    type: Relation\n"
        "    relation:\n"
        f"      source: card-{source}\n"
        f"      target: card-{target}\n"
        "---\n"
        f"# Relation {index}\n"
    )


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    """CPU seconds of this process and of the processes it forked and waited for (a large
    first load shares its parsing with one): on a shared machine, wall time mostly measures
    the neighbours."""
    started = _cpu_seconds()
    result = action()
    return _cpu_seconds() - started, result


def _cpu_seconds() -> float:
    waited = os.times()  # children's CPU in clock ticks; this process's to the nanosecond
    return time.process_time() + waited.children_user + waited.children_system


def best_of(
    repeats: int, action: Callable[[], Any], before: Callable[[], Any] = lambda: None
) -> tuple[float, Any]:
    """The fastest of several runs: other work on a shared machine only ever adds time."""
    best: tuple[float, Any] | None = None
    for _ in range(repeats):
        before()
        result = timed(action)
        if best is None or result[0] < best[0]:
            best = result
        del result  # keep one result alive, not all: memory held would slow later runs
    assert best is not None
    return best


def measure(count: int, anchor: float | None, repeats: int) -> float:
    with tempfile.TemporaryDirectory(prefix="hql-bench-") as directory:
        root = Path(directory)
        generate(root, count)
        state = root / ".hql"
        first, vault = best_of(
            repeats, lambda: Vault.open(root), lambda: shutil.rmtree(state, ignore_errors=True)
        )
        second, again = best_of(repeats, lambda: Vault.open(root))
        assert len(vault.cards) == len(again.cards) == count
        edges_time, _ = timed(lambda: again.edges)  # built on first use
        base = anchor if anchor is not None else first
        print(
            f"{count:>7} cards  first {first:7.3f} s ({first / count * 1e6:6.1f} us/card, "
            f"x{first / base:6.2f} anchor)  cached {second:7.3f} s "
            f"({second / count * 1e6:6.1f} us/card)  cached/first {second / first:5.1%}  "
            f"edges {len(vault.edges)} (built on first use in {edges_time:.3f} s)  "
            f"warnings {len(vault.warnings)}"
        )
        _queries(again)
        return first


def _queries(vault: Vault) -> None:
    try:
        import hql

        run = getattr(hql, "run", None)
    except Exception as error:  # noqa: BLE001 - the language may be mid-change; loads still count
        print(f"          queries skipped: importing hql failed ({error})")
        return
    if run is None:
        return
    for source in (
        'cards | filter(c => c.metadata.status == "todo") | count',
        "cards | take(10) | expand(depth = 2) | graph",
    ):
        try:
            seconds, _ = best_of(3, lambda source=source: run(source, vault=vault))
        except Exception as error:  # noqa: BLE001
            print(f"          query failed: {source}: {error}")
            continue
        print(f"          {seconds:7.3f} s  {source}")


def compare_dialects(count: int, repeats: int) -> None:
    """Load cost per card of the two dialects on the same files, against reading them.

    Three figures on one vault, in the same run: reading every file (walk and
    read bytes, the floor any loader pays), a first load read by the
    reference dialect, and a first load read by the Obsidian dialect (links,
    tags, tasks, headings, code exclusion, and resolving every link for the
    unresolved count). Parsing alone is compared too: the reference's
    document parser against the Obsidian note parser over the same texts.
    """
    from hql.vault import document, links

    with tempfile.TemporaryDirectory(prefix="hql-bench-") as directory:
        root = Path(directory)
        generate(root, count)
        state = root / ".hql"
        config = root / "hql.toml"
        files = sorted(root.rglob("*.hmd"))

        def read_files() -> int:
            return sum(len(path.read_bytes()) for path in files)

        def load(dialect: str) -> Callable[[], Any]:
            def run() -> Any:
                config.write_text(f'[vault]\ndialect = "{dialect}"\n')
                return Vault.open(root)

            return run

        reading, _ = best_of(repeats, read_files)
        clear = lambda: shutil.rmtree(state, ignore_errors=True)  # noqa: E731
        reference, ref_vault = best_of(repeats, load("reference"), clear)
        obsidian, obs_vault = best_of(repeats, load("obsidian"), clear)
        assert len(ref_vault.cards) == len(obs_vault.cards) == count
        texts = [path.read_text(encoding="utf-8") for path in files]
        parse_ref, _ = best_of(repeats, lambda: [document.parse(text) for text in texts])
        parse_obs, _ = best_of(repeats, lambda: [links.parse_note(text) for text in texts])
        per = 1e6 / count
        print(
            f"{count:>7} cards  reading files {reading * per:6.1f} us/card  "
            f"first load: reference {reference * per:6.1f} us/card (x{reference / reading:5.2f} "
            f"reading), obsidian {obsidian * per:6.1f} us/card (x{obsidian / reading:5.2f} "
            f"reading)  obsidian/reference x{obsidian / reference:5.3f}"
        )
        print(
            f"          parsing only: reference parser {parse_ref * per:6.1f} us/card, "
            f"obsidian parser {parse_obs * per:6.1f} us/card (x{parse_obs / parse_ref:5.3f})"
        )
        print("goal: obsidian/reference first load <= x1.25 at 10k cards")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", action="store_true", help="also measure 100k cards")
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure; the best counts")
    parser.add_argument(
        "--dialects", action="store_true", help="only compare the two link dialects at 10k cards"
    )
    options = parser.parse_args()
    if options.dialects:
        compare_dialects(10_000, options.repeats)
        return
    sizes = [1_000, 10_000] + ([100_000] if options.large else [])
    anchor = None
    for size in sizes:
        first = measure(size, anchor, options.repeats if size <= 10_000 else 1)
        anchor = anchor if anchor is not None else first
    print("goals: 10k first load <= 2 s; cached/first <= 25%; cost per card flat as size grows")
    compare_dialects(10_000, options.repeats)


if __name__ == "__main__":
    main()
