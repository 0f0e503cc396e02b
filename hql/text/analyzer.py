"""The text analyser: one module turns text into words and terms, for ranking and explaining.

Pipeline (product §4.1), in this order:

1. NFKC (full-width letters become ASCII, half-width kana full-width), case folding.
2. Accent folding for Latin, Greek and Cyrillic: the combining marks of U+0300–U+036F are
   removed after canonical decomposition; kana keep their (semi-)voiced marks, which are
   U+3099/U+309A and so untouched; Indic and Thai vowel signs are untouched too. A
   Vietnamese text keeps its marks (they tell its words apart).
3. Word segmentation: ICU's BreakIterator (dictionaries for Chinese, Japanese, Thai, Lao,
   Khmer, Myanmar) for texts holding those scripts; other texts take a regular expression
   with the same word rules (UAX #29 letters, digits and combining marks), which is several
   times faster than stepping through ICU boundaries from Python. Apostrophes and
   underscores separate words in both paths (`l'homme` → `l`, `homme`).
4. Numbers and currency: a currency prefix (`R$`) is dropped and a number token with
   separators is made plain: `20,00` → `20`, `1.234,50` → `1234.5`, so a price meets its
   plain number.
5. Synonyms (vault groups, then the built-in ones) are found on the full word sequence,
   phrases included; then stop words, the vault's `[search] ignore` and single ASCII letters
   are dropped (and reported as ignored).
6. Terms: every kept word; `pref:` + the first 5 letters of an alphabetic word of 5 or more
   letters (a language-neutral stem); `bi:` + each character bigram of a run of Chinese,
   Japanese or Korean words; `syn:` + the group name of each synonym found.

Each distinct token's terms are worked out once per analyser (`_TokenTable`), so indexing
a vault costs one segmentation per text and a dictionary lookup per word; an ASCII text
(or one whose other characters are only punctuation and symbols) is segmented by
`str.translate` and `str.split`, with the patterns only for runs holding `.` or `,`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import threading
import unicodedata
from array import array
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain, count, islice
from typing import Any, NamedTuple

from hql import messages
from hql.regex import lazy
from hql.text.stopwords import VIETNAMESE, all_stop_words
from hql.text.synonyms import BUILTIN_GROUPS

VERSION = "hql.analyzer.1"
PREFIX_LENGTH = 5
PREFIX_MARK = "pref:"
BIGRAM_MARK = "bi:"
SYNONYM_MARK = "syn:"

_LATIN_GREEK_CYRILLIC_MARKS = lazy("[\u0300-\u036f]+")
# Letters no other language written in Latin uses: horned o/u and the precomposed
# tone-marked vowels of the Latin Extended Additional block.
_VIETNAMESE_LETTER = lazy("[\u01a1\u01b0\u1ea0-\u1ef9]")
_SEPARATORS = lazy("[_'\u2019\u02bc`\u00b4]")
_CURRENCY_PREFIX = lazy(r"\b(?:r|us|u\.s\.|a|au|c|ca|nz|hk|s|mx|ar|cl|col)\$")
_GROUPED_NUMBER = lazy(r"\d+(?:[.,]\d+)+")
# Scripts written without spaces between words: ICU's dictionaries segment them.
_DICTIONARY_SCRIPTS = (
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff]"
)
# Chinese, Japanese and Korean characters: their runs also give character bigrams.
_CJK_CHAR = (
    "[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003ffff]"
)
# Every character of both classes is at or above this one: a text below it needs neither
# their patterns (~10 ms to compile, done on first need) nor ICU.
_SEGMENTED_FROM = "\u0e00"
_HIGH = lazy(f"[{_SEGMENTED_FROM}-\U0010ffff]")  # a character at or above _SEGMENTED_FROM


@functools.cache
def _dictionary_scripts() -> re.Pattern[str]:
    return re.compile(_DICTIONARY_SCRIPTS)


@functools.cache
def _cjk_char() -> re.Pattern[str]:
    return re.compile(_CJK_CHAR)


_ASTRAL = lazy("[\U00010000-\U0010ffff]")
_ICU_WORD_STATUS = 100  # UBRK_WORD_NUMBER; letters, kana and ideographs are above it


class SearchConfigError(ValueError):
    """A `[search]` section that cannot be used; the message says what to fix."""


@dataclass(frozen=True, slots=True)
class Analysis:
    """What the analyser made of one text."""

    words: tuple[str, ...]
    terms: tuple[str, ...]
    ignored: tuple[str, ...]
    synonyms: tuple[tuple[str, str], ...]  # (word or phrase as found, group name)

    def to_json(self) -> dict[str, Any]:
        return {
            "words": list(self.words),
            "terms": list(self.terms),
            "ignored": list(self.ignored),
            "synonyms": [{"found": found, "group": group} for found, group in self.synonyms],
        }


@dataclass(frozen=True, slots=True)
class _SynonymTable:
    """Synonym members keyed by their first word; phrases are word tuples."""

    by_first_word: Mapping[str, tuple[tuple[tuple[str, ...], str], ...]]

    @classmethod
    def build(cls, groups: Iterable[Sequence[str]], fold: Any) -> _SynonymTable:
        table: dict[str, list[tuple[tuple[str, ...], str]]] = {}
        for group in groups:
            folded = [tuple(fold(member)) for member in group]
            folded = [member for member in folded if member]
            if not folded:
                continue
            name = " ".join(folded[0])
            for member in folded:
                table.setdefault(member[0], []).append((member, name))
        # Longest phrase first, so "opening hours" wins over "opening".
        return cls(
            {
                first: tuple(sorted(entries, key=lambda entry: -len(entry[0])))
                for first, entries in table.items()
            }
        )

    def group_names(self) -> set[str]:
        return {name for entries in self.by_first_word.values() for _, name in entries}

    def find(self, words: list[str], firsts: Iterable[str]) -> list[tuple[str, str]]:
        """The members found in `words`, whose first words among them are `firsts`."""
        found: list[tuple[str, str]] = []
        table = self.by_first_word
        covered = 0  # a phrase's words are not matched again
        for position in _positions(words, firsts):
            if position < covered:
                continue
            for member, group in table[words[position]]:
                if tuple(words[position : position + len(member)]) == member:
                    found.append((" ".join(member), group))
                    covered = position + len(member)
                    break
        return found


def _positions(words: list[str], wanted: Iterable[str]) -> list[int]:
    """Where the wanted words are in `words`, in order (`list.index` scans in C)."""
    positions = []
    for word in wanted:
        at = words.index(word)
        while True:
            positions.append(at)
            try:
                at = words.index(word, at + 1)
            except ValueError:
                break
    positions.sort()
    return positions


@dataclass
class Analyzer:
    """Turns text into words and terms; build one per vault with `from_config`."""

    ignore: frozenset[str] = frozenset()
    synonym_groups: tuple[tuple[str, ...], ...] = ()
    builtin_synonyms: bool = True
    version: str = VERSION
    config_warnings: list[str] = field(default_factory=list, compare=False)
    _stop: frozenset[str] = field(init=False, repr=False)
    _deferred_stop: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _stop_vietnamese: frozenset[str] = field(init=False, repr=False)
    _tokens: _TokenTable = field(init=False, repr=False)
    _tokens_vietnamese: _TokenTable = field(init=False, repr=False)
    _synonyms: _SynonymTable = field(init=False, repr=False)
    _synonym_starts: frozenset[str] = field(init=False, repr=False)
    _cache: dict[str, Analysis] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        # Single ASCII letters ("l'", "s", "t") carry nothing; they are ignored like stop words.
        letters = set("abcdefghijklmnopqrstuvwxyz")
        ignored = {fold_word(word) for word in self.ignore}
        # Stop words written wholly at or above _SEGMENTED_FROM (Thai, Chinese, Japanese,
        # Korean) need ICU to fold; their words hold only such characters, so no text
        # without one can contain them, and they are folded by the first text with one.
        eager: list[str] = []
        deferred: list[str] = []
        for word in all_stop_words():
            (deferred if _wholly_high(word) else eager).append(word)
        self._deferred_stop = tuple(deferred)
        self._stop = frozenset(map(fold_word, eager)) | letters | ignored
        # A Vietnamese text keeps its tone marks, so other languages' stop words would
        # only collide with its syllables (`con`, `do`, `no`); it gets its own list.
        self._stop_vietnamese = frozenset(VIETNAMESE.split()) | letters | ignored
        self._tokens = _TokenTable(self._stop)
        self._tokens_vietnamese = _TokenTable(self._stop_vietnamese)
        groups: list[Sequence[str]] = list(self.synonym_groups)
        if self.builtin_synonyms:
            groups.extend(BUILTIN_GROUPS)
        self._synonyms = _SynonymTable.build(groups, segment)
        self._synonym_starts = frozenset(self._synonyms.by_first_word)

    @classmethod
    def from_config(
        cls, search_section: Mapping[str, Any] | None, strict: bool = False
    ) -> Analyzer:
        """An analyser for a vault's `[search]` table (None: the defaults).

        A malformed entry raises `SearchConfigError` when `strict`; otherwise it is left
        out and its message kept in `config_warnings` (the index reports them), so a
        typo in hql.toml never stops a search.
        """
        section = dict(search_section or {}) if isinstance(search_section, Mapping) else {}
        problems: list[str] = []
        ignore = _string_list(section.get("ignore", []), "ignore", problems)
        synonym_groups = _synonym_groups(section.get("synonyms", []), problems)
        builtin = section.get("builtin_synonyms", True)
        if not isinstance(builtin, bool):
            problems.append(messages.search_builtin_synonyms_not_bool())
            builtin = True
        if problems and strict:
            raise SearchConfigError(problems[0])
        analyzer = cls(frozenset(ignore), synonym_groups, builtin)
        analyzer.config_warnings = [messages.search_config_entry_ignored(p) for p in problems]
        return analyzer

    @cached_property
    def fingerprint(self) -> str:
        """Changes whenever the same text could analyse differently (version or config)."""
        config = {
            "version": self.version,
            "ignore": sorted(self.ignore),
            "synonyms": [list(group) for group in self.synonym_groups],
            "builtin": self.builtin_synonyms,
            "unicode": unicodedata.unidata_version,
        }
        digest = hashlib.sha256(json.dumps(config, ensure_ascii=False).encode()).hexdigest()
        return f"{self.version}+{digest[:16]}"

    @cached_property
    def own_synonym_groups(self) -> frozenset[str]:
        """The names of the vault's own synonym groups (`[search] synonyms`, not the
        built-in ones), as an analysis names the group a synonym was found in."""
        return frozenset(_SynonymTable.build(self.synonym_groups, segment).group_names())

    def own_synonyms(self, analysis: Analysis) -> frozenset[str]:
        """The synonym terms of `analysis` that come from the vault's own groups."""
        return frozenset(
            SYNONYM_MARK + group
            for _, group in analysis.synonyms
            if group in self.own_synonym_groups
        )

    def analyze(self, text: str) -> Analysis:
        """Words, terms, ignored words and synonyms of a text (cached per text)."""
        cached = self._cache.get(text)
        if cached is None:
            cached = self._analyze(text)
            if len(self._cache) >= 1 << 16:
                self._cache.clear()
            self._cache[text] = cached
        return cached

    def terms(self, text: str) -> list[str]:
        """Only the terms of a text: the indexing path, not cached (the index keeps them)."""
        return self._terms(_tokenize(text))[0]

    def term_list(self, text: str) -> Sequence[str]:
        """The terms of a text in no stated order (for sets of them): its cached analysis's
        when it was analysed, else only its terms, worked out now and not cached."""
        cached = self._cache.get(text)
        return cached.terms if cached is not None else self._terms(_tokenize(text))[0]

    def _analyze(self, text: str) -> Analysis:
        tokens = _tokenize(text)
        terms, synonyms = self._terms(tokens)
        terms = _display_order(terms)
        stop = self._stop_vietnamese if tokens.vietnamese else self._stop
        words = [_plain_token(t) if t[0].isdigit() else t for t in tokens.words]
        kept = tuple(word for word in words if word not in stop)
        ignored = tuple(word for word in words if word in stop)
        return Analysis(kept, tuple(terms), ignored, tuple(synonyms))

    def _terms(self, tokens: _Tokens) -> tuple[list[str], list[tuple[str, str]]]:
        table = self._table_of(tokens)
        # Each distinct token's terms (word, prefix) are worked out once per analyser.
        terms = list(chain.from_iterable(map(table.__getitem__, tokens.words)))
        return terms, self._add_joined_terms(tokens, table, terms)

    def _table_of(self, tokens: _Tokens) -> _TokenTable:
        """The token table the text of these tokens takes its terms from."""
        if tokens.high and self._deferred_stop:
            self._fold_deferred_stop_words()
        table = self._tokens_vietnamese if tokens.vietnamese else self._tokens
        if len(table) > _TOKEN_CACHE_LIMIT:
            table.clear()
        return table

    def _add_joined_terms(
        self, tokens: _Tokens, table: _TokenTable, terms: list[str]
    ) -> list[tuple[str, str]]:
        """Add the terms made of several tokens (bigrams, then synonyms) to `terms`; returns
        the synonyms found."""
        if tokens.has_cjk:
            terms.extend(_bigram_terms(tokens.words, table.stop))
        synonyms = []
        firsts = self._synonym_starts.intersection(tokens.words)
        if firsts:
            synonyms = self._synonyms.find(tokens.words, firsts)
            terms.extend(SYNONYM_MARK + group for _, group in synonyms)
        return synonyms

    def _fold_deferred_stop_words(self) -> None:
        # Threads racing here compute the same set; the list empties only once it is in use.
        stop = self._stop | {fold_word(word) for word in self._deferred_stop}
        self._stop = stop
        self._tokens.stop = stop
        self._deferred_stop = ()


