"""`hql index status`: how much of the vault the semantic index covers, by folder.

A card is `embedded` when the store holds vectors for its current digest, `stale`
when it holds vectors of an older text, `missing` when it holds none; `extra`
counts stored cards no longer in the vault.
"""

from __future__ import annotations

from typing import Any


def coverage(vault: Any) -> dict[str, Any]:
    from hql.index.config import load_semantics_config
    from hql.index.reader import raw_config
    from hql.index.stores import open_store

    config = load_semantics_config(raw_config(vault))
    store = open_store(vault, config)
    stored = store.digests()
    folders: dict[str, dict[str, Any]] = {}
    totals = {"cards": 0, "embedded": 0, "stale": 0, "missing": 0}
    names = set()
    for card in vault.cards:
        names.add(card.name)
        state = stored.get(card.name)
        kind = "missing" if state is None else "embedded" if state == card.digest else "stale"
        row = folders.setdefault(card.folder, {"cards": 0, "embedded": 0, "stale": 0, "missing": 0})
        for counts in (row, totals):
            counts["cards"] += 1
            counts[kind] += 1
        if kind != "embedded":
            row.setdefault(f"{kind}_cards", []).append(card.name)
    return {
        "index": store.location,
        "store": config.store,
        "model": store.model.id,
        **totals,
        "extra": len(set(stored) - names),
        "embed_on_write": config.embed_on_write,
        "folders": dict(sorted(folders.items())),
    }


def format_coverage(found: dict[str, Any]) -> str:
    lines = [
        f"index     {found['index']} ({found['store']}, {found['model']})",
        f"cards     {found['cards']}: {found['embedded']} embedded, {found['stale']} stale, "
        f"{found['missing']} missing; {found['extra']} in the index only",
        f"embed_on_write  {'on' if found['embed_on_write'] else 'off'}",
        "",
        f"{'folder':<32} {'cards':>6} {'embedded':>9} {'stale':>6} {'missing':>8}",
    ]
    for folder, row in found["folders"].items():
        shown = folder or "(root)"
        lines.append(
            f"{shown:<32} {row['cards']:>6} {row['embedded']:>9} {row['stale']:>6} {row['missing']:>8}"
        )
    return "\n".join(lines)
