"""In-process approximate search: the HNSW graph beside the SQLite index.

Vaults of a few hundred cards embedded by a hashed bag of words; the graph is
built by `hql index build` and read by `semantic`.
"""

from __future__ import annotations

import dataclasses
import json
import random
import sys
from pathlib import Path

import numpy as np
import pytest
from standin_embedder import standin_vector

import hql
from hql.explain import explain
from hql.index import config
from hql.index.commands import build_command
from hql.index.semantic import semantic_ranking
from hql.index.stores.hnsw import graph_paths
from hql.vault import Vault

pytest.importorskip("hnswlib")

WORDS = [
    "owl",
    "duck",
    "penguin",
    "heron",
    "swan",
    "eagle",
    "falcon",
    "crow",
    "sparrow",
    "wren",
    "gull",
    "tern",
    "robin",
    "finch",
    "lark",
    "river",
    "lake",
    "sea",
    "marsh",
    "forest",
    "field",
    "mountain",
    "city",
    "garden",
    "island",
    "desert",
    "cliff",
    "reef",
    "hunts",
    "swims",
    "flies",
    "nests",
    "sings",
    "dives",
    "feeds",
    "migrates",
    "rests",
    "calls",
    "night",
    "day",
    "winter",
    "summer",
    "spring",
    "autumn",
    "fish",
    "seed",
    "insect",
    "worm",
    "grass",
    "reed",
]


