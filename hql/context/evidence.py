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
- `near_ignore`: an `ignore_when` phrase the prompt holds half or more of, not exactly,
  takes away (NEAR_IGNORE times the share);
- `priority`: `must` adds, `may` takes away, only for a card with evidence of its own.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any

from hql import messages
from hql.context.envelope import Envelope, read_envelope
from hql.context.fields import RecallFields
from hql.record import record

DEFAULT_EVIDENCE = 40
MAX_SCORE = 100
TRIGGER = 60  # a trigger phrase found whole
TRIGGER_MORE = 10  # each further trigger found whole
TRIGGER_MAX = 80
TRIGGER_WORD = 20  # a trigger of one plain word: a broad word is weak evidence
TRIGGER_PARTIAL = 45  # times the share of the best trigger's units the prompt holds
PARTIAL_SHARE = 0.5  # a trigger less covered than this is no trigger evidence
ALIAS = 50
TITLE = 50  # times the squared share of the title's units the prompt holds
SUMMARY_COVERAGE = 15
TOPIC = 6  # each topic found whole
TOPICS_MAX = 12
PROMPT_UNIT = 2  # each distinct prompt unit a strong field holds
PROMPT_UNITS_MAX = 10
PROMPT_SHARE = 20  # times the share of the prompt's words the strong fields hold
COVERAGE_MAX = 35
TECHNICAL = 25
TECHNICAL_MORE = 10
TECHNICAL_MAX = 40
CJK_PER_CHAR = 6  # each character of the longest shared run beyond two
CJK_MAX = 24
MUST = 10
MAY = -10
NEAR_IGNORE = -20  # times the share of an ignore_when phrase's units the prompt holds

_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")


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
        self.prompt = prompt
        self.analyzer = analyzer
        self.envelope = envelope or read_envelope(prompt, analyzer)
        self.whole = phrase_form(prompt)
        affirmed = affirmed_part(prompt)
        self.affirmed = phrase_form(affirmed)
        # Analysed in full first: its units are then read from that analysis.
        self.prefixes = frozenset(
            t for t in analyzer.analyze(affirmed).terms if t.startswith("pref:")
        )
        self.units = units_of(analyzer, affirmed) | identifier_kinds(affirmed)
        self.all_units = units_of(analyzer, prompt)
        self.cjk_runs = tuple(_CJK.findall(self.affirmed))
        self.technical = tuple(
            dict.fromkeys(token.casefold() for token in self.envelope.technical if len(token) > 1)
        )


# Identifiers an agent pastes, and the word that names their kind: a prompt holding a
# UUID holds the unit `uuid` (a card triggered by "session uuid" is asked for), one holding
# a web address the unit `url`.
# Each with a piece of text it cannot match without (the pattern is only tried then).
_IDENTIFIERS = (
    (
        re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I),
        "uuid",
        "-",
    ),
    (re.compile(r"\bhttps?://\S+", re.I), "url", "://"),
)


def identifier_kinds(text: str) -> frozenset[str]:
    """The kind words of the identifiers in a text (`uuid`, `url`)."""
    return frozenset(
        kind for pattern, kind, needed in _IDENTIFIERS if needed in text and pattern.search(text)
    )


# A prompt's clauses for negation: a negation runs to the end of its clause, across a
# list written with `、` (`不是 A、B 或 C`).
_CLAUSE = re.compile(r"[.;:!?,。；：！？，\n]|\bbut\b|但是|但|而是", re.IGNORECASE)


# What a prompt refuses (a prohibition or an exclusion), not what it reports as missing:
# "没有做签名校验" (no signature check was done) asks for one.
_NEGATION = re.compile(
    r"(?:\b(?:don't|do\s+not|does\s+not|never|without|avoid|instead\s+of|not\s+about|"
    r"isn't|is\s+not|aren't|are\s+not|no\s+need|nao|não|nunca|sem|sin|sans|jamais|"
    r"ohne|nicht|kein|keine)\b"
    r"|不要|不是|不用|无需|無需|不涉及|不必|不需要|别|別|勿|而不是)",
    re.IGNORECASE,
)


def affirmed_part(prompt: str) -> str:
    """The prompt without its refused parts: each clause cut at its first negation."""
    from hql.text.folding import negated_clauses

    kept: list[str] = []
    for clause, negated in negated_clauses(prompt, _CLAUSE, _NEGATION):
        clause = clause[:negated] if negated is not None else clause
        not_word = _not_word(clause)
        kept.append(clause if not_word is None else not_word)
    return " ".join(kept)


def _not_word(clause: str) -> str | None:
    """The clause (normalised) up to a Chinese `不` that stands as a word of its own, as the
    analyser segments it (`不修改`: do not change), else None; inside a word (`不同`, `不过`)
    it negates nothing."""
    if "不" not in clause:
        return None
    from hql.text.analyzer import normalize, segment

    form = normalize(clause)
    at = 0
    for word in segment(clause):
        found = form.find(word, at)
        if found < 0:
            return None
        if word == "不":
            return form[:found]
        at = found + len(word)
    return None


