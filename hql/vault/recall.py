"""Cards that say when they apply: the recall fields of a card's front matter (memory.md §2).

Every field is optional. A vault whose cards use other names (OME's `criteria.use_when`,
`recall.triggers`) maps them in `[context.fields]`: each recall field names one key or a
list of keys, a dotted key reaching into nested maps. Both dialects read front matter
the same way, so the fields are the same in a reference vault and an Obsidian one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from hql import messages
from hql.record import record
from hql.vault.model import retrieval_text

PRIORITIES = ("must", "should", "may")
STATUSES = ("active", "draft", "archived", "superseded")
DEFAULT_PRIORITY = "should"
DEFAULT_STATUS = "active"
# The phrase fields, in the order the context block shows them.
PHRASE_FIELDS = ("triggers", "use_when", "ignore_when", "aliases", "topics")
FIELD_NAMES = ("summary", *PHRASE_FIELDS, "priority", "status")
# Keys read when `[context.fields]` names none: the field's own name, and the spellings
# other tools write.
DEFAULT_KEYS: dict[str, tuple[str, ...]] = {
    "summary": ("summary",),
    "triggers": ("triggers",),
    "use_when": ("use_when",),
    "ignore_when": ("ignore_when",),
    "aliases": ("aliases", "alias"),
    "topics": ("topics",),
    "priority": ("priority",),
    "status": ("status",),
}

Mapping_ = dict[str, tuple[str, ...]]


@record
class RecallFields:
    """A card's recall fields; `aliases` flattened, `aliases_by_language` as written."""

    summary: str | None = None
    triggers: tuple[str, ...] = ()
    use_when: tuple[str, ...] = ()
    ignore_when: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    aliases_by_language: tuple[tuple[str, tuple[str, ...]], ...] = ()
    topics: tuple[str, ...] = ()
    priority: str = DEFAULT_PRIORITY
    status: str = DEFAULT_STATUS

    @property
    def declared(self) -> bool:
        """Whether the card declares any recall field beyond Obsidian's aliases."""
        return bool(
            self.summary
            or self.triggers
            or self.use_when
            or self.ignore_when
            or self.topics
            or self.aliases_by_language
            or self.priority != DEFAULT_PRIORITY
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "triggers": list(self.triggers),
            "use_when": list(self.use_when),
            "ignore_when": list(self.ignore_when),
            "aliases": list(self.aliases),
            "aliases_by_language": {lang: list(words) for lang, words in self.aliases_by_language},
            "topics": list(self.topics),
            "priority": self.priority,
            "status": self.status,
        }


def field_mapping(section: Any) -> tuple[Mapping_, list[str]]:
    """The keys each recall field reads, from a `[context.fields]` table, and what was wrong
    with it (each problem a message; the entry is left at its default)."""
    mapping: Mapping_ = dict(DEFAULT_KEYS)
    problems: list[str] = []
    if section is None:
        return mapping, problems
    if not isinstance(section, Mapping):
        return mapping, [messages.context_fields_not_table()]
    for name, keys in section.items():
        if name not in DEFAULT_KEYS:
            problems.append(messages.context_field_unknown(str(name), FIELD_NAMES))
            continue
        if isinstance(keys, str):
            keys = [keys]
        if not (isinstance(keys, list) and keys and all(isinstance(k, str) and k for k in keys)):
            problems.append(messages.context_field_keys(str(name)))
            continue
        mapping[name] = tuple(keys)
    return mapping, problems


def recall_fields(card: Any, mapping: Mapping_ | None = None) -> RecallFields:
    """A card's recall fields, read from its front matter through `mapping`."""
    header = getattr(card, "authored", None)
    if not isinstance(header, Mapping) or not header:
        return _NONE
    keys = mapping or DEFAULT_KEYS

    def found(name: str) -> Any:
        for key in keys.get(name, ()):
            value = _lookup(header, key)
            if value is not None:
                return value
        return None

    summary = found("summary")
    aliases, by_language = _aliases(found("aliases"))
    return RecallFields(
        summary=" ".join(_phrases(summary)) or None if summary is not None else None,
        triggers=_phrases(found("triggers")),
        use_when=_phrases(found("use_when")),
        ignore_when=_phrases(found("ignore_when")),
        aliases=aliases,
        aliases_by_language=by_language,
        topics=_phrases(found("topics")),
        priority=_choice(found("priority"), PRIORITIES, DEFAULT_PRIORITY),
        status=_choice(found("status"), STATUSES, DEFAULT_STATUS),
    )


