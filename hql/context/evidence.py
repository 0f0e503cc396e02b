"""A bounded evidence score per card: how strongly a prompt calls for it, 0 to 100.

The score is made of named channels, each worth a stated number of points, and is worked
out from the prompt and the card alone: never from collection statistics (idf, average
lengths), so adding unrelated cards does not move it. Gates reject a card whatever its
points: an `ignore_when` phrase found exactly (normalised) in the prompt, or a status
the caller did not ask for.

Channels (points, capped at 100 in all):
- `trigger`: a `triggers` phrase found whole in the prompt (TRIGGER, +TRIGGER_MORE each more);
- `alias`: an alias or the title found whole in the prompt (ALIAS);
- `coverage`: how much of the card's strong fields (title, triggers, aliases, summary,
  use_when, topics) the prompt's words cover, and how many prompt words the card holds;
- `technical`: the prompt's commands, paths and code symbols found in the card as whole
  tokens (`github` is not `git`);
- `cjk`: the longest run of Chinese, Japanese or Korean characters the prompt shares with
  the card's strong fields (bigrams are how such text is read without a dictionary);
- `priority`: `must` adds, `may` takes away, only for a card with evidence of its own.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hql import messages
from hql.context.envelope import Envelope, read_envelope
from hql.context.fields import RecallFields
from hql.record import record

DEFAULT_EVIDENCE = 40
MAX_SCORE = 100
TRIGGER = 60
TRIGGER_MORE = 10
TRIGGER_MAX = 80
ALIAS = 50
TITLE_COVERAGE = 35
PHRASE_COVERAGE = 35
SUMMARY_COVERAGE = 25
PROMPT_WORD = 6
PROMPT_WORDS_MAX = 30
BODY_WORD = 2
BODY_WORDS_MAX = 10
COVERAGE_MAX = 60
TECHNICAL = 30
TECHNICAL_MORE = 10
TECHNICAL_MAX = 45
CJK_PER_CHAR = 10
CJK_MAX = 45
MUST = 10
MAY = -10

_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")
_NON_WORD = re.compile(r"[^\w]+")


@record
class Evidence:
    """A card's evidence for a prompt: its score, the points per channel, and the gate
    that rejected it (None: none did)."""

    score: int
    channels: dict[str, int]
    gate: str | None = None

    def as_tree(self) -> dict[str, Any]:
        return {"score": self.score, "channels": dict(self.channels), "gate": self.gate}

    @classmethod
    def from_tree(cls, tree: Mapping[str, Any]) -> Evidence:
        return cls(int(tree["score"]), dict(tree.get("channels", {})), tree.get("gate"))


def evidence_of(hit: Any) -> Evidence | None:
    """The evidence recorded on a hit's detail, if any."""
    detail = getattr(hit, "detail", None)
    if not detail:
        return None
    tree = detail.get("evidence") if isinstance(detail, Mapping) else None
    return Evidence.from_tree(tree) if isinstance(tree, Mapping) else None


# --- the prompt, read once ----------------------------------------------------------------


class PromptView:
    """What every card's evidence is measured against: the prompt read once."""

    def __init__(self, prompt: str, analyzer: Any, envelope: Envelope | None = None) -> None:
        from hql.search.relevance import affirmed_text

        self.prompt = prompt
        self.analyzer = analyzer
        self.envelope = envelope or read_envelope(prompt, analyzer)
        self.whole = phrase_form(prompt)
        affirmed = affirmed_text(prompt)
        self.affirmed = phrase_form(affirmed)
        terms = analyzer.analyze(affirmed).terms
        self.words = frozenset(t for t in terms if ":" not in t)
        self.prefixes = frozenset(t for t in terms if t.startswith("pref:"))
        self.cjk_runs = tuple(_CJK.findall(self.affirmed))
        self.technical = tuple(
            dict.fromkeys(token.casefold() for token in self.envelope.technical if len(token) > 1)
        )


@functools.lru_cache(maxsize=1 << 14)
def phrase_form(text: str) -> str:
    """A text as phrases are compared: normalised (case, width, accents), words joined by
    one space."""
    from hql.text.analyzer import normalize

    return " ".join(_NON_WORD.sub(" ", normalize(text)).split())


def contains_phrase(text_form: str, phrase: str) -> bool:
    """Whether a phrase occurs in a text (both in `phrase_form`), whole at a Latin edge."""
    if not phrase:
        return False
    start = text_form.find(phrase)
    while start >= 0:
        end = start + len(phrase)
        left_ok = start == 0 or not (_word_char(phrase[0]) and _word_char(text_form[start - 1]))
        right_ok = end == len(text_form) or not (
            _word_char(phrase[-1]) and _word_char(text_form[end])
        )
        if left_ok and right_ok:
            return True
        start = text_form.find(phrase, start + 1)
    return False


def _word_char(char: str) -> bool:
    """A character that joins a Latin-like word (CJK characters stand alone)."""
    return char.isalnum() and not _CJK.match(char)


# --- a card's evidence --------------------------------------------------------------------