class TermNumbers:
    """The terms of many texts as numbers, for an index: `numbers` maps each term to its
    number, and a term met for the first time takes the next one (so numbers follow first
    occurrence). A text's numbers are its terms' (`Analyzer.terms`), in the same order,
    appended as native int32 bytes to one buffer (a build views it as one array): each
    distinct token's are packed once, so a text costs its segmentation and a dictionary
    lookup per word, and many texts' numbers are one array with no Python int per term."""

    def __init__(self, analyzer: Analyzer, numbers: Mapping[str, int]) -> None:
        self._analyzer = analyzer
        self.numbers: dict[str, int] = defaultdict(count(len(numbers)).__next__, numbers)
        self._of_table: dict[int, _TokenNumbers] = {}

    def add(self, text: str, into: bytearray) -> int:
        """Append the numbers of the text's terms to `into`; returns how many there are."""
        analyzer = self._analyzer
        tokens = _tokenize(text)
        table = analyzer._table_of(tokens)
        numbered = self._of_table.get(id(table))
        if numbered is None or len(numbered) > _TOKEN_CACHE_LIMIT:
            numbered = self._of_table[id(table)] = _TokenNumbers(table, self.numbers)
        before = len(into)
        into += b"".join(map(numbered.__getitem__, tokens.words))
        joined: list[str] = []  # bigrams and synonyms, as `terms` adds them
        analyzer._add_joined_terms(tokens, table, joined)
        if joined:
            into += _packed(map(self.numbers.__getitem__, joined))
        return (len(into) - before) // _NUMBER.itemsize

    def add_terms(self, terms: Sequence[str], into: bytearray) -> int:
        """Append the numbers of these terms (an analysis made earlier) to `into`."""
        into += _packed(map(self.numbers.__getitem__, terms))
        return len(terms)

    def new_terms(self, known: int) -> list[str]:
        """The terms numbered from `known` on, in number order."""
        return list(islice(self.numbers, known, None))


