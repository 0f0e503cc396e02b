"""Every `.base` file of a vault run by `hql base`, its rows compared with an independent evaluation.

    .venv/bin/python bench/bases_check.py VAULT [--this NOTE]

For each `.base` file below VAULT and each of its views, the notes HQL's program
keeps (in order, within the view's limit) are compared with those
tests/bases_evaluator.py keeps (Python over the files, no code shared with hql/).
Prints one line per view and a count of agreeing views.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from bases_compare import hql_rows  # noqa: E402
from bases_evaluator import rows as evaluated_rows  # noqa: E402

import hql  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--this", default=None, help="the note the bases are shown for")
    args = parser.parse_args()
    vault = hql.Vault.open(args.vault)
    agree = total = 0
    for path in sorted(args.vault.rglob("*.base")):
        ours = hql_rows(vault, path, args.this)
        theirs = evaluated_rows(args.vault, path, args.this)
        for name, kept in theirs.items():
            total += 1
            same = ours.get(name) == kept
            agree += same
            mark = "same" if same else "DIFFERENT"
            print(f"{mark:9} {path.relative_to(args.vault)} / {name}: {len(kept)} rows")
            if not same:
                print(f"          hql:       {ours.get(name)}")
                print(f"          evaluated: {kept}")
    print(f"{agree} of {total} views agree")


if __name__ == "__main__":
    main()