def evidence(
    view: PromptView,
    card: Any,
    fields: RecallFields,
    statuses: Iterable[str] = ("active",),
) -> Evidence:
    """The evidence a prompt gives for a card, with the gate that rejects it if any."""
    channels: dict[str, int] = {}
    gate = _gate(view, fields, statuses)
    title = getattr(card, "title", "") or ""
    strong = _strong_texts(title, fields)

    triggers = [t for t in fields.triggers if contains_phrase(view.affirmed, phrase_form(t))]
    if triggers:
        channels["trigger"] = min(TRIGGER_MAX, TRIGGER + TRIGGER_MORE * (len(triggers) - 1))
    named = [a for a in (*fields.aliases, title) if _named(view, a)]
    if named:
        channels["alias"] = ALIAS
    coverage = _coverage(view, title, fields, strong, getattr(card, "body", "") or "")
    if coverage:
        channels["coverage"] = coverage
    technical = _technical(view, card, fields)
    if technical:
        channels["technical"] = technical
    cjk = _cjk(view, strong)
    if cjk:
        channels["cjk"] = cjk
    base = sum(channels.values())
    if base > 0 and fields.priority == "must":
        channels["priority"] = MUST
    elif base > 0 and fields.priority == "may":
        channels["priority"] = MAY
    score = max(0, min(MAX_SCORE, sum(channels.values())))
    return Evidence(score, channels, gate)


def _gate(view: PromptView, fields: RecallFields, statuses: Iterable[str]) -> str | None:
    if fields.status not in statuses:
        return messages.evidence_gate_status(fields.status)
    for phrase in fields.ignore_when:
        if contains_phrase(view.whole, phrase_form(phrase)):
            return messages.evidence_gate_ignore_when(phrase)
    return None


def _named(view: PromptView, name: str) -> bool:
    """A name found whole in the prompt; one short word alone is not a naming."""
    form = phrase_form(name)
    if len(form) < 4 and not _CJK.search(form):
        return False
    return contains_phrase(view.affirmed, form)


def _strong_texts(title: str, fields: RecallFields) -> list[str]:
    return [
        title,
        *fields.triggers,
        *fields.aliases,
        *_summary(fields),
        *fields.use_when,
        *fields.topics,
    ]


def _summary(fields: RecallFields) -> tuple[str, ...]:
    return (fields.summary,) if fields.summary else ()


def _words(analyzer: Any, text: str) -> frozenset[str]:
    return frozenset(t for t in analyzer.analyze(text).terms if ":" not in t)


def _share(view: PromptView, text: str) -> float:
    """How much of a text's words the prompt holds (a shared 5-letter prefix counts half)."""
    analysis = view.analyzer.analyze(text)
    words = [t for t in dict.fromkeys(analysis.terms) if ":" not in t]
    if not words:
        return 0.0
    got = 0.0
    for word in words:
        if word in view.words:
            got += 1.0
        elif len(word) >= 5 and f"pref:{word[:5]}" in view.prefixes:
            got += 0.5
    return got / len(words)


def _coverage(
    view: PromptView, title: str, fields: RecallFields, strong: Sequence[str], body: str
) -> int:
    analyzer = view.analyzer
    card_side = 0.0
    if title:
        card_side = max(card_side, TITLE_COVERAGE * _share(view, title))
    for phrase in (*fields.triggers, *fields.aliases):
        share = _share(view, phrase)
        if share >= 0.5:
            card_side = max(card_side, PHRASE_COVERAGE * share)
    for text in (*_summary(fields), *fields.use_when):
        card_side = max(card_side, SUMMARY_COVERAGE * _share(view, text))
    strong_words: set[str] = set()
    for text in strong:
        strong_words |= _words(analyzer, text)
    in_strong = view.words & strong_words
    in_body = (view.words & _words(analyzer, body)) - in_strong if body else set()
    prompt_side = min(PROMPT_WORDS_MAX, PROMPT_WORD * len(in_strong)) + min(
        BODY_WORDS_MAX, BODY_WORD * len(in_body)
    )
    return min(COVERAGE_MAX, round(card_side + prompt_side))


def _technical(view: PromptView, card: Any, fields: RecallFields) -> int:
    if not view.technical:
        return 0
    texts = [getattr(card, "title", "") or "", getattr(card, "body", "") or ""]
    texts += [*fields.triggers, *fields.aliases, *fields.topics, *fields.use_when]
    if fields.summary:
        texts.append(fields.summary)
    haystack = "\n".join(texts).casefold()
    found = sum(1 for token in view.technical if _has_token(haystack, token))
    if not found:
        return 0
    return min(TECHNICAL_MAX, TECHNICAL + TECHNICAL_MORE * (found - 1))


def _has_token(haystack: str, token: str) -> bool:
    """A technical token in a text as a whole token: not inside a longer word or path."""
    pattern = _token_pattern(token)
    return pattern.search(haystack) is not None


@functools.lru_cache(maxsize=4096)
def _token_pattern(token: str) -> re.Pattern[str]:
    body = r"\s+".join(re.escape(part) for part in token.split())
    return re.compile(rf"(?<![\w./:-]){body}(?![\w/-]|\.\w)")


def _cjk(view: PromptView, strong: Sequence[str]) -> int:
    if not view.cjk_runs:
        return 0
    card_runs = [run for text in strong for run in _CJK.findall(phrase_form(text))]
    if not card_runs:
        return 0
    longest = max(_longest_common(a, b) for a in view.cjk_runs for b in card_runs)
    if longest < 2:
        return 0
    return min(CJK_MAX, CJK_PER_CHAR * (longest - 1))


def _longest_common(a: str, b: str) -> int:
    """The length of the longest substring two texts share."""
    if len(a) > len(b):
        a, b = b, a
    best = 0
    for start in range(len(a)):
        length = best + 1
        while start + length <= len(a) and a[start : start + length] in b:
            best = length
            length += 1
    return best


__all__ = [
    "DEFAULT_EVIDENCE",
    "Evidence",
    "PromptView",
    "contains_phrase",
    "evidence",
    "evidence_of",
    "phrase_form",
]
