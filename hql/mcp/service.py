"""What the MCP server does, as plain functions over one vault, returning JSON-ready answers.

Nothing here imports the MCP SDK: `hql.mcp.server` wraps these for the
protocol, and tests and benchmarks call them directly. Every program runs
under the server's limits (a time budget, an answer size) and every user
mistake comes back as a report, never as an exception.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hql import messages
from hql.api import HostError, Outcome, Session, open_vault
from hql.deadline import Overrun, stop_every_program, within
from hql.diagnostics import Report, Severity, Stage, render
from hql.printing import to_json
from hql.source import Source, Span
from hql.values import ListValue, SetValue

if TYPE_CHECKING:
    from hql.vault import Vault

RANKERS = ("bm25", "semantic", "hybrid")
AUTO_RANKER = "auto"  # hybrid when the vault has a semantic index configured, else bm25
DEFAULT_SECONDS = 10.0
DEFAULT_OUTPUT_CHARS = 60_000


@dataclass(frozen=True)
class Limits:
    """What one untrusted call may cost: seconds of running, characters of answer."""

    seconds: float = DEFAULT_SECONDS
    output_chars: int = DEFAULT_OUTPUT_CHARS


class ToolFailure(Exception):
    """A call the server refuses (an unknown card, a path outside the vault): its message is the answer."""


# --- the vault, refreshed between calls ----------------------------------------------


WALK_SHARE = 10  # wait ten times as long as a stat walk took before walking again
# ... but never longer than this: a change on disk is seen by every call that starts this
# long (and one walk) after it, however large the vault (docs/agents.md, "Freshness").
MAX_WALK_WAIT = 2.0
WARM_PROGRAM = 'import bm25\ncards | bm25("index") | take(1)'


def _warm(vault: Vault) -> None:
    """Build what the first search needs; a failure here shows again, as a report, when a call meets it."""
    with contextlib.suppress(Exception):
        Session(vault).run(WARM_PROGRAM, "<warm>")


class LiveVault:
    """A vault loaded once and loaded again when a stat walk finds that its files changed.

    The walk finds documents by the loader's own rules and compares each one's
    size, modification time, inode and change time, and those of `hql.toml`: an
    agent that edits a card sees its edit on the next call, and so does one that
    copies a file over it keeping its size and modification time (`cp -p`). On a
    large vault the walk itself takes time, so after a walk that took t seconds the
    next one waits until 10 t have passed (on the sample vault t is a fraction of a
    millisecond), and never more than `MAX_WALK_WAIT`: walking costs at most a
    tenth of the server's time until a walk takes a fifth of a second, and a change
    on disk is seen by every call that starts `MAX_WALK_WAIT` plus one walk after
    it. A write through this server (`expire`) is seen by the very next call.

    With `warm`, each load is followed by building the bm25 index on a thread of
    its own, outside any call's time budget: on a large vault the first build can
    take longer than a budget allows, and a build stopped half-way is not kept.
    """

    def __init__(self, root: str | os.PathLike[str], warm: bool = False) -> None:
        self.root = os.fspath(root)
        self.warm = warm
        self._lock = threading.Lock()
        self._vault: Vault | None = None
        self._signature: tuple[Any, ...] | None = None
        self._next_walk = 0.0
        self.walk_share = WALK_SHARE
        self.max_walk_wait = MAX_WALK_WAIT
        self.clock: Callable[[], float] = time.monotonic
        self.loads = 0

    def get(self) -> Vault:
        with self._lock:
            started = self.clock()
            if self._vault is not None and started < self._next_walk:
                return self._vault
            signature = self._stat_walk()
            finished = self.clock()
            wait = min(self.walk_share * (finished - started), self.max_walk_wait)
            self._next_walk = finished + wait
            if self._vault is None or signature != self._signature:
                self._vault = open_vault(self.root)
                self._signature = signature
                self.loads += 1
                for item in self._vault.warnings:
                    print(f"warning: {item}", file=sys.stderr)
                if self.warm:
                    threading.Thread(
                        target=_warm, args=(self._vault,), name="hql-warm", daemon=True
                    ).start()
            return self._vault

    def expire(self) -> None:
        """Walk on the next call whatever the last walk cost (after this server wrote a file)."""
        with self._lock:
            self._next_walk = 0.0

    def _stat_walk(self) -> tuple[Any, ...]:
        from hql.vault import loader
        from hql.vault.catalog import stamp_of

        stats: list[Any] = []
        # the roots outside the vault that its hql.toml allows, as the last load read them
        allowed = getattr(self._vault.config, "allow_outside", ()) if self._vault else ()
        for found in loader.discover(self.root, [], allowed):
            status = found.status  # what the walk's `stat` said
            if not isinstance(status, os.stat_result):
                stats.append((found.relpath, None))
                continue
            stats.append((found.relpath, *stamp_of(status)))
        try:
            config = os.stat(Path(self.root) / "hql.toml")
            stats.append(("hql.toml", *stamp_of(config)))
        except OSError:
            stats.append(("hql.toml", None))
        return tuple(stats)


# --- answers ---------------------------------------------------------------------------


def report_json(report: Report, source: Source) -> dict[str, Any]:
    """A report with its line and column (1-based, in characters) and the caret text."""
    line, column = source.location(report.span.start)
    end_line, end_column = source.location(report.span.end)
    return {
        "severity": report.severity.word,
        "stage": report.stage.value,
        "message": report.message,
        "line": line,
        "column": column,
        "end_line": end_line,
        "end_column": end_column,
        "text": render(report, source),
    }


def reports_json(outcome: Outcome) -> list[dict[str, Any]]:
    return [report_json(report, outcome.source) for report in outcome.reports]


def overrun_outcome(program: str, origin: str, overrun: Overrun) -> Outcome:
    """The report a stopped program gets: the whole program is the culprit."""
    source = Source(program, origin)
    outcome = Outcome(source)
    if overrun.closing:
        message = messages.mcp_server_closing()
    else:
        message = messages.mcp_time_budget(overrun.seconds)
    outcome.reports.append(
        Report(Stage.EVALUATION, Severity.FAILURE, message, Span(0, len(source.data)))
    )
    return outcome


def encode(tree: Any) -> str:
    """Compact JSON; a non-finite float (which JSON cannot hold) becomes its text."""
    try:
        return json.dumps(tree, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except ValueError:
        return json.dumps(_finite(tree), ensure_ascii=False, separators=(",", ":"))


def _finite(tree: Any) -> Any:
    if isinstance(tree, float) and not math.isfinite(tree):
        return str(tree)
    if isinstance(tree, dict):
        return {key: _finite(value) for key, value in tree.items()}
    if isinstance(tree, list | tuple):
        return [_finite(item) for item in tree]
    return tree


def fit(
    answer: dict[str, Any], key: str | None, limit: int, total: int | None = None
) -> tuple[dict[str, Any], str]:
    """The answer and its JSON, shortened until the whole fits in `limit` characters.

    `answer[key]` goes first: a list (or a ranking's hits, a graph's nodes) keeps its
    first elements and says how many it dropped; anything else is replaced by the
    start of its JSON text. `total` is the length of the whole list when `answer[key]`
    already holds only its start. What is still too long after that (a report that
    quotes a huge line, a long question, a large header) is cut by `squeeze`.
    """
    if key is None:
        return squeeze(answer, encode(answer), limit)
    shortened, text = _fit_key(answer, key, limit, total)
    return squeeze(shortened, text, limit)


def squeeze(answer: dict[str, Any], text: str, limit: int) -> tuple[dict[str, Any], str]:
    """The answer with every string, list and large mapping in it cut to the longest
    length at which the whole still fits, and a note saying so; as it was if it fits."""
    if len(text) <= limit:
        return answer, text
    previous = answer.get("truncated")
    earlier = previous.get("note") if isinstance(previous, dict) else None

    def trial(cap: int) -> dict[str, Any]:
        cut: dict[str, Any] = _capped(answer, cap)
        note = messages.mcp_truncated_everywhere(limit, cap)
        kept = cut.get("truncated")
        cut["truncated"] = {
            **(kept if isinstance(kept, dict) else {}),
            "note": f"{earlier}; {note}" if isinstance(earlier, str) else note,
        }
        return cut

    low, high = 0, _longest(answer)  # the largest cap that fits
    while low < high:
        middle = (low + high + 1) // 2
        if len(encode(trial(middle))) <= limit:
            low = middle
        else:
            high = middle - 1
    squeezed = trial(low)
    return squeezed, encode(squeezed)


_FEW_KEYS = 16  # a mapping this small is a record of the answer's shape: never cut


def _capped(tree: Any, cap: int) -> Any:
    if isinstance(tree, str):
        return tree if len(tree) <= cap else tree[:cap] + "…"
    if isinstance(tree, list | tuple):
        return [_capped(item, cap) for item in tree[:cap]]
    if isinstance(tree, dict):
        entries = list(tree.items())[: max(cap, _FEW_KEYS)]
        return {_capped(str(key), cap): _capped(value, cap) for key, value in entries}
    return tree


def _longest(tree: Any) -> int:
    if isinstance(tree, str):
        return len(tree)
    if isinstance(tree, list | tuple):
        return max([len(tree), *(_longest(item) for item in tree)])
    if isinstance(tree, dict):
        sizes = (max(len(str(key)), _longest(value)) for key, value in tree.items())
        return max([len(tree), *sizes])
    return 0


def _fit_key(
    answer: dict[str, Any], key: str, limit: int, total: int | None
) -> tuple[dict[str, Any], str]:
    text = encode(answer)
    value = answer[key]
    items, rebuild = _sequence(value)
    if len(text) <= limit and (total is None or items is None):
        return answer, text
    if items is not None:
        total = len(items) if total is None else total
        low, high = 0, len(items)  # the most elements that fit
        while low < high:
            middle = (low + high + 1) // 2
            trial = {**answer, key: rebuild(items[:middle]), "truncated": {"note": ""}}
            if len(encode(trial)) + 200 <= limit:
                low = middle
            else:
                high = middle - 1
        if low > 0 or not items:
            shortened = {
                **answer,
                key: rebuild(items[:low]),
                "truncated": {
                    "shown": low,
                    "total": total,
                    "note": messages.mcp_truncated_items(low, total, limit),
                },
            }
            return shortened, encode(shortened)
    rest = {**answer, key: None}
    room = max(0, limit - len(encode(rest)) - 300)
    value_text = encode(value)[:room]
    shortened = {
        **rest,
        "truncated": {
            "shown_characters": len(value_text),
            "total_characters": len(encode(value)),
            "note": messages.mcp_truncated_text(limit),
            "start": value_text,
        },
    }
    return shortened, encode(shortened)


def _sequence(value: Any) -> tuple[list[Any] | None, Callable[[list[Any]], Any]]:
    if isinstance(value, list):
        return value, lambda items: items
    if isinstance(value, dict):
        for key in ("hits", "nodes", "entries"):
            if isinstance(value.get(key), list):
                return value[key], lambda items, key=key: {**value, key: items}
    return None, lambda items: items


# --- the service -----------------------------------------------------------------------


def _accepts_params() -> bool:
    """Whether this HQL's `Session.run` takes `$name` parameters."""
    return "params" in inspect.signature(Session.run).parameters


