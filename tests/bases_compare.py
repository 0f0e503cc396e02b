"""The rows `hql base` keeps per view, beside tests/bases_evaluator.py's, for one `.base` file."""

from __future__ import annotations

from pathlib import Path

from bases_evaluator import rows as evaluated_rows

import hql
from hql.bases.translate import read_base


def hql_rows(vault: hql.Vault, base_path: Path, this: str | None = None) -> dict[str, list[str]]:
    """Per view, the relpaths of the notes its program keeps (in its order, within its limit)."""
    text = base_path.read_text(encoding="utf-8")
    relpath = base_path.resolve().relative_to(Path(vault.root).resolve()).as_posix()
    base = read_base(str(base_path), text, this, relpath)
    found = {}
    for view in base.views:
        kept = view.program.text.split("  | map(c => {")[0] + "  | map(c => c.relpath)\n"
        outcome = hql.run(kept, vault=vault)
        assert not outcome.failed, outcome.render_reports()
        found[view.name] = list(outcome.value)
    return found


def differences(vault: hql.Vault, base_path: Path, this: str | None = None) -> list[str]:
    """What differs between the two, view by view (nothing when they agree)."""
    ours = hql_rows(vault, base_path, this)
    theirs = evaluated_rows(Path(vault.root), base_path, this)
    said = []
    for name in theirs:
        if ours.get(name) != theirs[name]:
            said.append(
                f"{base_path.name} / {name}: hql {ours.get(name)} != evaluated {theirs[name]}"
            )
    return said
