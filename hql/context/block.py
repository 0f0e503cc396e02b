"""The `Context` value: the cards a task may need, within a token budget, rendered.

A context block is what an agent puts in a model's context before it works: a
short, neutral text naming each card (title, summary, when to use it and when
to ignore it, what matched, how to read it whole), never the whole card. It is
built from a ranking that already says which cards pass (`relevant`, or the
evidence rule of the read path), in rank order:

- tokens are estimated as ceil(characters / 4), labelled `estimated`; a
  caller that counts for a model passes `count_tokens` and they are `measured`;
- `must` cards are placed first: they are required, and when one of them does
  not fit the budget (or `max_items`), building the block fails naming it,
  instead of dropping it quietly;
- the other cards follow in rank order while they fit; a card that does not
  fit is trimmed with its reason and smaller later cards may still fit;
- nothing passing (an empty ranking) is an abstention: the block is empty
  and the value says why.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hql import messages
from hql.context.collapse import priority_of
from hql.record import field, record

MARKDOWN = "markdown"
JSON = "json"
FORMATS = (MARKDOWN, JSON)
DEFAULT_BUDGET = 2000
DEFAULT_MAX_ITEMS = 8
ESTIMATED = "estimated"
MEASURED = "measured"
# Characters of a card's opening shown when it declares no summary.
EXCERPT_CHARS = 280
MATCHED_TERMS_SHOWN = 6
_ANNOTATION = re.compile(r"\]\]\s*\{[^{}\n]*\}")
_SPACES = re.compile(r"\s+")

TokenCounter = Callable[[str], int]


class ContextError(Exception):
    """A block that cannot be built as asked (a required card that does not fit)."""


def estimate_tokens(text: str) -> int:
    """ceil(characters / 4): the estimate every block states as `estimated`."""
    return math.ceil(len(text) / 4)


@record
class Item:
    """One card in the block, as the block shows it."""

    name: str
    title: str
    scope: str
    priority: str
    score: float
    summary: str | None
    excerpt: str | None
    use_when: tuple[str, ...]
    ignore_when: tuple[str, ...]
    matched_by: tuple[str, ...]
    read: str
    collapsed: tuple[str, ...] = ()
    tokens: int = 0
    rendered: str = ""

    def to_json(self, token_kind: str = ESTIMATED) -> dict[str, Any]:
        return {
            "card": self.name,
            "title": self.title,
            "scope": self.scope,
            "priority": self.priority,
            "score": self.score,
            "summary": self.summary,
            "excerpt": self.excerpt,
            "use_if": list(self.use_when),
            "ignore_if": list(self.ignore_when),
            "matched_by": list(self.matched_by),
            "read": self.read,
            "collapsed": list(self.collapsed),
            "tokens": {"count": self.tokens, "kind": token_kind},
        }

    def block_json(self) -> dict[str, Any]:
        """What the rendered JSON block holds for this card (no bookkeeping)."""
        shown: dict[str, Any] = {"card": self.name, "title": self.title}
        if self.summary:
            shown["summary"] = self.summary
        elif self.excerpt:
            shown["excerpt"] = self.excerpt
        if self.use_when:
            shown["use_if"] = list(self.use_when)
        if self.ignore_when:
            shown["ignore_if"] = list(self.ignore_when)
        if self.matched_by:
            shown["matched_by"] = list(self.matched_by)
        shown["read"] = self.read
        return shown


@record
class Trimmed:
    """A card that passed but is not in the block, and why."""

    name: str
    reason: str
    tokens: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"card": self.name, "reason": self.reason, "tokens": self.tokens}


@record
class Context:
    """A context block: the items chosen, what was trimmed, the rendered text, diagnostics."""

    items: tuple[Item, ...]
    trimmed: tuple[Trimmed, ...]
    rendered: str
    format: str
    budget: int
    max_items: int
    tokens: int
    token_kind: str = ESTIMATED
    abstention: str | None = None  # why the block is empty, when it is
    diagnostics: dict[str, Any] = field(default_factory=dict)

    def display(self) -> str:
        if self.abstention is not None and not self.items:
            return messages.context_abstained_display(self.abstention)
        return self.rendered

    def to_json(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "budget": self.budget,
            "max_items": self.max_items,
            "tokens": {"count": self.tokens, "kind": self.token_kind},
            "items": [item.to_json(self.token_kind) for item in self.items],
            "trimmed": [item.to_json() for item in self.trimmed],
            "abstention": self.abstention,
            "rendered": self.rendered,
            "diagnostics": self.diagnostics,
        }

    def context_field(self, name: str) -> Any:
        """`block.items`, `block.rendered`, … as the language reads them."""
        from hql.values import ABSENT, Data, ListValue

        if name == "items":
            return ListValue(tuple(Data(item.to_json(self.token_kind)) for item in self.items))
        if name == "trimmed":
            return ListValue(tuple(Data(item.to_json()) for item in self.trimmed))
        if name == "rendered":
            return self.rendered
        if name == "tokens":
            return self.tokens
        if name == "abstention":
            return ABSENT if self.abstention is None else self.abstention
        return Data(self.diagnostics)

    def table_rows(self) -> tuple[list[str], list[list[str]]]:
        header = ["rank", "card", "scope", "priority", "tokens", "status"]
        rows = [
            [str(rank), item.name, item.scope, item.priority, str(item.tokens), "in the block"]
            for rank, item in enumerate(self.items, start=1)
        ]
        rows += [["", cut.name, "", "", str(cut.tokens), cut.reason] for cut in self.trimmed]
        return header, rows


# --- what a card shows ----------------------------------------------------------------


def item_for(
    hit: Any,
    fields: Any = None,
    read: Callable[[str], str] | None = None,
) -> Item:
    """The block's item for a hit; `fields` are its recall fields (summary, use_when, …)."""
    card = hit.card
    detail = hit.detail if isinstance(hit.detail, Mapping) else {}
    summary = getattr(fields, "summary", None) if fields is not None else None
    if summary is None:
        summary = _text_field(card.metadata.get("summary"))
    use_when = tuple(getattr(fields, "use_when", ()) or _phrases(card.metadata.get("use_when")))
    ignore_when = tuple(
        getattr(fields, "ignore_when", ()) or _phrases(card.metadata.get("ignore_when"))
    )
    priority = getattr(fields, "priority", None) or priority_of(hit)
    name = card.name
    return Item(
        name=name,
        title=card.title or name,
        scope=str(getattr(card, "scope", None) or "project"),
        priority=str(priority),
        score=float(hit.score),
        summary=summary,
        excerpt=None if summary else excerpt(card.body),
        use_when=use_when,
        ignore_when=ignore_when,
        matched_by=matched_by(detail),
        read=(read or read_hint)(name),
        collapsed=tuple(detail.get("collapsed", ())),
    )