# Characters that separate phrases: spaces, these (each made a space: a translation, not a
# pattern tried at every character) and a full stop before a space or at the end; `/`,
# `.`, `_`, `-`, `#` and `@` stay inside a token (`/goal` is not `goal`, `hql.toml` is one).
_SOFT_CHARACTERS = str.maketrans(
    dict.fromkeys(",;:!?()[]{}<>\"'`“”‘’、，。；：！？「」『』《》【】…|*~", " ")
)
_STOP_BEFORE_SPACE = re.compile(r"\.(?=\s)")


@functools.lru_cache(maxsize=1 << 14)
def phrase_form(text: str) -> str:
    """A text as phrases are compared: normalised (case, width, accents), split at
    punctuation between words, words joined by one space."""
    from hql.text.analyzer import normalize

    form = normalize(text)
    if "." in form:
        form = _STOP_BEFORE_SPACE.sub(" ", form)
        if form.endswith("."):
            form = form[:-1]
    return " ".join(form.translate(_SOFT_CHARACTERS).split())


def contains_phrase(text_form: str, phrase: str) -> bool:
    """Whether a phrase occurs in a text (both in `phrase_form`), whole at a Latin edge."""
    if not phrase:
        return False
    start = text_form.find(phrase)
    while start >= 0:
        end = start + len(phrase)
        left_ok = start == 0 or not (_joins(phrase[0]) and _joins(text_form[start - 1]))
        right_ok = end == len(text_form) or not (_joins(phrase[-1]) and _joins(text_form[end]))
        if left_ok and right_ok:
            return True
        start = text_form.find(phrase, start + 1)
    return False


def _joins(char: str) -> bool:
    """A character that joins a Latin-like token (CJK characters stand alone)."""
    return (char.isalnum() or char in "/._-#@") and not _CJK.match(char)


_UNITS: dict[tuple[str, str], frozenset[str]] = {}


def _units(analyzer: Any, text: str) -> frozenset[str]:
    # A set of the terms: their order (an analysis's display order) does not matter, and a
    # card's title or trigger is read here alone (no need to analyse it in full).
    terms = analyzer.term_list(text)
    # An ASCII term holds no CJK character: the pattern is only tried on the others.
    units = {t for t in terms if ":" not in t and (t.isascii() or not _CJK.search(t))}
    for run in _CJK.findall(phrase_form(text)):
        if len(run) == 1:
            units.add(run)
        else:
            units.update(run[i : i + 2] for i in range(len(run) - 1))
    return frozenset(units)


def units_of(analyzer: Any, text: str) -> frozenset[str]:
    """What coverage counts: the words of a text as the analyser reads them (dictionary
    words for Chinese and Japanese), without prefixes, bigrams or synonym groups."""
    key = (analyzer.fingerprint, text)  # the fingerprint says how the analyser reads
    known = _UNITS.get(key)
    if known is None:
        if len(_UNITS) >= 1 << 15:
            _UNITS.clear()
        known = _UNITS[key] = _units(analyzer, text)
    return known


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
    trigger = _trigger(view, fields)
    if trigger:
        channels["trigger"] = trigger
    if any(_named(view, alias) for alias in (*fields.aliases, title)):
        channels["alias"] = ALIAS
    title_points = round(TITLE * _share(view, title) ** 2) if title else 0
    if title_points:
        channels["title"] = title_points
    coverage = _coverage(view, title, fields)
    if coverage:
        channels["coverage"] = coverage
    technical = _technical(view, card, fields)
    if technical:
        channels["technical"] = technical
    cjk = _cjk(view, title, fields)
    if cjk:
        channels["cjk"] = cjk
    near_ignore = _near_ignore(view, title, fields)
    if near_ignore:
        channels["near_ignore"] = near_ignore
    base = sum(channels.values())
    # Priority orders cards that already have evidence; it never makes evidence.
    if base >= DEFAULT_EVIDENCE and fields.priority == "must":
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


def _trigger(view: PromptView, fields: RecallFields) -> int:
    """Points for the triggers: whole phrases, else the best-covered one."""
    whole = [t for t in fields.triggers if contains_phrase(view.affirmed, phrase_form(t))]
    strong = [t for t in whole if not _plain_word(t)]
    if strong:
        return min(TRIGGER_MAX, TRIGGER + TRIGGER_MORE * (len(strong) - 1))
    best = 0.0
    for phrase in fields.triggers:
        if phrase in whole:
            continue
        # A trigger of one unit is found whole or not at all (`/goal` is not `goal`).
        if len(units_of(view.analyzer, phrase)) < 2:
            continue
        share = _share(view, phrase)
        if share >= PARTIAL_SHARE:
            best = max(best, TRIGGER_PARTIAL * share)
    return max(round(best), TRIGGER_WORD if whole else 0)