_NUMBER = array("i")  # a term's number as `TermNumbers` packs it: a native C int
assert _NUMBER.itemsize == 4, "a term number is packed as 32 bits"


def _packed(numbers: Iterable[int]) -> bytes:
    return array("i", numbers).tobytes()


class _TokenNumbers(dict[str, bytes]):
    """token -> the numbers of the terms it contributes (its `_TokenTable` entry's), packed."""

    def __init__(self, table: _TokenTable, numbers: dict[str, int]) -> None:
        super().__init__()
        self._table, self._numbers = table, numbers

    def __missing__(self, token: str) -> bytes:
        numbers = self[token] = _packed(map(self._numbers.__getitem__, self._table[token]))
        return numbers


def _wholly_high(word: str) -> bool:
    """Whether every character of the folded word is at or above `_SEGMENTED_FROM`."""
    if word.isascii():
        return False
    normalized = normalize(word)
    return bool(normalized) and min(normalized) >= _SEGMENTED_FROM


def _display_order(terms: list[str]) -> list[str]:
    """Words first, then prefixes, bigrams and synonyms, each in text order (for explain)."""
    rank = {PREFIX_MARK: 1, BIGRAM_MARK: 2, SYNONYM_MARK: 3}
    # A stable sort on four ranks is a split into four lists, in one pass.
    groups: tuple[list[str], ...] = ([], [], [], [])
    for term in terms:
        at = term.find(":")
        groups[rank.get(term[: at + 1], 0) if at >= 0 else 0].append(term)
    return [*groups[0], *groups[1], *groups[2], *groups[3]]