def read_hint(name: str) -> str:
    return messages.context_read_hint(name)


# Kept by body: a card recalled by one prompt is often recalled by the next.
@functools.lru_cache(maxsize=4096)
def excerpt(body: str, limit: int = EXCERPT_CHARS) -> str | None:
    """The opening of a card's body as one line: headings, code fences and blank lines left out,
    cut at a word before `limit` characters."""
    lines = []
    fenced = False
    for line in body.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced or not stripped or stripped.startswith("#"):
            continue
        # A link's annotation (`[[oauth]] {relation: extends}`) is for the graph, not the reader.
        lines.append(_ANNOTATION.sub("]]", stripped) if "]]" in stripped else stripped)
        if sum(len(part) + 1 for part in lines) > limit:
            break
    joined = " ".join(lines)
    # Runs of spaces become one. Only the first `limit` characters and whether more follow
    # are needed: the text's opening settles both when it still holds more than `limit + 1`
    # characters once its spaces are merged; else the whole text is merged.
    text = _SPACES.sub(" ", joined[: 2 * limit + 2]).strip()
    if len(text) <= limit + 1 or len(joined) <= 2 * limit + 2:
        text = _SPACES.sub(" ", joined).strip()
    if not text:
        return None
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0] or text[:limit]
    return cut + " …"


def matched_by(detail: Mapping[str, Any]) -> tuple[str, ...]:
    """What made the card come back, in words: evidence channels, matched terms, inputs."""
    said: list[str] = []
    evidence = detail.get("evidence")
    if isinstance(evidence, Mapping):
        channels = evidence.get("channels") or {}
        said += [f"{name} +{points}" for name, points in channels.items() if points]
    matched = detail.get("matched")
    if isinstance(matched, Mapping) and matched:
        terms = sorted(matched.items(), key=lambda item: -item[1])[:MATCHED_TERMS_SHOWN]
        shown = [term for term, _ in terms if not term.startswith(("pref:", "bi:", "syn:"))]
        if shown:
            said.append(messages.context_matched_words(shown))
    inputs = detail.get("inputs")
    if isinstance(inputs, list):
        ranks = [f"#{n} rank {place['rank']}" for n, place in enumerate(inputs, 1) if place]
        if ranks:
            said.append(", ".join(ranks))
    meaning = detail.get("meaning")
    if isinstance(meaning, float):
        said.append(messages.context_matched_meaning(meaning))
    section = detail.get("section")
    if isinstance(section, Mapping) and section.get("heading"):
        said.append(messages.context_matched_section(" > ".join(section["heading"])))
    collapsed = detail.get("collapsed")
    if collapsed:
        said.append(messages.context_stands_for(list(collapsed)))
    return tuple(said)