def _near_ignore(view: PromptView, title: str, fields: RecallFields) -> int:
    """Points taken for an `ignore_when` phrase the prompt holds half or more of (its units,
    negations included: such phrases often name what is refused), though not exactly, when
    what it holds of it is more than the card's own words (`git log` is not near `git commit`
    for a card about git)."""
    if not fields.ignore_when:
        return 0
    own: set[str] = set()
    for text in (title, *fields.triggers, *fields.aliases, *_summary(fields), *fields.use_when):
        own |= units_of(view.analyzer, text)
    for topic in fields.topics:
        own |= units_of(view.analyzer, topic)
    best = 0.0
    for phrase in fields.ignore_when:
        units = units_of(view.analyzer, phrase)
        if len(units) < 2:
            continue
        held = units & view.all_units
        share = len(held) / len(units)
        if share >= PARTIAL_SHARE and held - own:
            best = max(best, share)
    return round(NEAR_IGNORE * best)


def _plain_word(phrase: str) -> bool:
    """One Latin word with no technical mark: `review`, not `/goal` or `hql.toml`."""
    form = phrase_form(phrase)
    return " " not in form and form.isalpha() and not _CJK.search(form)


def _named(view: PromptView, name: str) -> bool:
    """A name found whole in the prompt; one short word alone is not a naming."""
    form = phrase_form(name)
    if (" " not in form and len(form) < 8 and not _CJK.search(form)) or len(form) < 3:
        return False
    return contains_phrase(view.affirmed, form)


def _summary(fields: RecallFields) -> tuple[str, ...]:
    return (fields.summary,) if fields.summary else ()


def _share(view: PromptView, text: str) -> float:
    """How much of a text's units the prompt holds (a shared 5-letter prefix counts half)."""
    units = units_of(view.analyzer, text)
    if not units:
        return 0.0
    got = 0.0
    for unit in units:
        if unit in view.units:
            got += 1.0
        elif len(unit) >= 5 and f"pref:{unit[:5]}" in view.prefixes:
            got += 0.5
    return got / len(units)


def _coverage(view: PromptView, title: str, fields: RecallFields) -> int:
    """Points for how much of the card's strong fields the prompt covers."""
    analyzer = view.analyzer
    points = 0.0
    summaries = [*_summary(fields), *fields.use_when]
    if summaries:
        points += SUMMARY_COVERAGE * max(_share(view, text) for text in summaries)
    topics = sum(contains_phrase(view.affirmed, phrase_form(topic)) for topic in fields.topics)
    points += min(TOPICS_MAX, TOPIC * topics)
    strong: set[str] = set()
    for text in (title, *fields.triggers, *fields.aliases, *summaries, *fields.topics):
        strong |= units_of(analyzer, text)
    shared = view.units & strong
    points += min(PROMPT_UNITS_MAX, PROMPT_UNIT * len(shared))
    if view.units:
        points += PROMPT_SHARE * len(shared) / len(view.units)
    return min(COVERAGE_MAX, round(points))


def _technical(view: PromptView, card: Any, fields: RecallFields) -> int:
    if not view.technical:
        return 0
    texts = (*fields.triggers, *fields.aliases, *fields.topics, *fields.use_when)
    haystack = _haystack(
        getattr(card, "title", "") or "",
        getattr(card, "search_body", getattr(card, "body", "")) or "",
        (*texts, *_summary(fields)),
    )
    # Most tokens are absent: a substring test spares the boundary pattern.
    found = sum(1 for token in view.technical if token in haystack and _has_token(haystack, token))
    if not found:
        return 0
    return min(TECHNICAL_MAX, TECHNICAL + TECHNICAL_MORE * (found - 1))


@functools.lru_cache(maxsize=4096)
def _haystack(title: str, body: str, fields: tuple[str, ...]) -> str:
    """A card's text as technical tokens are looked for in it (kept: a card is a candidate
    for many prompts)."""
    return "\n".join((title, body, *fields)).casefold()


def _has_token(haystack: str, token: str) -> bool:
    """A technical token in a text as a whole token: not inside a longer word or path."""
    return _token_pattern(token).search(haystack) is not None


@functools.lru_cache(maxsize=4096)
def _token_pattern(token: str) -> re.Pattern[str]:
    body = r"\s+".join(re.escape(part) for part in token.split())
    return re.compile(rf"(?<![\w./:-]){body}(?![\w/-]|\.\w)")


def _cjk(view: PromptView, title: str, fields: RecallFields) -> int:
    """Points for the longest CJK run the prompt shares with the title or a trigger/alias."""
    if not view.cjk_runs:
        return 0
    card_runs = [
        run
        for text in (title, *fields.triggers, *fields.aliases)
        for run in _CJK.findall(phrase_form(text))
    ]
    if not card_runs:
        return 0
    longest = max(_longest_common(a, b) for a in view.cjk_runs for b in card_runs)
    if longest < 3:
        return 0
    return min(CJK_MAX, CJK_PER_CHAR * (longest - 2))


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
