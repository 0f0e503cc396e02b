"""REPL completion from the registry, the session and the vault.

What is offered depends on what stands before the cursor:

    cards | ta▮              step names, each with its summary
    cards | take(co▮         the step's parameter names (not yet given), then bound names
    import lex▮              extension names
    [[barn▮                  card names, each with its title
    c.ti▮  x.metadata.st▮    fields of the receiver; keys found under `metadata` in the vault
    sco▮                     bound names, `cards`, functions and steps that may be called directly

Matching is fuzzy (a prefix first, then a substring, then the letters in order), and
only the text before the cursor decides, so completion works in the middle of a line.
Prefix matches keep the order they were offered in: the registry lists the everyday
steps first (`cards | fi` offers `filter` before `first`), bound names come before
library functions, parameters come in their declared order, card names shortest first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from hql import types as ty
from hql.api import Session, extension_metadata
from hql.checker import Checker, StepTyping, field_type, fields_of
from hql.diagnostics import HqlError
from hql.registry import StepSpec, installed
from hql.source import Span
from hql.syntax import tree as t
from hql.syntax.tokens import CLOSERS, Token, iter_highlight_tokens, layout

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
_IMPORT = re.compile(r"(?:^|[\n;])\s*import\s+([A-Za-z0-9_]*)$")
_AFTER_PIPE = re.compile(r"\|\s*([A-Za-z_][A-Za-z0-9_]*)?$")
_FIELD = re.compile(
    r"([A-Za-z_][A-Za-z0-9_]*|\]\]|\))((?:\.[A-Za-z_][A-Za-z0-9_]*)*)\.([A-Za-z0-9_]*)$"
)
_ARGUMENT_START = re.compile(r"[(,]\s*([A-Za-z_][A-Za-z0-9_]*)?$")
CARD_FIELDS = fields_of(ty.CARD)


@dataclass(frozen=True)
class Candidate:
    text: str
    meta: str = ""
    display: str | None = None
    later: bool = False  # offered after the others that match as well (an extension's key)


def fuzzy_rank(word: str, candidate: str) -> tuple[int, int, str] | None:
    """How well `word` matches `candidate` (lower is better), None when it does not."""
    if not word:
        return (0, 0, "")  # nothing typed yet: keep the order candidates were offered in
    lowered, wanted = candidate.lower(), word.lower()
    if lowered.startswith(wanted):
        return (0, 0, "")  # the order offered in (sorting is stable): the registry's, not length
    if wanted in lowered:
        return (1, lowered.index(wanted), candidate)
    position, spread = -1, 0
    for char in wanted:
        found = lowered.find(char, position + 1)
        if found < 0:
            return None
        spread += found - position - 1 if position >= 0 else 0
        position = found
    return (2, spread, candidate)


def rank(word: str, candidates: Iterable[Candidate]) -> list[Candidate]:
    scored: dict[str, tuple[tuple[int, bool, int, str], Candidate]] = {}
    for candidate in candidates:
        score = fuzzy_rank(word, candidate.text)
        if score is not None and candidate.text != word and candidate.text not in scored:
            how, spread, text = score
            scored[candidate.text] = ((how, candidate.later, spread, text), candidate)
    return [candidate for _, candidate in sorted(scored.values(), key=lambda pair: pair[0])]


class HqlCompleter(Completer):
    def __init__(self, session: Session) -> None:
        self.session = session
        self._metadata_keys: dict[tuple[str, ...], set[str]] | None = None

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterator[Completion]:
        before = document.text_before_cursor
        word, candidates = self.candidates(before, explicit=complete_event.completion_requested)
        # A card name completes the reference too, unless its `]]` is already there.
        closing = (
            "]]" if _open_docref(before) and not document.text_after_cursor.startswith("]]") else ""
        )
        for candidate in rank(word, candidates):
            yield Completion(
                candidate.text + closing,
                -len(word),
                display=candidate.display or candidate.text,
                display_meta=candidate.meta,
            )

    # --- deciding the context ---------------------------------------------------

    def candidates(self, before: str, *, explicit: bool = True) -> tuple[str, list[Candidate]]:
        """The word being completed and what may replace it."""
        if _open_docref(before):
            return before[before.rfind("[[") + 2 :], self.card_names()
        if _inside_string(before):
            return "", []
        if before.lstrip().startswith(":"):
            return self.command_candidates(before, explicit)
        if match := _IMPORT.search(before):
            return match.group(1), self.extensions()
        if match := _FIELD.search(before):
            return match.group(3), self.fields(match.group(1), match.group(2), before)
        if match := _AFTER_PIPE.search(before):
            return match.group(1) or "", self.steps(self.pipe_input_type(before[: match.start()]))
        word_match = _WORD.search(before)
        word = word_match.group(0) if word_match else ""
        if word_match and word_match.start() > 0 and before[word_match.start() - 1].isdigit():
            return "", []
        step = _enclosing_call(before) if _ARGUMENT_START.search(before) else None
        if not word and not explicit:
            # Just typed `(` or `,` of a step: its parameter names, without waiting for Tab.
            return "", self.parameters(step, before) if step is not None else []
        if step is not None:
            return word, self.parameters(step, before) + self.names()
        return word, self.names()

    def command_candidates(self, before: str, explicit: bool) -> tuple[str, list[Candidate]]:
        from hql.repl.commands import COMMANDS

        stripped = before.lstrip()
        if " " not in stripped:
            return stripped, [
                Candidate(name.split()[0], summary) for name, summary in COMMANDS.items()
            ]
        return self.candidates(stripped.partition(" ")[2], explicit=explicit)

    # --- candidate lists --------------------------------------------------------

    def steps(self, input_type: ty.Type | None = None) -> list[Candidate]:
        """Every step, or with a known input type only the steps that can take it."""
        imported = set(self.session.scope.imports)
        return [
            Candidate(
                spec.name,
                spec.summary
                if spec.extension in imported
                else f"{spec.summary} (import {spec.extension})",
            )
            for spec in installed().steps()
            if input_type is None or self.step_accepts(spec, input_type)
        ]

    def pipe_input_type(self, before_pipe: str) -> ty.Type | None:
        """The type flowing into the `|` being completed, when the text before it checks."""
        program = _statement_value(before_pipe)
        if program is None or not program.strip():
            return None
        outcome, _, _ = self.session.check(program, "<completion>")
        if outcome.failed or outcome.type is None:
            return None
        return outcome.type

    def step_accepts(self, spec: StepSpec, input_type: ty.Type) -> bool:
        """Does the step's typing rule take this input? (Its arguments are not judged here.)"""
        if input_type == ty.PRESENTATION:
            return spec.extension == "present"
        session = self.session
        checker = Checker(has_vault=session.vault is not None, scope=session.scope.copy())
        checker.vault = session.vault
        at_input, at_step = Span(0, 0), Span(1, 1)
        try:
            spec.check(StepTyping(checker, spec, _NO_NODE, input_type, at_input, {}, at_step))
        except HqlError as error:
            return error.report.span != at_input  # refused for its input, or only for arguments
        except Exception:  # a rule that reads an argument it was not given: the input was fine
            return True
        return True

    def extensions(self) -> list[Candidate]:
        return [Candidate(ext.name, ext.summary) for ext in installed().extensions.values()]

    def card_names(self) -> list[Candidate]:
        vault = self.session.vault
        if vault is None:
            return []
        # Shortest first: a concept's own card before the relation cards named after it.
        cards = sorted(vault.cards, key=lambda card: (len(card.name), card.name))
        return [Candidate(card.name, card.title) for card in cards]

    def names(self) -> list[Candidate]:
        found = [Candidate(name, str(kind)) for name, kind in self.session.scope.names.items()]
        if self.session.vault is not None:
            found.append(Candidate("cards", "every card of the vault"))
        found.extend(Candidate(name, spec.summary) for name, spec in installed().functions.items())
        imported = set(self.session.scope.imports)
        for extension in installed().extensions.values():
            found.extend(
                Candidate(
                    name,
                    spec.summary
                    if extension.name in imported
                    else f"{spec.summary} (import {extension.name})",
                )
                for name, spec in extension.functions.items()
            )
        found.extend(
            Candidate(spec.name, spec.summary) for spec in installed().steps() if spec.direct
        )
        found.extend(Candidate(word, "keyword") for word in ("import", "true", "false"))
        return found

    def parameters(self, step: str, before: str) -> list[Candidate]:
        specs = [spec for spec in installed().steps() if spec.name == step]
        functions = [
            ext.functions[step] for ext in installed().extensions.values() if step in ext.functions
        ]
        params = specs[0].params if specs else functions[0].params if functions else ()
        if not params:
            return []
        given = set(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*=(?!=|>)", before[before.rfind("(") :]))
        return [
            Candidate(
                f"{param.name} = ",
                f"{param.type}" + ("" if param.required else f", default {param.default!r}"),
                display=param.name,
            )
            for param in params
            if param.named and param.name not in given
        ]

    def fields(self, receiver: str, path: str, before: str = "") -> list[Candidate]:
        """Fields after `receiver.path.`, typed where the type is known; metadata keys from the vault."""
        current = self.receiver_type(receiver, before)
        steps = [part for part in path.split(".") if part]
        if current is None and not steps:
            return [Candidate(name, "field") for name in CARD_FIELDS]  # most likely a card
        for index, step in enumerate(steps):
            if step == "metadata" and (current is None or ty.is_document(current)):
                return self.metadata_candidates(tuple(steps[index + 1 :]))
            current = field_type(ty.strip_option(current), step) if current is not None else None
            if current is None:
                return []
        assert current is not None
        current = ty.strip_option(current)
        return [Candidate(name, str(field_type(current, name))) for name in fields_of(current)]

    def receiver_type(self, receiver: str, before: str) -> ty.Type | None:
        if receiver == "]]":
            return ty.CARD
        if re.search(rf"\b{re.escape(receiver)}\b[\w\s,]*\)?\s*=>", before):
            return self.lambda_input_type(before)
        return self.session.scope.names.get(receiver)

    def lambda_input_type(self, before: str) -> ty.Type | None:
        """The element type flowing into the step whose lambda is being written, by checking its input."""
        prefix = _pipeline_before_open_step(before)
        if prefix is None:
            return None
        prefix = re.sub(r"^\s*[A-Za-z_][A-Za-z0-9_]*\s*=(?![=>])", "", prefix)
        outcome, _, _ = self.session.check(prefix, "<completion>")
        if outcome.failed or outcome.type is None:
            return None
        return ty.element_type(outcome.type)

    def metadata_candidates(self, path: tuple[str, ...]) -> list[Candidate]:
        """Keys under `metadata.<path>`: the notes' own properties first, then the keys the
        extensions put on every card (under the extension's name), marked as theirs."""
        keys = sorted(self.metadata_keys(path))
        owners = set(extension_metadata())
        if path and path[0] in owners:
            return [Candidate(key, f"{path[0]} extension's key", later=True) for key in keys]
        if path:
            return [Candidate(key, "metadata key") for key in keys]
        own = [Candidate(key, "property") for key in keys if key not in owners]
        theirs = [
            Candidate(key, f"{key} extension's, not a property", later=True)
            for key in keys
            if key in owners
        ]
        return own + theirs

    def metadata_keys(self, path: tuple[str, ...]) -> set[str]:
        """Keys found under `metadata.<path>` in any card of the vault."""
        if self._metadata_keys is None:
            self._metadata_keys = _collect_keys(self.session.vault)
        return self._metadata_keys.get(path, set())


def _collect_keys(vault: Any) -> dict[tuple[str, ...], set[str]]:
    keys: dict[tuple[str, ...], set[str]] = {}

    def walk(tree: Any, path: tuple[str, ...], depth: int) -> None:
        if not isinstance(tree, dict) or depth > 6:
            return
        for key, value in tree.items():
            keys.setdefault(path, set()).add(str(key))
            walk(value, (*path, str(key)), depth + 1)

    for card in getattr(vault, "cards", ()):
        walk(card.metadata, (), 0)
    return keys


_NO_NODE = t.Name(Span(0, 0), "_")


def _statement_value(text: str) -> str | None:
    """`text` with the binding of its last statement dropped, so that it checks to that value.

    `x = cards | take(2) ` gives `cards | take(2) `; earlier statements stay, since the last
    one may use their names. None when the text cannot be laid out.
    """
    try:
        laid = layout(list(iter_highlight_tokens(text)))
    except HqlError:
        return None
    ends = [token.span.end for token in laid if token.kind == "NEWLINE"]
    data = text.encode("utf-8")
    start = ends[-1] if ends else 0
    head = data[:start].decode("utf-8", "replace")
    last = data[start:].decode("utf-8", "replace")
    return head + re.sub(r"^\s*[A-Za-z_][A-Za-z0-9_]*\s*(:[^=]*)?=(?![=>])", "", last)


def _inside_string(before: str) -> bool:
    """Is the cursor inside a string literal? (Strings never span lines.)"""
    line = before.rsplit("\n", 1)[-1]
    inside, escaped = False, False
    for char in line:
        if escaped:
            escaped = False
        elif char == "\\" and inside:
            escaped = True
        elif char == '"':
            inside = not inside
    return inside


def _open_brackets(before: str) -> tuple[list[Token], list[int]]:
    """The tokens before the cursor, and the indexes of the brackets still open there."""
    tokens = list(iter_highlight_tokens(before))
    stack: list[int] = []
    for index, token in enumerate(tokens):
        if token.kind in ("LPAR", "LBRACE", "LSQB"):
            stack.append(index)
        elif token.kind in CLOSERS and token.kind != "GT" and stack:
            stack.pop()
    return tokens, stack


def _enclosing_call(before: str) -> str | None:
    """The name written before the innermost `(` still open at the cursor."""
    tokens, stack = _open_brackets(before)
    if not stack:
        return None
    opener = stack[-1]
    if tokens[opener].kind != "LPAR" or opener == 0 or tokens[opener - 1].kind != "IDENT":
        return None
    return tokens[opener - 1].text


def _open_docref(before: str) -> bool:
    start = before.rfind("[[")
    return start >= 0 and "]]" not in before[start:]


def _pipeline_before_open_step(before: str) -> str | None:
    """`cards | take(2)` for `cards | take(2) | filter(c => c.`: the input of the open step."""
    tokens, stack = _open_brackets(before)
    for opener in reversed(stack):
        before_opener = [i for i in range(opener) if tokens[i].kind != "NEWLINE"][-2:]
        if len(before_opener) < 2:
            continue
        pipe_index, name_index = before_opener
        if tokens[name_index].kind == "IDENT" and tokens[pipe_index].kind == "PIPE":
            pipe = tokens[pipe_index]
            try:
                laid = layout(tokens[:pipe_index])
            except HqlError:
                return None
            ends = [token.span.end for token in laid if token.kind == "NEWLINE"]
            data = before.encode("utf-8")
            return data[(ends[-1] if ends else 0) : pipe.span.start].decode("utf-8", "replace")
    return None