class _TokenTable(dict[str, tuple[str, ...]]):
    """token → the terms it contributes: () for a stop word, else the word and its prefix."""

    def __init__(self, stop: frozenset[str]) -> None:
        super().__init__()
        self.stop = stop

    def __missing__(self, token: str) -> tuple[str, ...]:
        word = _plain_token(token)
        terms: tuple[str, ...] = ()
        if word not in self.stop:
            prefix = _prefix(word)
            terms = (word, prefix) if prefix else (word,)
        self[token] = terms
        return terms


_TOKEN_CACHE_LIMIT = 1 << 20


def _prefix(word: str) -> str:
    """`pref:` + 5 letters for an alphabetic word of 5+ letters in a spaced script, else ""."""
    if (
        len(word) >= PREFIX_LENGTH
        and word.isalpha()
        and (
            word.isascii()
            or word[0] < _SEGMENTED_FROM
            or not _dictionary_scripts().match(word)
            and not _cjk_char().match(word)
        )
    ):
        return PREFIX_MARK + word[:PREFIX_LENGTH]
    return ""


def _bigram_terms(words: Sequence[str], stop: frozenset[str]) -> list[str]:
    """Bigrams over runs of consecutive CJK words; a stop word or other word ends a run."""
    bigrams: list[str] = []
    run: list[str] = []
    for word in [*words, ""]:
        if word and word not in stop and _cjk_char().match(word) and _is_all_cjk(word):
            run.append(word)
            continue
        if run:
            joined = "".join(run)
            bigrams.extend(BIGRAM_MARK + joined[i : i + 2] for i in range(len(joined) - 1))
            run = []
    return bigrams