class VaultService:
    """The tools of the MCP server over one live vault, each returning a JSON-ready dict."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        limits: Limits | None = None,
        allow_write: bool = False,
        warm: bool = False,
        mode: str | None = None,
    ) -> None:
        self.live = LiveVault(root, warm=warm)
        self.mode = mode  # the report mode (`--report`); None: the vault's, then the default
        self.limits = limits or Limits()
        self.allow_write = allow_write
        self.params_supported = _accepts_params()

    # -- running programs

    def _run(
        self,
        program: str,
        origin: str,
        *,
        evaluate: bool = True,
        params: dict[str, Any] | None = None,
        then: Callable[[Outcome], Any] | None = None,
    ) -> Any:
        """The program's outcome (or `then(outcome)`), both under the time budget; the
        overrun's outcome when the budget ran out."""
        vault = self.live.get()

        def work() -> Any:
            session = Session(vault, self.mode)
            if params:
                outcome = session.run(program, origin, evaluate=evaluate, params=params)
            else:
                outcome = session.run(program, origin, evaluate=evaluate)
            return then(outcome) if then is not None else outcome

        return self._bounded(program, origin, work)

    def _bounded(self, program: str, origin: str, work: Callable[[], Any]) -> Any:
        try:
            return within(self.limits.seconds, work)
        except Overrun as overrun:
            return overrun_outcome(program, origin, overrun)

    def _answer(self, outcome: Outcome) -> dict[str, Any]:
        """The answer to a program, already within the output limit."""
        value, total = None, None
        if outcome.evaluated and not outcome.failed:
            value, total = self._project(outcome.value)
        answer: dict[str, Any] = {
            "ok": not outcome.failed,
            "type": str(outcome.type) if outcome.type is not None and not outcome.failed else None,
            "value": value,
            "reports": reports_json(outcome),
        }
        return fit(answer, "value", self.limits.output_chars, total)[0]

    def _project(self, value: Any) -> tuple[Any, int | None]:
        """The value's JSON projection and, when a long list or set was projected only as far
        as the output limit reaches, its whole length: a huge value is never projected whole."""
        if not isinstance(value, ListValue | SetValue):
            return to_json(value), None
        projected: list[Any] = []
        size = 0
        for item in value.items:
            if size > self.limits.output_chars:
                return projected, len(value.items)
            tree = to_json(item)
            size += len(encode(tree)) + 1
            projected.append(tree)
        return projected, None

    def finish(
        self, answer: dict[str, Any], key: str | None = "value"
    ) -> tuple[dict[str, Any], str]:
        """The answer within the output limit, and its JSON text (`key`: what to shorten first)."""
        return fit(answer, key, self.limits.output_chars)

    # -- about the vault

    def description(self) -> str | None:
        """The vault's own `[mcp] description` in its hql.toml, if it has one."""
        text = self.live.get().config.section("mcp").get("description")
        return text if isinstance(text, str) else None

    def describe(self) -> dict[str, Any]:
        """Where the vault is, how many cards it holds, and what its indexes offer."""
        vault = self.live.get()
        return {
            "path": vault.root_text,
            "cards": len(vault.cards),
            "writable": self.allow_write,
            "indexes": {"bm25": messages.MCP_BM25_OFFER, "semantic": _semantic_offer(vault)},
        }

    # -- tools

    def query(self, program: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        if params and not self.params_supported:
            raise ToolFailure(messages.mcp_params_unsupported())
        from hql.api import HostError

        # projected inside the budget: a program whose value is huge is stopped, not its answer
        try:
            answer = self._run(program, "<query>", params=params, then=self._answer)
        except HostError as error:  # a parameter HQL cannot bind (a JSON null): the reason
            raise ToolFailure(str(error)) from None
        return self._answer(answer) if isinstance(answer, Outcome) else answer

    def check(self, program: str) -> dict[str, Any]:
        outcome = self._run(program, "<check>", evaluate=False)
        return {
            "ok": not outcome.failed,
            "type": str(outcome.type) if outcome.type is not None and not outcome.failed else None,
            "reports": reports_json(outcome),
        }

    def default_ranker(self) -> tuple[str, str]:
        """The ranker `auto` stands for in this vault, and why (the answer says both)."""
        from hql.index.config import meaning_configured
        from hql.index.errors import SemanticIndexError
        from hql.index.semantic import settings_of

        vault: Any = self.live.get()  # a Vault is what `settings_of` reads
        try:
            config = settings_of(vault)
        except SemanticIndexError:
            return "bm25", messages.mcp_ranker_bm25_bad_semantics()
        if meaning_configured(config):
            return "hybrid", messages.mcp_ranker_hybrid()
        return "bm25", messages.mcp_ranker_bm25()

    def search_program(self, question: str, k: int, ranker: str, relevant: bool) -> str:
        if ranker == AUTO_RANKER:
            ranker = self.default_ranker()[0]
        if ranker not in RANKERS:
            raise ToolFailure(messages.mcp_unknown_ranker(ranker, (*RANKERS, AUTO_RANKER)))
        if k < 1:
            raise ToolFailure(messages.mcp_bad_k(k))
        steps = [f"{ranker}({string_literal(question)})"]
        if relevant:
            steps.append("relevant")
        steps.append(f"take({k})")
        return f"import {ranker}\ncards | " + " | ".join(steps)

    def search(
        self, question: str, k: int = 10, ranker: str = AUTO_RANKER, relevant: bool = True
    ) -> dict[str, Any]:
        why = messages.mcp_ranker_asked(ranker)
        if ranker == AUTO_RANKER:
            ranker, why = self.default_ranker()
        program = self.search_program(question, k, ranker, relevant)
        outcome = self._run(program, "<search>")
        answer: dict[str, Any] = {
            "ok": not outcome.failed,
            "ranker": ranker,
            "ranker_reason": why,
            "program": program,
            "hits": [],
            "retrieval": None,
            "reports": reports_json(outcome),
        }
        return _with_ranking(answer, outcome, "hits", _hit_json)

    def recall(self, question: str, k: int = 10) -> dict[str, Any]:
        if k < 1:
            raise ToolFailure(messages.mcp_bad_k(k))
        program = f"cards | recall({string_literal(question)}) | take({k})"
        outcome = self._run(program, "<recall>")
        answer: dict[str, Any] = {
            "ok": not outcome.failed,
            "program": program,
            "concepts": [],
            "retrieval": None,
            "reports": reports_json(outcome),
        }
        return _with_ranking(answer, outcome, "concepts", _concept_json)

    def explain(self, program: str) -> dict[str, Any]:
        from hql.explain import describe_ranking, trace
        from hql.values import Ranking

        vault = self.live.get()

        def work() -> dict[str, Any]:
            run = trace(Session(vault, self.mode), program, "<explain>")
            stages = [
                {
                    "stage": record.text,
                    "input": str(record.input) if record.input else None,
                    "output": str(record.output),
                    "ms": round(record.seconds * 1000, 3),
                }
                for record in run.records
            ]
            retrievals: list[dict[str, Any]] = []
            seen: list[Any] = []
            for record in run.records:
                if isinstance(record.value, Ranking) and not any(
                    r is record.value.retrieval for r in seen
                ):
                    seen.append(record.value.retrieval)
                    retrievals.append(
                        {
                            "stage": record.text,
                            "retrieval": _plain(record.value.retrieval.as_tree()),
                            "text": "\n".join(describe_ranking(record.value, heading=record.text)),
                        }
                    )
            outcome = run.outcome
            evaluated = run.plan is not None and not outcome.failed
            return {
                "ok": not outcome.failed,
                "type": str(run.plan.result) if run.plan is not None else None,
                "stages": stages,
                "total_ms": round(run.seconds * 1000, 3),
                "rewrites": list(getattr(run.plan, "rewrites", ())),
                "retrievals": retrievals,
                "value": self._project(run.value)[0] if evaluated else None,
                "reports": reports_json(outcome),
            }

        result = self._bounded(program, "<explain>", work)
        if isinstance(result, Outcome):  # stopped
            return {**self._answer(result), "stages": [], "retrievals": []}
        answer: dict[str, Any] = result
        return answer

    def context(
        self,
        prompt: str,
        budget: int = 2000,
        max_items: int = 8,
        format: str = "markdown",  # noqa: A002 (the tool's argument)
        diagnostics: bool = False,
        statuses: list[str] | None = None,
    ) -> dict[str, Any]:
        """The context block for a prompt (hql.context.read_path), under the time budget."""
        from hql.context.block import FORMATS, ContextError
        from hql.context.read_path import assemble
        from hql.vault.recall import asked_statuses

        if not prompt.strip():
            raise ToolFailure(messages.context_prompt_empty())
        if budget < 1 or max_items < 1 or format not in FORMATS:
            raise ToolFailure(messages.mcp_context_arguments(budget, max_items, format))
        try:
            allowed = asked_statuses(statuses)
        except ValueError as error:
            raise ToolFailure(str(error)) from None
        vault = self.live.get()
        warnings: list[str] = []

        def work() -> Any:
            return assemble(
                vault,
                prompt,
                budget=budget,
                max_items=max_items,
                format=format,
                statuses=allowed,
                warn=warnings.append,
            )

        try:
            block = within(self.limits.seconds, work)
        except Overrun as overrun:
            raise ToolFailure(messages.mcp_context_overrun(overrun.seconds)) from None
        except ContextError as error:
            raise ToolFailure(str(error)) from None
        answer: dict[str, Any] = {
            "ok": True,
            "block": block.rendered,
            "tokens": block.tokens,
            "token_kind": block.token_kind,
            "items": [
                {
                    "card": item.name,
                    "title": item.title,
                    "scope": item.scope,
                    "priority": item.priority,
                    "tokens": item.tokens,
                }
                for item in block.items
            ],
            "trimmed": [cut.to_json() for cut in block.trimmed],
            "abstention": block.abstention,
            "warnings": list(dict.fromkeys(warnings)),
        }
        if diagnostics:
            answer["diagnostics"] = block.diagnostics
        return answer

    def card(self, name: str) -> dict[str, Any]:
        from hql.context.read_path import find_card

        vault = self.live.get()
        card = vault.card(name) or find_card(vault, name)  # a library's card by its qualified name
        if card is None:
            from hql.registry import closest

            nearest = closest(name, [c.name for c in vault.cards], limit=3)
            raise ToolFailure(messages.mcp_unknown_card(name, nearest))
        links = getattr(card, "outlinks", None)
        if links is None:
            links = _unique(edge.target for edge in vault.uplinks(name))
        backlinks = getattr(card, "inlinks", None)
        if backlinks is None:
            backlinks = _unique(edge.source for edge in vault.downlinks(name))
        tags = getattr(card, "tags", None)
        if tags is None:
            found = card.metadata.get("tags")
            tags = [str(tag) for tag in found] if isinstance(found, list) else []
        return {
            "name": card.name,
            "title": card.title,
            "kind": card.kind,
            "path": card.relpath,
            "metadata": card.metadata,
            "tags": list(tags),
            "links": list(links),
            "backlinks": list(backlinks),
            **{
                field: getattr(card, field)
                for field in ("aliases", "unresolved", "headings", "tasks")
                if hasattr(card, field)
            },
            "body": card.body,
        }

    def card_text(self, name: str) -> str:
        """A card's document as written, byte for byte (what the `hql://card/{name}` resource
        reads): line endings and a byte-order mark kept, read only from a regular file whose
        real path is inside the vault (or a root its `allow_outside` names), never blocking."""
        from hql import files

        vault = self.live.get()
        card = vault.card(name)
        if card is None:
            raise ToolFailure(messages.mcp_unknown_card(name, None))
        containment = files.Containment(vault.root, vault.config.allow_outside)
        try:
            data = files.read_contained(card.path, containment, files.MAX_DOCUMENT_BYTES)
            return data.decode("utf-8")
        except files.Outside:
            raise ToolFailure(messages.mcp_card_outside(name)) from None
        except (OSError, UnicodeDecodeError) as error:
            raise ToolFailure(messages.cannot_read(card.relpath, error)) from None

    def cards(self) -> dict[str, Any]:
        vault = self.live.get()
        return {
            "vault": vault.root_text,
            "cards": [{"name": c.name, "title": c.title, "kind": c.kind} for c in vault.cards],
            "warnings": [str(item) for item in vault.warnings],
        }

    def cards_text(self) -> str:
        """The `hql://cards` resource: the card list within the output limit."""
        return self.finish(self.cards(), "cards")[1]

    def render(self, document: str) -> dict[str, Any]:
        """Run a document's hql blocks and write their answers into it, atomically."""
        if not self.allow_write:
            raise ToolFailure(messages.mcp_write_not_allowed())
        from hql import files
        from hql.render import render_document, save_document

        path = self._document_path(document)
        vault = self.live.get()
        try:
            original = files.read_regular(path, files.MAX_DOCUMENT_BYTES)
            text = original.decode("utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise ToolFailure(messages.cannot_read(document, error)) from None

        def work() -> Any:
            return render_document(text, str(path), Session(vault, self.mode))

        rendered = self._bounded(text, document, work)
        if isinstance(rendered, Outcome):
            return {"ok": False, "path": document, "written": False, **self._answer(rendered)}
        changed = rendered.text != text
        if changed:
            # written from the vault's root down: the document is replaced only if it still
            # holds what was rendered, and never through a folder swapped for a symlink
            try:
                save_document(str(path), original, rendered.text.encode("utf-8"), self.live.root)
            except files.Conflict:
                raise ToolFailure(messages.render_changed_meanwhile(document)) from None
            except OSError as error:
                raise ToolFailure(messages.cannot_write(document, error)) from None
            self.live.expire()
        return {
            "ok": rendered.failed == 0,
            "path": document,
            "blocks": rendered.blocks,
            "failed_blocks": rendered.failed,
            "written": changed,
        }

    def _document_path(self, document: str) -> Path:
        root = Path(self.live.root).resolve()
        path = (root / document).resolve()
        if not path.is_relative_to(root):
            raise ToolFailure(messages.mcp_outside_vault(document))
        if not path.is_file():
            raise ToolFailure(messages.mcp_no_document(document))
        return path


# --- several vaults --------------------------------------------------------------------


@dataclass(frozen=True)
class VaultEntry:
    """One vault a server offers: the name tools call it by, its folder, what it holds."""

    name: str
    root: str
    description: str | None = None


def entries_from_folders(folders: list[str]) -> list[VaultEntry]:
    """`--vault A --vault B`: each vault named after its folder (two folders of one name refused)."""
    entries: list[VaultEntry] = []
    for folder in folders:
        name = Path(folder).resolve().name or "vault"
        if any(entry.name == name for entry in entries):
            raise HostError(messages.mcp_vault_name_taken(name, folder))
        entries.append(VaultEntry(name, folder))
    return entries


def entries_from_file(path: str) -> list[VaultEntry]:
    """The `[mcp.vaults.NAME]` tables of a TOML file (`path`, `description`), in their order;
    a relative `path` is relative to the file."""
    import tomllib

    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise HostError(messages.cannot_read(path, error)) from None
    except tomllib.TOMLDecodeError as error:
        raise HostError(messages.mcp_vaults_file_bad(path, str(error))) from None
    tables = raw.get("mcp", {}).get("vaults") if isinstance(raw.get("mcp"), dict) else None
    if not isinstance(tables, dict) or not tables:
        raise HostError(messages.mcp_vaults_file_bad(path, messages.mcp_vaults_file_shape()))
    entries = []
    for name, table in tables.items():
        folder = table.get("path") if isinstance(table, dict) else None
        description = table.get("description") if isinstance(table, dict) else None
        if not isinstance(folder, str) or not isinstance(description, str | None):
            raise HostError(messages.mcp_vaults_file_bad(path, messages.mcp_vaults_file_shape()))
        root = Path(path).parent / Path(folder).expanduser()
        entries.append(VaultEntry(name, os.fspath(root), description))
    return entries


class Vaults:
    """The vaults one server offers, each a `VaultService`, by name; a call that names none
    is answered by the first."""

    def __init__(
        self,
        entries: list[VaultEntry],
        limits: Limits | None = None,
        allow_write: bool = False,
        warm: bool = False,
        mode: str | None = None,
    ) -> None:
        self.entries = {entry.name: entry for entry in entries}
        self.services = {
            entry.name: VaultService(entry.root, limits, allow_write, warm, mode)
            for entry in entries
        }
        self.default = entries[0].name
        self.allow_write = allow_write

    @property
    def first(self) -> VaultService:
        return self.services[self.default]

    def get(self, name: str | None) -> VaultService:
        """The vault a call names (None: the first); an unknown name is refused with the names."""
        if name is None or name == "":
            return self.first
        service = self.services.get(name)
        if service is None:
            raise ToolFailure(messages.mcp_unknown_vault(name, list(self.services)))
        return service

    def listing(self) -> dict[str, Any]:
        """The `vaults` tool: every vault with its description, card count and indexes."""
        return {
            "default": self.default,
            "vaults": [
                {
                    "name": name,
                    "description": self.entries[name].description or service.description(),
                    **service.describe(),
                }
                for name, service in self.services.items()
            ],
        }


def string_literal(text: str) -> str:
    """An HQL string literal that reads back as `text` (line breaks become spaces)."""
    text = text.replace("\r\n", " ").replace("\r", " ")
    escaped = (
        text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    )
    return f'"{escaped}"'


def _semantic_offer(vault: Vault) -> dict[str, Any]:
    """What `semantic` and `hybrid` can use here: the index's model, or why there is none."""
    from hql.index.config import load_semantics_config, resolve_index_path
    from hql.index.errors import SemanticIndexError
    from hql.index.producer import inspect_index

    try:
        config = load_semantics_config(vault.config.raw)
        if config.index is not None and config.store == "qdrant":
            model = config.embedder.model if config.embedder is not None else None
            return {"available": True, "store": "qdrant", "model": model}
        configured = config.require_index(for_producer=True)
        result = inspect_index(resolve_index_path(Path(vault.root), configured))
    except SemanticIndexError as error:
        return {"available": False, "why": error.message}
    return {
        "available": True,
        "store": "sqlite",
        "model": result.model.id,
        "revision": result.model.revision,
        "dimensions": result.model.dimensions,
        "cards": result.cards,
    }


def _with_ranking(
    answer: dict[str, Any], outcome: Outcome, key: str, item: Callable[[int, Any], Any]
) -> dict[str, Any]:
    """`answer` with the ranking's provenance and its hits under `key`, when it ran."""
    ranking = outcome.value if outcome.evaluated and not outcome.failed else None
    if ranking is not None:
        answer["retrieval"] = _plain(ranking.retrieval.as_tree())
        answer[key] = [item(rank, hit) for rank, hit in enumerate(ranking.hits, start=1)]
    return answer


def _hit_json(rank: int, hit: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "rank": rank,
        "card": hit.card.name,
        "title": hit.card.title,
        "score": hit.score,
    }
    detail = hit.detail or {}
    matched = detail.get("matched")
    if isinstance(matched, dict):
        entry["matched"] = dict(sorted(matched.items(), key=lambda item: -item[1]))
    for key, value in detail.items():
        if key != "matched":
            entry[key] = _plain(value)
    return entry


def _concept_json(rank: int, hit: Any) -> dict[str, Any]:
    concept = hit.card  # a Hit<Concept>: the concept stands where a card would
    tree = concept.tree()
    entry: dict[str, Any] = {
        "rank": rank,
        "name": concept.name,
        "title": concept.title,
        "source": concept.source,
        "labels": tree["labels"],
        "links": tree["links"],
        "card": tree["card"],
        "score": hit.score,
    }
    matched = (hit.detail or {}).get("matched")
    if isinstance(matched, dict):
        entry["matched"] = dict(sorted(matched.items(), key=lambda item: -item[1]))
    return entry


def _plain(tree: Any) -> Any:
    """Plain JSON data from a provenance tree (tuples become lists, other objects their text)."""
    if isinstance(tree, dict):
        return {str(key): _plain(value) for key, value in tree.items()}
    if isinstance(tree, list | tuple):
        return [_plain(item) for item in tree]
    if tree is None or isinstance(tree, bool | int | float | str):
        return tree
    return str(tree)


def _unique(names: Any) -> list[str]:
    return list(dict.fromkeys(names))


__all__ = [
    "HostError",
    "Limits",
    "LiveVault",
    "ToolFailure",
    "VaultEntry",
    "VaultService",
    "Vaults",
    "stop_every_program",
    "within",
]
