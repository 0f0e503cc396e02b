"""Reading a prompt as a task: its language, slices, commands, paths, symbols and constraints.

An agent sends long prompts holding several tasks, shell commands, file paths and code
symbols. `read_envelope` takes them apart without a model: scripts say the language,
punctuation and lines give the segments, and the technical tokens are recognised by
their shape (a command is a known tool followed by a subcommand, a path has a slash or
a file extension, a symbol has camelCase, snake_case, dots or `::`). Technical tokens
are whole tokens: `github` is not `git`, `hql.toml` is one token.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from hql.record import record

# Tools whose name followed by a word is a command (`git status`, `npm test`).
_TOOL_NAMES = """
    git gh npm npx pnpm yarn bun deno node pip pip3 pipx uv poetry python python3 pytest tox
    cargo rustc rustup go docker podman kubectl helm terraform hql brew apt apt-get dnf yum
    make cmake bazel gradle mvn dotnet ruff mypy black eslint prettier tsc jest vitest
    curl wget ssh scp rsync systemctl journalctl sqlite3 psql mysql redis-cli conda
"""
COMMAND_TOOLS = frozenset(_TOOL_NAMES.split())
# Tool names that are also ordinary English words: a command only when quoted or after `$`.
_AMBIGUOUS_TOOLS = frozenset({"make", "go", "node", "black", "helm"})

# Extensions that make a dotted token a file name rather than a symbol.
_EXTENSIONS = """
    py pyi md markdown txt toml yaml yml json jsonl csv tsv ini cfg conf lock log sql sqlite db
    js mjs cjs ts tsx jsx vue svelte css scss html htm xml svg png jpg jpeg gif pdf sh bash zsh
    rs go java kt c h cc cpp hpp cs rb php swift lua r ipynb env lark hql mdx rst tex gz zip