def _is_all_cjk(word: str) -> bool:
    cjk_char = _cjk_char()
    return all(cjk_char.match(char) for char in word)


def _string_list(value: Any, key: str, problems: list[str]) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        problems.append(messages.search_not_a_word_list(key))
        return []
    return list(value)


def _synonym_groups(value: Any, problems: list[str]) -> tuple[tuple[str, ...], ...]:
    groups = value if isinstance(value, list) else None
    if groups is None or not all(
        isinstance(group, list) and all(isinstance(word, str) for word in group) for group in groups
    ):
        problems.append(messages.search_synonyms_not_groups())
        return ()
    return tuple(tuple(group) for group in groups)


# --- normalisation and segmentation -------------------------------------------------


def normalize(text: str) -> str:
    """NFKC, case folding, accent folding and currency (steps 1–3, before segmentation).

    Numbers are made plain per token afterwards (`_plain_token`), where the segmenter
    has already found them whole.
    """
    text = unicodedata.normalize("NFKC", text).casefold()
    if text.isascii():
        return _CURRENCY_PREFIX.sub(" ", text) if "$" in text else text
    text = _fold_accents(text)
    if "$" in text:
        text = _CURRENCY_PREFIX.sub(" ", text)
    return _SEPARATORS.sub(" ", text)


