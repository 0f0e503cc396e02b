"""`[memory]` in hql.toml: where new notes go, when `remember` proposes, concepts to import.

    [memory]
    folder = "memory"             # new notes (default: the vault's root)
    similar_threshold = 0.6       # remember: near-duplicates at or above this are proposed
                                  # (default: hql.context.similarity.DEFAULT_THRESHOLD)
    concepts = "concepts.jsonl"   # recall: concepts listed outside the vault's cards

An entry of the wrong shape means its default, and `recall` (an evaluation warning) and
`remember` (its answer's `warnings`, printed on stderr by `hql note`) say so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hql import messages


@dataclass(frozen=True)
class MemoryConfig:
    folder: str = ""
    similar_threshold: float | None = None  # None: the similarity module's default
    concepts: str | None = None
    warnings: tuple[str, ...] = field(default=())


def memory_config(root: Path, raw: dict[str, Any] | None = None) -> MemoryConfig:
    """The `[memory]` table of the vault's hql.toml (`raw`: the parsed file, when at hand)."""
    if raw is None:
        from hql.vault.config import load_config

        raw = load_config(root)[0].raw
    table = raw.get("memory", {})
    if not isinstance(table, dict):
        return MemoryConfig(warnings=(messages.memory_config_bad("memory", "a table"),))
    warnings: list[str] = []
    folder = table.get("folder", "")
    if not isinstance(folder, str) or folder.startswith("/") or ".." in folder.split("/"):
        warnings.append(messages.memory_config_bad("memory.folder", "a folder inside the vault"))
        folder = ""
    threshold = table.get("similar_threshold")
    if threshold is not None and (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not 0 < threshold <= 1
    ):
        warnings.append(
            messages.memory_config_bad("memory.similar_threshold", "a number in (0, 1]")
        )
        threshold = None
    concepts = table.get("concepts")
    if concepts is not None and not isinstance(concepts, str):
        warnings.append(messages.memory_config_bad("memory.concepts", "a file name"))
        concepts = None
    similar = float(threshold) if threshold is not None else None
    return MemoryConfig(folder.strip("/"), similar, concepts, tuple(warnings))
