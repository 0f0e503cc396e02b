"""The semantic tests on every vector store: the SQLite file, and Qdrant's local mode.

A test marked `@on_every_store` takes a `store` argument. Its vault is built into
that store; for Qdrant, a twin of the vault is also built into a SQLite file, and
every answer the test reads is compared with the twin's: the same program, with
`exact = true` added to each `semantic`/`hybrid` call on the Qdrant side, must give
the same text, values, order, scores, hit details and warnings. Only the fields
that name the store (where the vectors are and how they were searched) may differ.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

import hql

STORES = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param(
        "qdrant",
        id="qdrant",
        marks=pytest.mark.skipif(
            importlib.util.find_spec("qdrant_client") is None,
            reason="the Qdrant store needs `hql[qdrant]`",
        ),
    ),
]
# Module scope: a module may build each store's vault once and share it among its tests.
on_every_store = pytest.mark.parametrize("store", STORES, scope="module")

QDRANT_FOLDER = ".hql/qdrant"
# Fields of a Retrieval that name the store: its location and how it searched.
STORE_FIELDS = ("index", "search")
_INDEX_LINE = re.compile(r'^index\s*=\s*"[^"]*"\s*$', re.MULTILINE)
_STEP = re.compile(r"\b(semantic|hybrid)\(")


def as_store(toml: str, store: str, collection: str | None = None) -> str:
    """A vault's `hql.toml` for `store`: Qdrant's local folder where the SQLite file was.

    `collection`: its name, for a vault whose settings name no embedder to derive it from.
    """
    if store == "sqlite" or not _INDEX_LINE.search(toml):
        return toml
    named = f'collection = "{collection}"\n' if collection else ""
    return (
        _INDEX_LINE.sub('store = "qdrant"', toml, count=1)
        + f'\n[semantics.qdrant]\npath = "{QDRANT_FOLDER}"\n{named}'
    )


def exact(source: str) -> str:
    """`source` with `exact = true` added to every `semantic(...)` and `hybrid(...)` call."""
    return _with_exact(source)[0]


def _with_exact(source: str) -> tuple[str, list[tuple[int, int]]]:
    """`exact(source)`, and where text was inserted: (position in the result, length)."""
    out: list[str] = []
    inserted: list[tuple[int, int]] = []
    position = length = 0
    for match in _STEP.finditer(source):
        close = _closing_paren(source, match.end())
        empty = not source[match.end() : close].strip()
        addition = "exact = true" if empty else ", exact = true"
        out.append(source[position:close])
        length += close - position
        inserted.append((length, len(addition)))
        out.append(addition)
        length += len(addition)
        position = close
    out.append(source[position:])
    changed = "".join(out)
    assert changed.count("exact = true") == len(_STEP.findall(source)), source
    return changed, inserted


def _original_position(position: int, inserted: list[tuple[int, int]]) -> int:
    """A position in the rewritten program as a position in the program the test wrote."""
    return position - sum(length for at, length in inserted if position >= at + length)


def _closing_paren(source: str, start: int) -> int:
    depth, index, quote = 1, start, None
    while index < len(source):
        char = source[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return index
        index += 1
    raise AssertionError(f"no closing parenthesis in {source!r}")


def without_store(tree: Any) -> Any:
    """A JSON answer without the fields that name the store, in every Retrieval it holds."""
    if isinstance(tree, dict):
        is_retrieval = "model" in tree and "metric" in tree
        return {
            key: without_store(value)
            for key, value in tree.items()
            if not (is_retrieval and key in STORE_FIELDS)
        }
    if isinstance(tree, list):
        return [without_store(item) for item in tree]
    return tree


def retrieval_without_store(retrieval: Any) -> dict[str, Any]:
    """A Retrieval (of a ranking, or of `semantic_ranking`) as comparable fields."""
    fields = {
        name: getattr(retrieval, name)
        for name in ("query", "model", "revision", "metric", "approximate", "query_embedded_now")
        if hasattr(retrieval, name)
    }
    extra = getattr(retrieval, "extra", None)
    if extra is not None:
        fields["extra"] = without_store(dict(extra))
    return fields


def reports_of(
    outcome: hql.Outcome,
    inserted: list[tuple[int, int]] = (),  # type: ignore[assignment]
) -> list[tuple[str, str, object]]:
    """Each report's severity, message and span, the span placed in the test's own program."""
    found: list[tuple[str, str, object]] = []
    for report in outcome.reports:
        span = report.span
        where = None
        if span is not None:
            where = (
                _original_position(span.start, inserted),
                _original_position(span.end, inserted),
            )
        found.append((report.severity.word, report.message, where))
    return found


class StoreVaults:
    """A vault in the store under test and, for Qdrant, its twin in a SQLite file.

    `build` and every change go to both; `run` and `ranking` answer from the store
    under test after checking the twin gives the same answer.
    """

    def __init__(
        self, store: str, root: Path, twin: Path | None, collection: str | None = None
    ) -> None:
        self.store = store
        self.root = root
        self.twin = twin
        self.collection = collection

    @classmethod
    def make(
        cls,
        store: str,
        folder: Path,
        write: Callable[[Path, str], None],
        toml: str,
        twin_toml: str | None = None,
        collection: str | None = None,
        name: str = "vault",
    ) -> StoreVaults:
        """`write(root, toml)` fills a vault folder; it is called for each vault of the pair.

        `twin_toml`: the twin's settings when they must differ (its own embedder endpoint).
        `collection`: the Qdrant collection's name, when the settings name no embedder.
        """
        root = folder / store / name
        write(root, as_store(toml, store, collection))
        twin = None
        if store != "sqlite":
            twin = folder / "sqlite-twin" / name
            write(twin, twin_toml if twin_toml is not None else toml)
        return cls(store, root, twin, collection)

    @property
    def roots(self) -> list[Path]:
        return [self.root] + ([self.twin] if self.twin is not None else [])

    def open(self, root: Path | None = None) -> hql.Vault:
        return hql.open_vault(root or self.root, use_cache=False)

    def build(
        self,
        embedder: Callable[[], Any] | None = None,
        only: Path | None = None,
        **options: Any,
    ) -> list[Any]:
        """`hql index build` in each vault (or `only` one); `embedder` makes each its own."""
        from hql.index.commands import build_command

        made = []
        for root in [only] if only is not None else self.roots:
            if embedder is not None:
                made.append(embedder())
                options["embedder"] = made[-1]
            code, text = build_command(self.open(root), **options)
            assert code == 0, text
        return made

    def write(self, relative: str, text: str) -> None:
        for root in self.roots:
            (root / relative).write_text(text, encoding="utf-8")

    def configure(self, toml: str, twin_toml: str | None = None) -> None:
        settings = as_store(toml, self.store, self.collection)
        (self.root / "hql.toml").write_text(settings, encoding="utf-8")
        if self.twin is not None:
            text = twin_toml if twin_toml is not None else toml
            (self.twin / "hql.toml").write_text(text, encoding="utf-8")

    def outcome(self, source: str) -> hql.Outcome:
        """The program's outcome in the store under test, once the twin agreed with it."""
        if self.twin is None:
            return hql.run(source, vault=self.open())
        expected = hql.run(source, vault=self.open(self.twin))
        rewritten, inserted = _with_exact(source)
        found = hql.run(rewritten, vault=self.open())
        assert reports_of(found, inserted) == reports_of(expected), source
        assert found.failed == expected.failed, source
        if not expected.failed:
            assert found.text() == expected.text(), source
            found_tree = {**without_store(found.to_json()), "reports": None}
            expected_tree = {**without_store(expected.to_json()), "reports": None}
            assert found_tree == expected_tree, source  # reports: compared above
        return found

    def run(self, source: str) -> hql.Outcome:
        outcome = self.outcome(source)
        assert not outcome.failed, outcome.render_reports()
        return outcome

    def ranking(self, query: str, cards: Sequence[str] | None = None, **options: Any) -> Any:
        """`semantic_ranking` in the store under test, once the twin agreed with it.

        `cards`: rank only the cards of these names (each vault's own cards).
        """
        from hql.index.semantic import semantic_ranking

        found = semantic_ranking(
            self.open(),
            query,
            **_cards_of(cards, self.root),
            **({"exact": True} if self.twin is not None else {}),
            **options,
        )
        if self.twin is None:
            return found
        expected = semantic_ranking(
            self.open(self.twin), query, **_cards_of(cards, self.twin), **options
        )
        assert found.hits == expected.hits, query
        assert found.sections == expected.sections, query
        assert found.warnings == expected.warnings, query
        assert retrieval_without_store(found.retrieval) == retrieval_without_store(
            expected.retrieval
        ), query
        return found

    def moved(self, folder: Path) -> StoreVaults:
        """The pair copied elsewhere, each vault keeping its name (an index travels with it)."""
        import shutil

        roots = [folder / "moved" / self.root.name]
        shutil.copytree(self.root, roots[0])
        twin = None
        if self.twin is not None:
            twin = folder / "moved-twin" / self.twin.name
            shutil.copytree(self.twin, twin)
        return StoreVaults(self.store, roots[0], twin, self.collection)

    def close(self) -> None:
        if self.store == "qdrant":
            from hql.index.stores.qdrant import close_clients

            close_clients()


def _cards_of(names: Any, root: Path) -> dict[str, Any]:
    """A subset of cards given by name, taken from each vault of the pair."""
    if names is None:
        return {}
    vault = hql.open_vault(root, use_cache=False)
    wanted = set(names)
    return {"cards": [card for card in vault.cards if card.name in wanted]}