def _fold_accents(text: str) -> str:
    """Drop Latin, Greek and Cyrillic combining accents, except in Vietnamese text.

    Vietnamese tells words apart by their tone marks (`ma`, `má`, `mà`, `mả`, `mã`, `mạ`),
    so a text holding a letter only Vietnamese uses keeps all its marks. NFKC also splits
    Thai and Lao SARA AM in two; it is put back so ICU's dictionaries see the usual form.
    """
    if "\u0e4d" in text or "\u0ecd" in text:
        text = text.replace("\u0e4d\u0e32", "\u0e33").replace("\u0ecd\u0eb2", "\u0eb3")
    if _VIETNAMESE_LETTER.search(text):
        return text
    decomposed = unicodedata.normalize("NFD", text)
    return unicodedata.normalize("NFC", _LATIN_GREEK_CYRILLIC_MARKS.sub("", decomposed))


def _plain_token(token: str) -> str:
    """A token as a word: grouped or decimal numbers made plain, anything else as is."""
    if token[0].isdigit() and ("," in token or "." in token) and _GROUPED_NUMBER.fullmatch(token):
        return _plain_number(token)
    return token


_NUMBER_SEPARATOR = re.compile("[.,]")


def _plain_number(number: str) -> str:
    """`20,00` → `20`; `1.234,50` → `1234.5`; `1,000` → `1000`; `3.14` stays."""
    separators = [char for char in number if char in ".,"]
    groups = _NUMBER_SEPARATOR.split(number)
    if len(set(separators)) == 2:
        whole, fraction = "".join(groups[:-1]), groups[-1]
    elif len(separators) > 1 or len(groups[-1]) == 3:
        whole, fraction = "".join(groups), ""  # digit grouping only
    else:
        whole, fraction = groups[0], groups[1]
    fraction = fraction.rstrip("0")
    return f"{whole}.{fraction}" if fraction else whole


def segment(text: str) -> list[str]:
    """The normalised words of a text, in order (before stop words and synonyms)."""
    # Only a token that starts with a digit can be a grouped number: the rest pass as they are.
    return [_plain_token(token) if token[0].isdigit() else token for token in _tokenize(text).words]


def fold_word(word: str) -> str:
    """A single word as the analyser would write it (for word lists)."""
    if word.isascii() and word.isalpha() and word.islower():
        return word  # [a-z]+ folds to itself: most stop words take this way
    return " ".join(segment(word))


class _Tokens(NamedTuple):
    words: list[str]  # folded, numbers not yet made plain
    has_cjk: bool  # Chinese, Japanese or Korean characters: add bigrams
    vietnamese: bool  # tone marks kept: use the Vietnamese stop words
    high: bool  # a character at or above _SEGMENTED_FROM: a deferred stop word may match


def _tokenize(text: str) -> _Tokens:
    """The text's words (as `_tokenize_by_pattern` finds them): ASCII text, and text whose
    other characters are all boundaries or plain letters (`_kind_of`: dashes, quotes, math
    symbols, unaccented small Greek letters), is split with no normalisation pass and no
    pattern per word (`_ascii_words`, `_plain_words`)."""
    if "$" not in text:  # a currency prefix takes `normalize`'s way
        if text.isascii():
            return _Tokens(_ascii_words(text), False, False, False)
        plain = _plain_tokens(text)
        if plain is not None:
            return plain
    return _tokenize_by_pattern(text)


def _plain_tokens(text: str) -> _Tokens | None:
    """A text's words if its characters beyond ASCII are all boundaries or plain letters:
    each boundary read as a space, the letters as ASCII letters are (None: another kind)."""
    boundaries: set[str] = set()
    letters = False
    kinds = _KINDS
    for run in _NON_ASCII.findall(text):
        for char in run:
            kind = kinds.get(char)
            if kind is None:
                kind = _kind_of(char)
            if kind == _LETTER:
                letters = True
            elif kind == _BOUNDARY:
                boundaries.add(char)
            else:
                return None
    # `high` as `normalize` leaves the text: a separator is a space by then.
    high = any(char >= _SEGMENTED_FROM for char in boundaries if not _SEPARATORS.match(char))
    if not letters:
        return _Tokens(_ascii_words(_NON_ASCII.sub(" ", text)), False, False, high)
    for char in boundaries:
        text = text.replace(char, " ")
    return _Tokens(_plain_words(text), False, False, high)


