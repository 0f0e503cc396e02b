"""Link recall and precision of HQL's reading of Obsidian vaults, against an independent one.

    .venv/bin/python bench/obsidian_links.py VAULT [VAULT ...]

For each vault, opened as given (no `.obsidian/` or hql.toml is added), the
note links HQL's edges hold are compared with those tests/obsidian_resolver.py
reads from the files (code shared with hql/: none): recall is the share of the
resolver's links HQL has, precision the share of HQL's links the resolver has.
The dialect HQL chose and the first few differences are printed too.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from obsidian_resolver import note_links  # noqa: E402

from hql.vault import Vault  # noqa: E402


def hql_links(root: Path) -> tuple[str, set[tuple[str, str]]]:
    vault = Vault.open(root, use_cache=False)
    relpath = {card.name: card.relpath for card in vault.cards}
    links = set()
    for edge in vault.edges:
        source, target = relpath.get(edge.source), relpath.get(edge.target)
        if source is not None and target is not None and source != target:
            links.add((source, target))
    return vault.dialect, links


def measure(root: Path) -> tuple[str, float, float, set[tuple[str, str]], set[tuple[str, str]]]:
    truth = note_links(root)
    print(f"{root}: {len(truth)} note links by the independent resolver")
    dialect, found = hql_links(root)
    both = truth & found
    recall = len(both) / len(truth) if truth else 1.0
    precision = len(both) / len(found) if found else 1.0
    return dialect, recall, precision, truth - found, found - truth


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vaults", nargs="+", type=Path)
    parser.add_argument("--show", type=int, default=5, help="differences shown per vault")
    args = parser.parse_args()
    for root in args.vaults:
        dialect, recall, precision, missed, extra = measure(root)
        print(f"{root}: dialect {dialect}, recall {recall:.3f}, precision {precision:.3f}")
        for source, target in sorted(missed)[: args.show]:
            print(f"  missed  {source} -> {target}")
        for source, target in sorted(extra)[: args.show]:
            print(f"  extra   {source} -> {target}")


if __name__ == "__main__":
    main()