"""
FILE_EXTENSIONS = frozenset(_EXTENSIONS.split())

_SCRIPT_RANGES: tuple[tuple[str, str, str], ...] = (
    ("ja", "\u3040", "\u30ff"),  # kana: Japanese even beside kanji
    ("ko", "\uac00", "\ud7af"),
    ("ko", "\u1100", "\u11ff"),
    ("zh", "\u4e00", "\u9fff"),
    ("zh", "\u3400", "\u4dbf"),
    ("zh", "\uf900", "\ufaff"),
    ("ru", "\u0400", "\u04ff"),
    ("th", "\u0e00", "\u0e7f"),
    ("hi", "\u0900", "\u097f"),
    ("ar", "\u0600", "\u06ff"),
    ("he", "\u0590", "\u05ff"),
    ("el", "\u0370", "\u03ff"),
)
# Latin text's language: the stop-word list it uses most (English when none is used).
_LATIN_LANGUAGES = ("en", "pt", "es", "fr", "it", "de", "nl")
# A second script is "mixed" when it holds at least this share of the prompt's words.
MIXED_SHARE = 0.2

_BACKTICKED = re.compile(r"`([^`\n]+)`")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])")
_LIST_MARK = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|[a-z][.)]|#{1,6})\s+", re.IGNORECASE)
_SHELL_PROMPT = re.compile(r"^\s*\$\s+(.+)$")
# A technical token: letters, digits and the joiners code uses, with no space.
_TOKEN = re.compile(r"[~./]?[\w$@*?\[\]{}~+=-]+(?:(?:::|[./:\\])[\w$@*?\[\]{}~+=-]+)*/?")
_MARKED = re.compile(r"[./*?_:~]|[a-z][A-Z]|[A-Z]{2}[a-z]")
_COMMAND_WORD = re.compile(r"[a-z0-9][\w.:/=@+-]*|--?[\w][\w=.-]*")
_CAMEL_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_WORD = re.compile(r"\w+")
_LATIN_WORD = re.compile(r"[A-Za-z\u00c0-\u024f]+")

# Constraint markers per stop-word language; the constraint runs from the marker to the
# end of its clause.
_CONSTRAINT_MARKERS = re.compile(
    r"(?:\b(?:must(?:\s+not)?|should(?:\s+not)?|shouldn't|mustn't|never|always|only|"
    r"do\s+not|don't|does\s+not|doesn't|cannot|can't|avoid|without|"
    r"deve|devem|não|nunca|sempre|apenas|sem|"  # Portuguese
    r"debe|deben|nunca|siempre|solo|sólo|sin|"  # Spanish
    r"doit|doivent|jamais|toujours|seulement|sans|ne|"  # French
    r"deve|devono|mai|sempre|solo|senza|"  # Italian
    r"muss|müssen|soll|sollte|nie|niemals|immer|nur|nicht|ohne|"  # German
    r"moet|moeten|nooit|altijd|alleen|niet|zonder)\b"  # Dutch
    r"|必须|必需|务必|務必|应该|應該|应当|不要|不能|不可|不得|禁止|别|別|勿|只能|只|一定要|不需要|无需|無需)",
    re.IGNORECASE,
)
_CLAUSE_END = re.compile(r"[.;:!?](?=\s|$)|[。；：！？,，\n]")


@record
class Envelope:
    """What a prompt asks, taken apart (every field a tuple of strings, in prompt order)."""

    language: str
    segments: tuple[str, ...]
    commands: tuple[str, ...]
    paths: tuple[str, ...]
    symbols: tuple[str, ...]
    constraints: tuple[str, ...]
    keywords: tuple[str, ...]

    @property
    def technical(self) -> tuple[str, ...]:
        """The commands, paths and whole symbols, each once: what must match as a token."""
        return tuple(dict.fromkeys((*self.commands, *self.paths, *self.whole_symbols)))

    @property
    def whole_symbols(self) -> tuple[str, ...]:
        """The symbols as written (their parts left out)."""
        return tuple(symbol for symbol in self.symbols if _is_compound(symbol))

    def to_json(self) -> dict[str, Any]:
        return {
            "language": self.language,
            "segments": list(self.segments),
            "commands": list(self.commands),
            "paths": list(self.paths),
            "symbols": list(self.symbols),
            "constraints": list(self.constraints),
            "keywords": list(self.keywords),
        }


def read_envelope(prompt: str, analyzer: Any = None) -> Envelope:
    """The envelope of a prompt; `analyzer` (hql.text) finds the keywords (the defaults: None)."""
    commands = _commands(prompt)
    # Only a token with one of these marks can be a path or a symbol.
    tokens = [t for t in _candidate_tokens(prompt) if _MARKED.search(t)]
    paths = _paths(prompt, tokens)
    symbols = _symbols(tokens, set(paths))
    return Envelope(
        language=language_of(prompt, {*paths, *_whole(symbols)}),
        segments=tuple(segments_of(prompt)),
        commands=tuple(commands),
        paths=tuple(paths),
        symbols=tuple(symbols),
        constraints=tuple(_constraints(prompt)),
        keywords=tuple(_keywords(prompt, analyzer)),
    )


# --- language ------------------------------------------------------------------------------


def language_of(text: str, technical: Iterable[str] = ()) -> str:
    """`en`, `zh`, `ja`, `ko`, … from the scripts present; `mixed` when two hold a share
    of the words each; `und` for a text without letters. Technical tokens do not count."""
    for token in sorted(technical, key=len, reverse=True):
        text = text.replace(token, " ")
    counts: dict[str, float] = {}
    latin_words = _LATIN_WORD.findall(text)
    if latin_words:
        counts[_latin_language(latin_words)] = float(len(latin_words))
    for char in text:
        if char < "\u0370":
            continue
        script = _script_of(char)
        if script is not None:
            # Two CJK characters make about one word; other scripts count per character
            # here and are divided below into words of about five.
            counts[script] = counts.get(script, 0.0) + (0.5 if script in ("zh", "ja") else 0.2)
    if "ja" in counts and "zh" in counts:  # kanji beside kana are Japanese
        counts["ja"] += counts.pop("zh")
    if not counts:
        return "und"
    total = sum(counts.values())
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    if len(ranked) > 1 and ranked[1][1] / total >= MIXED_SHARE:
        return "mixed"
    return ranked[0][0]


def _script_of(char: str) -> str | None:
    for language, low, high in _SCRIPT_RANGES:
        if low <= char <= high:
            return language
    return None


def _latin_language(words: list[str]) -> str:
    counts = dict.fromkeys(_LATIN_LANGUAGES, 0)
    languages = _languages_of_stop_words()
    for word in words:
        for language in languages.get(word.casefold(), ()):
            counts[language] += 1
    best = max(_LATIN_LANGUAGES, key=lambda language: counts[language])  # ties: the first
    return best if counts[best] else "en"


_BY_WORD: dict[str, tuple[str, ...]] = {}


def _languages_of_stop_words() -> dict[str, tuple[str, ...]]:
    """Each Latin-script stop word and the languages that list it."""
    if not _BY_WORD:
        from hql.text.stopwords import BY_LANGUAGE

        found: dict[str, list[str]] = {}
        for language in _LATIN_LANGUAGES:
            for word in BY_LANGUAGE.get(language, "").split():
                found.setdefault(word, []).append(language)
        _BY_WORD.update({word: tuple(langs) for word, langs in found.items()})
    return _BY_WORD


# --- segments ------------------------------------------------------------------------------


def segments_of(prompt: str) -> list[str]:
    """Short task slices: lines, list items, sentences (each with a word in it)."""
    slices: list[str] = []
    for line in prompt.splitlines():
        line = _LIST_MARK.sub("", line).strip()
        if not line:
            continue
        for sentence in _SENTENCE_END.split(line):
            sentence = sentence.strip()
            if _WORD.search(sentence):
                slices.append(sentence)
    return slices


# --- technical tokens ------------------------------------------------------------------------


def _commands(prompt: str) -> list[str]:
    """Command-shaped text: a known tool and at least one subcommand or option."""
    found: list[str] = []
    quoted = [match.group(1) for match in _BACKTICKED.finditer(prompt)]
    shell = [
        match.group(1)
        for line in prompt.splitlines()
        if (match := _SHELL_PROMPT.match(line)) is not None
    ]
    for text in (*quoted, *shell):
        command = _command_at(text.split(), strict=False)
        if command:
            found.append(command)
    unquoted = _BACKTICKED.sub(" ", prompt)
    words = re.findall(r"\S+", unquoted)
    for index, word in enumerate(words):
        if word.casefold() in COMMAND_TOOLS and word.casefold() not in _AMBIGUOUS_TOOLS:
            command = _command_at(words[index:], strict=True)
            if command:
                found.append(command)
    return list(dict.fromkeys(found))


def _command_at(words: list[str], strict: bool) -> str | None:
    """The command that starts these words, or None (`strict`: free text, where a
    subcommand must look like one and a stop word ends it)."""
    if not words:
        return None
    tool = words[0].strip("\"'()[]{}<>,;").casefold()
    if tool not in COMMAND_TOOLS:
        return None
    parts = [tool]
    for word in words[1:]:
        end = word[-1] in ",;:!?)。，"
        word = word.strip("\"'()[]{}<>,;:!?。，")
        if not word or not _COMMAND_WORD.fullmatch(word):
            break
        if strict and (_is_stop_word(word) or len(parts) > 3 or not word.isascii()):
            break
        if strict and word.endswith(".") and not word.startswith("-"):
            word = word.rstrip(".")
            parts.append(word.casefold())
            break
        parts.append(word if not strict else word.casefold())
        if end:
            break
    return " ".join(parts) if len(parts) > 1 else None


def _is_stop_word(word: str) -> bool:
    return word.casefold() in _languages_of_stop_words()


def _candidate_tokens(prompt: str) -> list[str]:
    tokens = []
    for match in _TOKEN.finditer(prompt):
        token = match.group(0).rstrip(".:")
        if token:
            tokens.append(token)
    return tokens


def _paths(prompt: str, tokens: list[str]) -> list[str]:
    """Paths and globs: `src/a/b.py`, `./run.sh`, `*.md`, `hql.toml`."""
    found = []
    quoted = {match.group(1).strip() for match in _BACKTICKED.finditer(prompt)}
    for token in tokens:
        if token.startswith(("http:", "https:")) or "://" in token:
            continue
        if _is_path(token, token in quoted):
            found.append(token)
    return list(dict.fromkeys(found))


def _is_path(token: str, quoted: bool) -> bool:
    if not re.search(r"[A-Za-z0-9*]", token):
        return False
    if "*" in token or "?" in token.strip("?"):
        return "." in token or "/" in token  # a glob: `*.md`, `src/**`
    last = token.rstrip("/").rsplit("/", 1)[-1]
    has_extension = "." in last and last.rsplit(".", 1)[-1].casefold() in FILE_EXTENSIONS
    if has_extension and not last.startswith(".") and last.rsplit(".", 1)[0] == "":
        return False
    if has_extension:
        return True
    if token.startswith(("./", "../", "~/", "/")) and len(token) > 2:
        return True
    if token.count("/") >= 2 and not token.startswith("//"):
        return True
    if last.startswith(".") and len(last) > 1 and last[1:].isalnum():  # `.env`, `.gitignore`
        return True
    return quoted and "/" in token


def _symbols(tokens: list[str], paths: set[str]) -> list[str]:
    """Code symbols, each whole and then its parts: `readEnvelope` → readEnvelope, read, envelope."""
    found: list[str] = []
    for token in tokens:
        token = token.strip("()[]{}")
        if token.endswith("()"):
            token = token[:-2]
        if token in paths or not _is_compound(token):
            continue
        if "/" in token or "*" in token or token.startswith("-"):
            continue
        found.append(token)
        found.extend(symbol_parts(token))
    return list(dict.fromkeys(found))


def _is_compound(token: str) -> bool:
    """Whether a token is shaped like code: camelCase, snake_case, dotted or `::`."""
    if not token or not re.search(r"[A-Za-z]", token) or not token.isascii():
        return False
    if "::" in token or "_" in token.strip("_"):
        return True
    if "." in token.strip("."):
        parts = token.split(".")
        return all(part and re.fullmatch(r"[A-Za-z_$][\w$]*", part) for part in parts)
    return bool(re.search(r"[a-z][A-Z]|[A-Z]{2,}[a-z]", token))


def _whole(symbols: Iterable[str]) -> list[str]:
    return [symbol for symbol in symbols if _is_compound(symbol)]


def symbol_parts(symbol: str) -> list[str]:
    """The words of a symbol, lowercased: split at `::`, dots, underscores and camel humps."""
    parts = []
    for piece in re.split(r"::|[._$\\-]+", symbol):
        for part in _CAMEL_PART.findall(piece):
            if len(part) > 1 or part.isdigit():
                parts.append(part.casefold())
    return [part for part in dict.fromkeys(parts) if part != symbol.casefold()]


# --- constraints and keywords --------------------------------------------------------------


def _constraints(prompt: str) -> list[str]:
    """must / should / not phrases: from the marker to the end of its clause."""
    from hql.text.folding import case_sensitive, lowered

    found = []
    # Matched on the lower case where that finds the same places (hql.text.folding): the
    # case of every character tried is not folded.
    low = lowered(prompt)
    if low is not None:
        markers = case_sensitive(_CONSTRAINT_MARKERS).finditer(low)
    else:
        markers = _CONSTRAINT_MARKERS.finditer(prompt)
    for match in markers:
        end = _CLAUSE_END.search(prompt, match.end())
        phrase = prompt[match.start() : end.start() if end else len(prompt)].strip()
        if len(phrase) > match.end() - match.start():
            found.append(" ".join(phrase.split()))
    # A marker inside a phrase already found repeats it.
    kept: list[str] = []
    for phrase in found:
        if not any(phrase in other and phrase != other for other in found):
            kept.append(phrase)
    return list(dict.fromkeys(kept))


def _keywords(prompt: str, analyzer: Any) -> list[str]:
    """The prompt's words without stop words, each once, in prompt order."""
    if analyzer is None:
        from hql.text.analyzer import Analyzer

        analyzer = _default_analyzer(Analyzer)
    words = analyzer.analyze(prompt).words
    return [word for word in dict.fromkeys(words) if len(word) > 1 or not word.isascii()]


_DEFAULT: list[Any] = []


def _default_analyzer(make: Any) -> Any:
    if not _DEFAULT:
        _DEFAULT.append(make.from_config(None))
    return _DEFAULT[0]


__all__ = ["Envelope", "language_of", "read_envelope", "segments_of", "symbol_parts"]