def _tokenize_by_pattern(text: str) -> _Tokens:
    """`_tokenize` step by step: `normalize`, then the word patterns (or ICU)."""
    normalized = normalize(text)
    if normalized.isascii():
        return _Tokens(_ASCII_WORDS.findall(normalized), False, False, False)
    if _HIGH.search(normalized) is None:  # max(normalized) < _SEGMENTED_FROM, in C
        vietnamese = _VIETNAMESE_LETTER.search(normalized) is not None
        return _Tokens(_WORDS.findall(normalized), False, vietnamese, False)
    has_cjk = _cjk_char().search(normalized) is not None
    if has_cjk or _dictionary_scripts().search(normalized):
        return _Tokens(_icu_words(normalized), has_cjk, False, True)
    vietnamese = _VIETNAMESE_LETTER.search(normalized) is not None
    return _Tokens(_WORDS.findall(normalized), False, vietnamese, True)


# Word characters: \w plus the combining marks of scripts written with spaces (Arabic,
# Hebrew, Syriac, Indic, ...) that \w leaves out; a short explicit class keeps the
# regular expression as fast as plain \w. Dandas (U+0964/5) are punctuation. A number
# with separators (`1.234,50`) is one token; `.` joins letters or digits (UAX #29). The
# quantifiers are possessive: no class a run is made of holds the separator after it, so
# giving characters back could never make a match, and not offering them saves the regex
# engine a fair share of its time.
_WORD_CLASS = (
    "\\w\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0670"
    "\u06d6-\u06ed\u0711\u0730-\u074a\u0900-\u0963\u0966-\u0dff\u1ab0-\u1aff"
    "\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
)
_WORDS = lazy(f"\\d++(?:[.,]\\d++)++|[{_WORD_CLASS}]++(?:\\.[{_WORD_CLASS}]++)*+")
# The same rules for ASCII text: a bitmap class, no underscore or apostrophe to remove.
_ASCII_WORDS = re.compile(r"[0-9]++(?:[.,][0-9]++)++|[a-z0-9]++(?:\.[a-z0-9]++)*+")


# --- ASCII text without the regular expression engine ---------------------------------
#
# `_ASCII_WORDS.findall(text.lower())` for ASCII text, found mostly by `str.translate` and
# `str.split` (in C, a fraction of the regular expression's time per character):
# * a character outside [a-z0-9.,] is never part of a word and ends any it follows, as a
#   space does, so it is translated to one (capitals to small letters, as casefolding
#   ASCII does);
# * a `.` or `,` is only part of a word when a letter or digit follows it, so one before a
#   space, or at the end, is a space too;
# * the words of a run of characters holding none of them are the run; a run that still
#   holds one is split by the pattern itself (a number, `e.g`, `p.m`).
_ASCII_FOLD = str.maketrans(
    {
        chr(code): chr(code).lower() if chr(code).isalnum() or chr(code) in ".," else " "
        for code in range(128)
    }
)
_NON_ASCII = lazy("[^\x00-\x7f]+")


def _ascii_words(text: str) -> list[str]:
    """The words of an ASCII text (see above): `_ASCII_WORDS.findall(text.lower())`."""
    return _split_folded(text.translate(_ASCII_FOLD), _ASCII_WORDS)


def _split_folded(folded: str, pattern: Any) -> list[str]:
    """The words of folded text (see above), the runs still holding `.` or `,` split by
    `pattern`."""
    if "." in folded or "," in folded:
        folded = folded.replace(". ", "  ").replace(", ", "  ").rstrip(".,")
        if "." in folded or "," in folded:
            return _words_around_separators(folded, pattern)
    return folded.split()


def _words_around_separators(folded: str, pattern: Any) -> list[str]:
    """The words of folded text (see above) whose runs holding a `.` or `,` are split by
    `pattern`, the rest by `str.split`, in text order."""
    words: list[str] = []
    find, rfind = folded.find, folded.rfind
    done = 0  # the text before this is split
    dot, comma = find("."), find(",")
    while dot >= 0 or comma >= 0:
        at = dot if comma < 0 or 0 <= dot < comma else comma
        start = rfind(" ", done, at) + 1 or done
        end = find(" ", at)
        if end < 0:
            end = len(folded)
        words += folded[done:start].split()
        words += pattern.findall(folded, start, end)
        done = end
        if 0 <= dot < end:
            dot = find(".", end)
        if 0 <= comma < end:
            comma = find(",", end)
    words += folded[done:].split()
    return words


