"""A tiny card reader for the search tests (the real loader lives in hql.vault).

It follows the retrieval text contract of reference §12.2 step 1: title, then the
strings of the authored header in sorted-key order depth-first (skipping the
derived keys), then the raw body, joined by single spaces.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

FIXTURES = Path(__file__).parent / "fixtures"
_DERIVED = {"name", "path", "format", "title"}


@dataclass(frozen=True)
class Card:
    name: str
    title: str
    text: str
    digest: str


def make_card(name: str, title: str, body: str, header: dict[str, Any] | None = None) -> Card:
    parts = [title, *_header_strings(header or {}, top=True), body]
    text = " ".join(parts)
    return Card(name, title, text, hashlib.sha256(text.encode()).hexdigest())


def load_cards(root: Path) -> list[Card]:
    cards = []
    for path in sorted(root.rglob("*")):
        if path.suffix in {".md", ".hmd"} and ".hql" not in path.parts:
            cards.append(_read_card(path))
    return sorted(cards, key=lambda card: card.name)


def _read_card(path: Path) -> Card:
    source = path.read_text(encoding="utf-8")
    header: dict[str, Any] = {}
    body = source
    match = re.match(r"---\n(.*?)\n---\n?", source, re.S)
    if match:
        header = yaml.safe_load(match.group(1)) or {}
        body = source[match.end() :]
    heading = re.search(r"^# (.+)$", body, re.M)
    title = header.get("title")
    if not isinstance(title, str):
        title = heading.group(1).strip() if heading else path.stem
    return make_card(path.stem, title, body, header)


def _header_strings(value: Any, top: bool = False) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        found = []
        for key in sorted(value):
            if not (top and key in _DERIVED):
                found.extend(_header_strings(value[key]))
        return found
    if isinstance(value, list):
        return [text for item in value for text in _header_strings(item)]
    return []


def test_text_contract_puts_title_header_strings_and_body_in_order() -> None:
    card = make_card("x", "T", "body", {"title": "T", "b": ["two", 3], "a": {"z": "one"}})
    assert card.text == "T one two body"


def test_fixture_vault_reads_six_cards() -> None:
    names = [card.name for card in load_cards(FIXTURES / "vault")]
    assert names == [
        "bearer-tokens",
        "broken-relation",
        "http-headers",
        "oauth",
        "oauth-defines-bearer",
        "sessions",
    ]
