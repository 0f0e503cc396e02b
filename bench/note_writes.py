"""What one note write through `hql.notes` costs on a vault of N cards, against writing the
same bytes without the refresh, and what the first `bm25` question after a run of writes
costs, against the same question with no write before it.

    nice .venv/bin/python bench/note_writes.py [--cards 5000] [--writes 20]
        [--keep /tmp/hql-note-writes]

The vault is the first N SciFact abstracts, one note each (no semantic index, so
nothing is embedded). After a warm-up write, each round appends a sentence to another
note through `hql.notes` (`append`: find the note, write it atomically, bring the
catalogue and the bm25 store up to date) and times the whole call.

Then, in a fresh process each (a new agent's first question): a `bm25` question asked
after those writes, against the same question asked again with no write since. Both
answers must name the last note written first (its sentence holds a word of this run's
own).

Last, the anchors, timed on other notes in the same run: a note read and written again
with a line more, atomically and checked against its digest as `hql.notes` writes
(`hql.files.write_document`, nothing found, nothing refreshed), and a plain
`open(path, "a").write(...)`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CORPUS = Path("/work/shared/datasets/scifact/corpus.jsonl")
QUESTION = """
import sys, time
import hql
started = time.perf_counter()
vault = hql.Vault.open(sys.argv[1])
found = list(hql.run(
    "import bm25\\ncards | bm25($q) | take(3) | map(h => h.card.name)", vault=vault,
    params={"q": sys.argv[2]},
).value)
print(time.perf_counter() - started, found[0])
"""


def make_vault(root: Path, cards: int) -> None:
    (root / "Papers").mkdir(parents=True, exist_ok=True)
    with CORPUS.open() as corpus:
        for number, line in enumerate(corpus):
            if number >= cards:
                break
            paper = json.loads(line)
            title = paper["title"].replace('"', "'")
            (root / "Papers" / f"paper {paper['_id']}.md").write_text(
                f'---\ntitle: "{title}"\nsource: scifact\n---\n{paper["text"]}\n'
            )


def ask(root: Path, word: str) -> tuple[float, str]:
    done = subprocess.run(
        [sys.executable, "-c", QUESTION, str(root), word],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )
    seconds, name = done.stdout.split(" ", 1)
    return float(seconds), name.strip()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cards", type=int, default=5000)
    parser.add_argument("--writes", type=int, default=20)
    parser.add_argument("--keep", type=Path, default=Path("/tmp/hql-note-writes"))
    args = parser.parse_args()

    import hql
    import hql.notes
    from hql import files

    root = args.keep / f"scifact-{args.cards}"
    if not root.exists():
        make_vault(root, args.cards)
    vault = hql.Vault.open(root)
    names = sorted(card.name for card in vault.cards)
    paths = {card.name: root / card.relpath for card in vault.cards}
    run_word = "".join(chr(ord("a") + int(digit)) for digit in str(time.time_ns())[-9:])
    ask(root, "warm")  # the bm25 store and word index, built once
    notes = hql.notes.open(root)
    notes.append(names[0], "Warm-up.")  # not timed
    writes, unrefreshed, plain = [], [], []
    step = max(1, len(names) // (2 * args.writes + 1))
    for number in range(args.writes):
        name = names[(2 * number + 1) * step]
        started = time.perf_counter()
        notes.append(name, f"Written {number}: {run_word}{number}.")
        writes.append(time.perf_counter() - started)
    last = args.writes - 1
    after, found = ask(root, f"{run_word}{last}")
    again, found_again = ask(root, f"{run_word}{last}")
    assert found == found_again == names[(2 * last + 1) * step], (found, found_again)
    # The anchors, on other notes: each leaves its note changed behind the catalogue's back
    # (the next load reads it again), which would cost the refreshed writes a dialect scan.
    for number in range(args.writes):
        name = names[(2 * number + 2) * step]
        relpath = paths[name].relative_to(root).as_posix()
        started = time.perf_counter()
        data = paths[name].read_bytes()
        digest = files.document_digest(data)
        files.write_document(root, relpath, data + b"\nAtomic.\n", base_digest=digest)
        unrefreshed.append(time.perf_counter() - started)
        started = time.perf_counter()
        with paths[name].open("a") as handle:
            handle.write(f"\nPlain {number}.\n")
        plain.append(time.perf_counter() - started)
    write = statistics.median(writes)
    print(
        f"{args.cards} cards, median over {args.writes} appends through hql.notes: {1000 * write:.1f} ms"
    )
    print(f"  the same bytes written atomically alone {1000 * statistics.median(unrefreshed):.1f} ms: "
          f"x{write / statistics.median(unrefreshed):.1f}")  # fmt: skip
    print(f"  a plain file append {1000 * statistics.median(plain):.2f} ms: "
          f"x{write / statistics.median(plain):.0f}")  # fmt: skip
    print(f"first bm25 question in a new process after the {args.writes} writes: "
          f"{1000 * after:.0f} ms; asked again, no write since {1000 * again:.0f} ms: "
          f"x{after / again:.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