# What a character beyond ASCII is to `_plain_tokens` (each is looked at once per process):
# a boundary reads as a space wherever it stands in a text it shares only with ASCII, other
# boundaries and plain letters (no `$`); a plain letter as itself, as ASCII letters do; any
# other kind sends the text to `_tokenize_by_pattern`.
_OTHER, _BOUNDARY, _LETTER = 0, 1, 2
_KINDS: dict[str, int] = {}


def _kind_of(char: str) -> int:
    """What `char` is to `_plain_tokens` (remembered in `_KINDS`). Either kind is one that
    every step of `normalize` leaves as it is (no decomposition, casefolding and lowering
    to itself, no combining class), below the scripts ICU segments and not Vietnamese:
    a boundary is a punctuation mark, symbol or separator no word holds (or a separator
    `normalize` makes a space), a plain letter a word character that is a letter."""
    settled = (
        not unicodedata.decomposition(char)
        and unicodedata.combining(char) == 0
        and unicodedata.normalize("NFKC", char) == char
        and char.casefold() == char
        and char.lower() == char
        and not _VIETNAMESE_LETTER.match(char)
    )
    category = unicodedata.category(char)[0]
    word = _WORD_CHAR.match(char) is not None
    segmented = char >= _SEGMENTED_FROM and bool(
        _cjk_char().match(char) or _dictionary_scripts().match(char)
    )
    if not settled:
        kind = _OTHER
    elif _SEPARATORS.match(char) or (category in "PSZ" and not word and not segmented):
        kind = _BOUNDARY
    elif category == "L" and word and char < _SEGMENTED_FROM:
        kind = _LETTER
    else:
        kind = _OTHER
    _KINDS[char] = kind
    return kind


# `_ASCII_FOLD` for the UTF-8 bytes of a text: bytes beyond ASCII (its other letters) kept.
_UTF8_FOLD = bytes(
    ord(_ASCII_FOLD.get(code, chr(code))) if code < 128 else code for code in range(256)
)


def _plain_words(text: str) -> list[str]:
    """The words of a text of ASCII and plain letters (no boundary left), as `_ascii_words`
    finds ASCII text's: its ASCII folded through its UTF-8 bytes, the runs still holding
    `.` or `,` split by `_WORDS`."""
    folded = text.encode("utf-8", "surrogatepass").translate(_UTF8_FOLD)
    folded_text = folded.decode("utf-8", "surrogatepass")
    return _split_folded(folded_text, _WORDS)


_WORD_CHAR = lazy(f"\\d|[{_WORD_CLASS}]")


class _IcuWords:
    """One reused ICU word BreakIterator (creating one costs far more than using it)."""

    def __init__(self) -> None:
        import icu

        self._icu = icu
        self._iterator = icu.BreakIterator.createWordInstance(icu.Locale.getRoot())

    def __call__(self, text: str) -> list[str]:
        # ICU counts UTF-16 units; slice a UnicodeString when the text leaves the BMP.
        source: Any = self._icu.UnicodeString(text) if _ASTRAL.search(text) else text
        iterator = self._iterator
        iterator.setText(source)
        words = []
        start = iterator.first()
        for end in iterator:
            if iterator.getRuleStatus() >= _ICU_WORD_STATUS:
                words.append(str(source[start:end]))
            start = end
        return words


_PER_THREAD = threading.local()


def _icu() -> _IcuWords:
    """This thread's word iterator: a BreakIterator holds the text it walks, so threads
    sharing one would walk each other's texts."""
    words: _IcuWords | None = getattr(_PER_THREAD, "words", None)
    if words is None:
        words = _PER_THREAD.words = _IcuWords()
    return words


def _icu_words(text: str) -> list[str]:
    # ICU joins letters across "." (as the regex path does) and keeps "_" and
    # apostrophes out (normalize replaced them), so both paths agree on Latin words.
    return [word for word in _icu()(text) if word != "_"]
