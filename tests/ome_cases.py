"""The OME retrieval cases (../shared/eval/ome-cases.json) as vaults of cards with recall fields.

Each corpus becomes a folder of Markdown cards whose front matter carries the fields the
case gives (summary, triggers, aliases, topics, ignore_when from OME's negative triggers,
priority from its recall policy); a case is run through `rank_prompt | relevant` and
judged by the case's own expectation.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml

_SHARED = os.environ.get("HQL_SHARED") or str(Path(__file__).resolve().parents[2] / "shared")
EVAL = Path(_SHARED) / "eval" / "ome-cases.json"
if not EVAL.exists() and not os.environ.get("HQL_SHARED"):  # a worktree beside the checkout
    EVAL = Path(__file__).resolve().parents[3] / "shared" / "eval" / "ome-cases.json"


def load() -> dict[str, Any]:
    return json.loads(EVAL.read_text(encoding="utf-8"))


def fair_cases(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The cases that hold in OME without its hand-written signal rules."""
    return [c for c in data["cases"] if c["holds_in_ome_without_card_signal_hints"] and c["expect"]]


def card_text(item: dict[str, Any]) -> str:
    fields = item.get("fields", {})
    front: dict[str, Any] = {"title": item["title"], "summary": item["text"]}
    for key in ("triggers", "topics"):
        if fields.get(key):
            front[key] = fields[key]
    if fields.get("aliases"):
        front["aliases"] = fields["aliases"]
    if fields.get("negativeTriggers"):
        front["ignore_when"] = fields["negativeTriggers"]
    if fields.get("category"):
        front["category"] = fields["category"]
    if fields.get("recallPolicy"):
        front["priority"] = fields["recallPolicy"]
    header = yaml.safe_dump(front, allow_unicode=True, sort_keys=False)
    return f"---\n{header}---\n"


def write_corpus(root: Path, corpus: dict[str, Any]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for item in corpus["items"]:
        (root / f"{item['id']}.md").write_text(card_text(item), encoding="utf-8")
    return root


def write_scoped(root: Path, corpus: dict[str, Any]) -> Path:
    """The corpus as a project and a global library beside it, by each card's `libraryScope`
    (OME's default is global): the project vault's root, whose hql.toml names the library."""
    items = corpus["items"]
    project = [item for item in items if item.get("fields", {}).get("libraryScope") == "project"]
    write_corpus(root / "global", {"items": [item for item in items if item not in project]})
    write_corpus(root / "project", {"items": project})
    (root / "project" / "hql.toml").write_text(
        '[vault]\nlibraries = [{ path = "../global", scope = "global" }]\n', encoding="utf-8"
    )
    return root / "project"


def holds(expect: dict[str, Any], names: list[str]) -> bool:
    checks = {
        "exact": lambda want: set(names) == set(want),
        "includes": lambda want: all(name in names for name in want),
        "excludes": lambda want: not any(name in names for name in want),
        "first": lambda want: bool(names) and names[0] == want,
        "none": lambda _: not names,
        "ordered": lambda want: names == want,
        "count": lambda want: len(names) == want,
    }
    return all(checks[kind](want) for kind, want in expect.items())