_NONE = RecallFields()

# The recall fields ranking weighs as fields of their own; `ignore_when` only rejects a
# card, so its words are never evidence for it.
SEARCH_FIELDS = ("summary", "triggers", "use_when", "aliases", "topics")


def field_texts(card: Any, mapping: Mapping_ | None = None) -> tuple[str, dict[str, str]] | None:
    """A card's text split for field-aware ranking: its retrieval text without the recall
    fields' keys, and the text of each recall field it has (SEARCH_FIELDS); None when the
    card declares no recall field, so its retrieval text is ranked whole, as it always was."""
    fields = recall_fields(card, mapping)
    if not fields.declared:
        return None
    keys = mapping or DEFAULT_KEYS
    removed = [key for name in ("summary", *PHRASE_FIELDS) for key in keys.get(name, ())]
    body = retrieval_text(card.title, _without(card.authored, removed), card.body)
    texts = {
        "summary": fields.summary or "",
        "triggers": "\n".join(fields.triggers),
        "use_when": "\n".join(fields.use_when),
        "aliases": "\n".join(fields.aliases),
        "topics": "\n".join(fields.topics),
    }
    return body, {name: text for name, text in texts.items() if text}


def _without(header: Mapping[str, Any], keys: list[str]) -> dict[str, Any]:
    """The header without these keys, a dotted key reaching into nested maps as `_lookup`
    reads it (the maps along its path are copied, never changed)."""
    kept = dict(header)
    for key in keys:
        kept = _without_key(kept, key)
    return kept


def _without_key(header: Mapping[str, Any], key: str) -> dict[str, Any]:
    if key in header:
        return {name: value for name, value in header.items() if name != key}
    first, dot, rest = key.partition(".")
    inner = header.get(first)
    if dot and isinstance(inner, Mapping):
        return {**header, first: _without_key(inner, rest)}
    return dict(header)


def _lookup(header: Mapping[str, Any], key: str) -> Any:
    """`header[key]`, a dotted key reaching into nested maps (a key holding dots wins)."""
    if key in header:
        return header[key]
    value: Any = header
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _phrases(value: Any) -> tuple[str, ...]:
    """The non-empty strings of a value (a string, or a list of them; numbers as written)."""
    if value is None or isinstance(value, bool):
        return ()
    if isinstance(value, str):
        return (value.strip(),) if value.strip() else ()
    if isinstance(value, int | float):
        return (str(value),)
    if isinstance(value, list | tuple):
        return tuple(dict.fromkeys(p for item in value for p in _phrases(item)))
    return ()


def asked_statuses(asked: Iterable[str] | None) -> tuple[str, ...]:
    """The statuses a caller asks a recalled card to have (`active` alone when None).

    Raises ValueError with the report's text for an unknown status or an empty list."""
    if asked is None:
        return (DEFAULT_STATUS,)
    wanted = tuple(dict.fromkeys(str(status).strip().casefold() for status in asked))
    unknown = [status for status in wanted if status not in STATUSES]
    if unknown:
        raise ValueError(messages.statuses_unknown(unknown, STATUSES))
    if not wanted:
        raise ValueError(messages.statuses_empty())
    return wanted


def _aliases(value: Any) -> tuple[tuple[str, ...], tuple[tuple[str, tuple[str, ...]], ...]]:
    """Aliases flattened, and per language when written as a map of language to phrases."""
    if isinstance(value, Mapping):
        by_language = tuple(
            (str(language), phrases)
            for language, words in value.items()
            if (phrases := _phrases(words))
        )
        flat = tuple(dict.fromkeys(p for _, phrases in by_language for p in phrases))
        return flat, by_language
    return _phrases(value), ()


def _choice(value: Any, allowed: tuple[str, ...], default: str) -> str:
    """A value among `allowed` (case folded); anything else is the default. A vault's own
    workflow words (`status: todo`) are not recall statuses, so they read as the default."""
    if isinstance(value, str) and value.strip().casefold() in allowed:
        return value.strip().casefold()
    return default


__all__ = [
    "DEFAULT_KEYS",
    "FIELD_NAMES",
    "PHRASE_FIELDS",
    "PRIORITIES",
    "SEARCH_FIELDS",
    "STATUSES",
    "RecallFields",
    "asked_statuses",
    "field_mapping",
    "field_texts",
    "recall_fields",
]