def _text_field(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _phrases(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,) if value.strip() else ()
    if isinstance(value, list):
        return tuple(str(item) for item in value if isinstance(item, str | int | float))
    return ()


# --- rendering --------------------------------------------------------------------------


def render_item(item: Item, form: str) -> str:
    if form == JSON:
        return json.dumps(item.block_json(), ensure_ascii=False)
    lines = [f"## {item.title}", f"- card: `{item.name}`" + _scope_note(item)]
    if item.summary:
        lines.append(f"- summary: {item.summary}")
    elif item.excerpt:
        lines.append(f"- excerpt: {item.excerpt}")
    if item.use_when:
        lines.append(f"- use if: {'; '.join(item.use_when)}")
    if item.ignore_when:
        lines.append(f"- ignore if: {'; '.join(item.ignore_when)}")
    if item.matched_by:
        lines.append(f"- matched by: {'; '.join(item.matched_by)}")
    lines.append(f"- read it whole: {item.read}")
    return "\n".join(lines)


def _scope_note(item: Item) -> str:
    notes = [item.scope] if item.scope != "project" else []
    if item.priority == "must":
        notes.append("required")
    return f" ({', '.join(notes)})" if notes else ""


def render_block(items: Sequence[Item], form: str) -> str:
    """The whole block; empty when there is no item (nothing to put in a model's context).

    Built by joining the items' own texts, so the block costs its frame plus its items."""
    if not items:
        return ""
    opening, closing = _frame(form, len(items))
    return opening + _separator(form).join(item.rendered for item in items) + closing


def _separator(form: str) -> str:
    return ",\n" if form == JSON else "\n\n"


def _frame(form: str, count: int) -> tuple[str, str]:
    """What the block holds around its items: (before them, after them)."""
    if form == JSON:
        title = json.dumps(messages.context_heading(count), ensure_ascii=False)
        return '{"context": ' + title + ', "cards": [\n', "\n]}\n"
    return heading(count) + "\n\n", "\n"


def heading(count: int) -> str:
    return f"# {messages.context_heading(count)}\n\n{messages.context_preamble()}"


# --- choosing within the budget ----------------------------------------------------------


def build_context(
    items: Sequence[Item],
    *,
    budget: int = DEFAULT_BUDGET,
    max_items: int = DEFAULT_MAX_ITEMS,
    form: str = MARKDOWN,
    count_tokens: TokenCounter | None = None,
    abstention: str | None = None,
    diagnostics: Mapping[str, Any] | None = None,
    trimmed: Sequence[Trimmed] = (),
) -> Context:
    """The block of `items` (in rank order) within `budget` tokens and `max_items` cards.

    Raises ContextError naming a required (`must`) item that does not fit.
    """
    count = count_tokens or estimate_tokens
    kind = MEASURED if count_tokens is not None else ESTIMATED
    sized = [_sized(item, form, count) for item in items]
    # The block's fixed cost: its heading (Markdown) or its JSON frame. A frame for as many
    # items as were offered is never shorter than the one for those chosen.
    frame = count("".join(_frame(form, max(len(sized), 2))))
    chosen: set[int] = set()
    cut: dict[int, Trimmed] = {}
    left = budget - frame
    order = [i for i, item in enumerate(sized) if item.priority == "must"]
    order += [i for i, item in enumerate(sized) if item.priority != "must"]
    for index in order:
        item = sized[index]
        if len(chosen) >= max_items:
            reason = messages.context_trimmed_items(max_items)
        elif item.tokens > left:
            reason = messages.context_trimmed_budget(item.tokens, max(left, 0), budget)
        else:
            chosen.add(index)
            left -= item.tokens
            continue
        if item.priority == "must":
            raise ContextError(messages.context_required_trimmed(item.name, reason))
        cut[index] = Trimmed(item.name, reason, item.tokens)
    picked = [sized[i] for i in sorted(chosen)]
    rendered = render_block(picked, form)
    why = abstention
    if not picked and why is None:
        why = (
            messages.context_nothing_fits(budget)
            if sized
            else messages.context_nothing_passed_ranking()
        )
    return Context(
        items=tuple(picked),
        trimmed=(*trimmed, *(cut[i] for i in sorted(cut))),
        rendered=rendered,
        format=form,
        budget=budget,
        max_items=max_items,
        tokens=count(rendered) if rendered else 0,
        token_kind=kind,
        abstention=why if not picked else None,
        diagnostics=dict(diagnostics or {}),
    )


def _sized(item: Item, form: str, count: TokenCounter) -> Item:
    from hql.record import replace

    text = render_item(item, form)
    # Each item also pays for the separator that joins it to the block.
    return replace(item, rendered=text, tokens=count(text + _separator(form)))