class WideBag:
    """A hashed bag of words in 128 dimensions (fewer ties than the 64 of the stand-in)."""

    model_id, revision = "wide-bag", "1"

    def embed_passages(self, texts):
        rows = np.asarray([standin_vector(t, 128) for t in texts], dtype=np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    embed_queries = embed_passages


def toml(extra: str = 'ann = "hnsw"\n') -> str:
    return '[semantics]\nindex = ".hql/index.sqlite"\n' + extra


def write_cards(root: Path, count: int, seed: int = 3, start: int = 0) -> None:
    rng = random.Random(seed)
    for number in range(start, start + count):
        words = " ".join(rng.choice(WORDS) for _ in range(8))
        (root / f"card-{number:04d}.md").write_text(
            f"---\ntitle: Card {number}\n---\n{words}\n", encoding="utf-8"
        )


def build(root: Path, queries: tuple[str, ...] = ()) -> tuple[int, str]:
    return build_command(Vault.open(root, use_cache=False), list(queries), embedder=WideBag())


QUESTIONS = ("owl hunts at night", "duck swims on the lake", "gull dives for fish", "wren sings")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "birds"
    root.mkdir()
    (root / "hql.toml").write_text(toml(), encoding="utf-8")
    write_cards(root, 300)
    code, text = build(root, (*QUESTIONS, "kingfisher"))
    assert code == 0, text
    assert "HNSW graph built whole (300 vectors)" in text
    return root


def ranked(root: Path, query: str, k: int | None = 10, exact: bool = False):
    return semantic_ranking(Vault.open(root, use_cache=False), query, k=k, exact=exact)


def test_build_writes_the_graph_and_search_uses_it(root: Path) -> None:
    graph, meta = graph_paths(root / ".hql/index.sqlite")
    assert graph.stat().st_size > 0
    recorded = json.loads(meta.read_text(encoding="utf-8"))
    assert recorded["library"] == "hnswlib" and recorded["m"] == 16
    assert len(recorded["cards"]) == 300
    found = 0
    for question in QUESTIONS:
        approximate = ranked(root, question)
        exact = ranked(root, question, exact=True)
        assert approximate.retrieval.approximate is True
        search = approximate.retrieval.search
        assert search["exact"] is False and search["ann"] == "hnsw"
        assert (search["m"], search["ef_construction"]) == (16, 200)
        assert search["ef_search"] >= 128 and search["library"].startswith("hnswlib ")
        assert exact.retrieval.approximate is False
        assert exact.retrieval.search["exact_requested"] is True
        every = dict(ranked(root, question, k=None, exact=True).hits)
        # Scores come from the index's own vectors, never from the graph.
        for name, score in approximate.hits:
            assert score == every[name]
        found += len({name for name, _ in exact.hits} & {name for name, _ in approximate.hits})
        assert not approximate.warnings
    assert found / (10 * len(QUESTIONS)) >= 0.9


def test_exact_and_unlimited_searches_scan_and_say_why(root: Path) -> None:
    unlimited = ranked(root, QUESTIONS[0], k=None)
    assert unlimited.retrieval.approximate is False and len(unlimited.hits) == 300
    assert "no limit" in unlimited.retrieval.search["reason"] and not unlimited.warnings
    vault = Vault.open(root, use_cache=False)
    few = [card for card in vault.cards if card.name < "card-0010"]  # a thirtieth: scanned
    part = semantic_ranking(vault, QUESTIONS[0], cards=few, k=5)
    assert part.retrieval.approximate is False and "small part" in part.retrieval.search["reason"]
    assert all(name < "card-0010" for name, _ in part.hits)


def test_a_filtered_input_is_searched_in_the_graph_among_its_own_cards(root: Path) -> None:
    vault = Vault.open(root, use_cache=False)
    third = [card for card in vault.cards if card.name < "card-0100"]
    found = 0
    for question in QUESTIONS:
        part = semantic_ranking(vault, question, cards=third, k=10)
        assert part.retrieval.approximate is True
        assert part.retrieval.search["filter"] == "the input's cards"
        assert all(name < "card-0100" for name, _ in part.hits) and len(part.hits) == 10
        exact = semantic_ranking(vault, question, cards=third, k=10, exact=True)
        every = dict(semantic_ranking(vault, question, cards=third, exact=True).hits)
        for name, score in part.hits:
            assert score == every[name]  # scored from the index, as the scan scores it
        found += len({name for name, _ in part.hits} & {name for name, _ in exact.hits})
    assert found / (10 * len(QUESTIONS)) >= 0.9
    program = (
        f'import semantic\ncards | filter(c => c.name < "card-0100") '
        f'| semantic("{QUESTIONS[0]}") | take(5)'
    )
    text, reports, failed = explain(hql.Session(vault), program, "<t>")
    assert not failed, reports
    assert "filter the input's cards" in text


def test_the_language_step_declares_the_approximation(root: Path) -> None:
    from hql.explain import explain

    vault = Vault.open(root, use_cache=False)
    program = f'import semantic\ncards | semantic("{QUESTIONS[1]}") | take(5)'
    outcome = hql.run(program, vault=vault)
    assert not outcome.failed, outcome.reports
    assert outcome.value.retrieval.approximate is True
    projected = json.loads(hql.run(program + " | json", vault=vault).text())
    assert projected["retrieval"]["approximate"] is True
    assert projected["retrieval"]["search"]["ann"] == "hnsw"
    text, reports, failed = explain(hql.Session(vault), program, "<t>")
    assert not failed, reports
    assert "approximate true" in text
    assert "search: approximate (sqlite, ann hnsw, library hnswlib" in text
    forced = hql.run(program.replace('")', '", exact = true)'), vault=vault)
    assert forced.value.retrieval.approximate is False
    assert forced.value.retrieval.extra["search"]["exact_requested"] is True


def test_a_build_updates_the_graph_incrementally(root: Path) -> None:
    (root / "card-0005.md").unlink()
    (root / "card-0007.md").write_text("---\ntitle: Card 7\n---\nkingfisher kingfisher\n")
    write_cards(root, 20, seed=9, start=300)
    code, text = build(root)
    assert code == 0, text
    assert "HNSW graph updated: 21 vectors added, 2 removed (319 in all)" in text
    top = ranked(root, "kingfisher", k=3)
    assert top.retrieval.approximate is True and top.hits[0][0] == "card-0007"
    assert "card-0005" not in dict(ranked(root, QUESTIONS[0], k=50).hits)
    code, text = build(root)  # nothing changed: nothing to add or remove
    assert "HNSW graph updated: 0 vectors added, 0 removed (319 in all)" in text


def test_many_removals_rebuild_the_graph_and_say_so(root: Path) -> None:
    for number in range(100):
        (root / f"card-{number:04d}.md").unlink()
    code, text = build(root)
    assert code == 0 and "HNSW graph built whole (200 vectors)" in text
    assert "removed from it" in text


def test_a_stale_graph_is_never_trusted(root: Path) -> None:
    (root / "hql.toml").write_text(toml('ann = "off"\n'), encoding="utf-8")
    (root / "card-0001.md").write_text("---\ntitle: Card 1\n---\nkingfisher\n")
    assert build(root)[0] == 0  # the index changes, the graph does not
    (root / "hql.toml").write_text(toml(), encoding="utf-8")
    result = ranked(root, "kingfisher", k=3)
    assert result.retrieval.approximate is False
    assert "changed after its HNSW graph" in result.retrieval.search["reason"]
    assert any(
        "searched every vector exactly" in w and "hql index build" in w for w in result.warnings
    )
    assert result.hits[0][0] == "card-0001"  # the exact scan's answer


def test_a_corrupt_graph_is_refused_then_rebuilt(root: Path) -> None:
    graph, _ = graph_paths(root / ".hql/index.sqlite")
    raw = bytearray(graph.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    graph.write_bytes(bytes(raw))
    result = ranked(root, QUESTIONS[2])
    assert result.retrieval.approximate is False
    assert "damaged (it changed after it was written)" in result.retrieval.search["reason"]
    assert result.warnings and "hql index build" in result.warnings[0]
    code, text = build(root)
    assert code == 0 and "HNSW graph built whole (300 vectors): the HNSW graph" in text
    assert ranked(root, QUESTIONS[2]).retrieval.approximate is True


def test_a_graph_from_another_library_version_or_missing_is_not_used(root: Path) -> None:
    graph, meta = graph_paths(root / ".hql/index.sqlite")
    recorded = json.loads(meta.read_text(encoding="utf-8"))
    meta.write_text(json.dumps({**recorded, "version": "0.0.1"}), encoding="utf-8")
    result = ranked(root, QUESTIONS[3])
    assert "built by hnswlib 0.0.1" in result.retrieval.search["reason"]
    meta.write_text("{not json", encoding="utf-8")
    assert "damaged" in ranked(root, QUESTIONS[3]).retrieval.search["reason"]
    graph.unlink()
    meta.unlink()
    missing = ranked(root, QUESTIONS[3])
    assert "no HNSW graph" in missing.retrieval.search["reason"] and missing.warnings
    assert build(root)[0] == 0
    assert ranked(root, QUESTIONS[3]).retrieval.approximate is True


def test_a_missing_library_is_a_clear_report(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "hnswlib", None)  # import hnswlib now fails
    result = ranked(root, QUESTIONS[0])
    assert result.retrieval.approximate is False
    assert "pip install 'hql[ann]'" in result.retrieval.search["reason"]
    assert result.warnings and "hql index build" not in result.warnings[0]
    (root / "card-0001.md").write_text("---\ntitle: Card 1\n---\nkingfisher\n")
    code, text = build(root)
    assert code == 1 and "was not built" in text and "hql[ann]" in text


def test_auto_builds_a_graph_only_past_the_threshold(tmp_path: Path) -> None:
    small = tmp_path / "small"
    small.mkdir()
    (small / "hql.toml").write_text(toml("ann_threshold = 1000\n"), encoding="utf-8")
    write_cards(small, 120)
    code, text = build(small, QUESTIONS)
    assert code == 0 and "HNSW" not in text
    assert not graph_paths(small / ".hql/index.sqlite")[0].exists()
    plain = ranked(small, QUESTIONS[0])
    assert plain.retrieval.approximate is False and "reason" not in plain.retrieval.search
    (small / "hql.toml").write_text(
        toml("ann_threshold = 100\n[semantics.hnsw]\nm = 8\nef_search = 40\n"), encoding="utf-8"
    )
    code, text = build(small)
    assert code == 0 and "HNSW graph built whole (120 vectors)" in text
    result = ranked(small, QUESTIONS[0], k=5)
    assert result.retrieval.approximate is True
    assert result.retrieval.search["m"] == 8 and result.retrieval.search["ef_search"] >= 40


def test_the_default_search_list_grows_with_the_graph(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ef_search 128 keeps recall@10 near 0.99 at 100k vectors but not at a million (bench/ann.py)."""
    assert ranked(root, QUESTIONS[0]).retrieval.search["ef_search"] == 128
    monkeypatch.setattr(config, "LARGE_GRAPH", 300)  # the fixture's graph counts as large
    assert ranked(root, QUESTIONS[0]).retrieval.search["ef_search"] == 1024
    with open(root / "hql.toml", "a", encoding="utf-8") as handle:
        handle.write("\n[semantics.hnsw]\nef_search = 64\n")
    assert ranked(root, QUESTIONS[0]).retrieval.search["ef_search"] == 64


def test_bad_ann_settings_are_reported(tmp_path: Path) -> None:
    root = tmp_path / "v"
    root.mkdir()
    write_cards(root, 3)
    for extra, expected in (
        ('ann = "yes"\n', "`semantics.ann` in hql.toml must be"),
        ("ann_threshold = -5\n", "`semantics.ann_threshold`"),
        ("[semantics.hnsw]\nef = 3\n", "unknown key `ef` in `[semantics.hnsw]`"),
    ):
        (root / "hql.toml").write_text(toml(extra), encoding="utf-8")
        code, text = build(root)
        assert code == 1 and expected in text


def test_a_build_checks_the_graph_byte_for_byte(root: Path) -> None:
    import os

    graph, _ = graph_paths(root / ".hql/index.sqlite")
    before = graph.stat()
    raw = bytearray(graph.read_bytes())
    raw[-100] ^= 0xFF  # a damaged vector, with the file's time put back
    graph.write_bytes(bytes(raw))
    os.utime(graph, ns=(before.st_atime_ns, before.st_mtime_ns))
    code, text = build(root)
    assert code == 0 and "HNSW graph built whole (300 vectors)" in text
    assert "its checksum differs" in text


def test_inspect_says_whether_the_graph_is_used(root: Path) -> None:
    from hql.index.commands import inspect_command

    code, text = inspect_command(Vault.open(root, use_cache=False))
    assert code == 0 and "hnsw graph  300 vectors (hnswlib " in text
    assert "m 16, ef_construction 200" in text
    (root / "hql.toml").write_text(toml('ann = "off"\n'), encoding="utf-8")
    code, text = inspect_command(Vault.open(root, use_cache=False))
    assert 'hnsw graph  none (ann = "off"' in text
    (root / "hql.toml").write_text(toml(), encoding="utf-8")
    graph_paths(root / ".hql/index.sqlite")[1].unlink()
    code, text = inspect_command(Vault.open(root, use_cache=False))
    assert code == 0 and "hnsw graph  not used: the HNSW graph" in text


def test_an_input_the_graph_cannot_reach_is_scanned_and_says_so(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hql.index.stores import hnsw

    class Unreaching:
        """The graph, but a filtered search finds fewer vectors than asked (hnswlib raises)."""

        def __init__(self, index: object) -> None:
            self.index = index

        def __getattr__(self, name: str) -> object:
            return getattr(self.index, name)

        def knn_query(self, *args: object, filter: object = None, **options: object) -> object:
            if filter is not None:
                raise RuntimeError("Cannot return the results in a contiguous 2D array")
            return self.index.knn_query(*args, **options)

    opened = hnsw.open_graph

    def open_unreaching(index: object, settings: object) -> object:
        graph = opened(index, settings)  # type: ignore[arg-type]
        return dataclasses.replace(graph, index=Unreaching(graph.index))

    monkeypatch.setattr(hnsw, "open_graph", open_unreaching)
    vault = Vault.open(root, use_cache=False)
    third = [card for card in vault.cards if card.name < "card-0100"]
    part = semantic_ranking(vault, QUESTIONS[0], cards=third, k=5)
    exact = semantic_ranking(vault, QUESTIONS[0], cards=third, k=5, exact=True)
    assert part.retrieval.approximate is False and not part.warnings
    assert "reached too few" in part.retrieval.search["reason"]
    assert part.hits == exact.hits
    assert semantic_ranking(vault, QUESTIONS[0], k=5).retrieval.approximate is True
