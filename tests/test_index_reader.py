"""The schema v1 reader: every refusal and warning, ranking order, and the in-memory cache."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from standin_embedder import BASE_CARDS, standin_vector, write_vault
from store_parity import StoreVaults, on_every_store

from hql.index import SemanticIndexError, pins
from hql.index.commands import build_command
from hql.index.reader import (
    SemanticIndex,
    _top_few,
    _top_positions,
    open_vault_index,
    read_model,
)
from hql.index.semantic import semantic_ranking
from hql.vault import Vault

TOML = '[semantics]\nindex = ".hql/index.sqlite"\n'
QUERY = "penguins swim underwater"


class BagEmbedder:
    """In-process twin of the stand-in server's vectors."""

    model_id, revision = "bag", "1"

    def embed_passages(self, texts):
        return np.asarray([standin_vector(t) for t in texts], dtype=np.float32) / 3.0

    embed_queries = embed_passages


def open_vault(root: Path) -> Vault:
    return Vault.open(root, use_cache=False)


@pytest.fixture
def vaults(tmp_path: Path, store: str):
    """The zoo in `store` (and, for Qdrant, a SQLite twin every ranking is checked against)."""
    made = StoreVaults.make(
        store,
        tmp_path,
        lambda root, toml: write_vault(root, BASE_CARDS, toml),
        TOML,
        collection="zoo-bag",
        name="zoo",
    )
    made.build(queries=[QUERY], embedder=BagEmbedder)
    yield made
    made.close()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "zoo"
    write_vault(root, BASE_CARDS, TOML)
    code, text = build_command(open_vault(root), queries=[QUERY], embedder=BagEmbedder())
    assert code == 0, text
    return root


@pytest.fixture
def store() -> str:
    """The store a test not marked `on_every_store` runs on."""
    return "sqlite"


def index_file(root: Path) -> Path:
    return root / ".hql/index.sqlite"


def tamper(root: Path, statement: str) -> None:
    db = sqlite3.connect(index_file(root))
    with db:
        db.execute(statement)
    db.close()


def reseal(db: sqlite3.Connection) -> None:
    """Pin the file's rows as they are now, as a build that wrote them would."""
    with db:
        pins.seal(db, read_model(db))


def refusal(root: Path, query: str = QUERY) -> str:
    with pytest.raises(SemanticIndexError) as caught:
        semantic_ranking(open_vault(root), query)
    return caught.value.message


@on_every_store
def test_ranks_every_card_with_retrieval(vaults: StoreVaults) -> None:
    ranking = vaults.ranking(QUERY)
    names = [name for name, _ in ranking.hits]
    assert names[0] == "penguin" and sorted(names) == sorted(BASE_CARDS)
    scores = [score for _, score in ranking.hits]
    assert scores == sorted(scores, reverse=True) and 0 < scores[0] <= 1.0001
    assert ranking.warnings == []
    retrieval = ranking.retrieval
    assert (retrieval.model, retrieval.revision, retrieval.metric) == ("bag", "1", "cosine")
    assert retrieval.approximate is False
    if vaults.store == "sqlite":  # the Qdrant store names its collection instead
        assert retrieval.index == str(index_file(vaults.root))


@on_every_store
def test_top_k_matches_the_full_ranking(vaults: StoreVaults) -> None:
    full = vaults.ranking(QUERY).hits
    for k in range(0, 6):
        assert vaults.ranking(QUERY, k=k).hits == full[:k]


def test_ties_break_by_card_name_even_at_the_k_boundary() -> None:
    scores = np.asarray([0.5, 0.9, 0.5, 0.5, 0.1], dtype=np.float32)
    assert _top_positions(scores, None).tolist() == [1, 0, 2, 3, 4]
    assert _top_positions(scores, 2).tolist() == [1, 0]
    assert _top_positions(scores, 3).tolist() == [1, 0, 2]


def test_a_few_scores_sorted_in_python_keep_the_same_order_and_values() -> None:
    rng = np.random.default_rng(5)
    for size in (1, 2, 7, 30, 64):
        # Few distinct values: many ties, -0.0 beside 0.0 among them.
        scores = rng.choice(np.float32([0.5, -0.25, 0.0, -0.0, 0.75]), size).astype(np.float32)
        for k in (None, 1, 3, size, size + 4):
            few = _top_few(scores, k)
            assert few is not None
            order, values = few
            assert order == _top_positions(scores, k).tolist()
            assert values == scores.tolist()
    assert _top_few(np.zeros(65, dtype=np.float32), 10) is None  # many: numpy orders them
    assert _top_few(np.float32([0.1, np.nan]), 1) is None  # a NaN: numpy orders it last
    assert _top_few(np.float32([0.1, 0.2]), 0) is None


@on_every_store
def test_ranking_a_subset_of_cards(vaults: StoreVaults) -> None:
    ranking = vaults.ranking(QUERY, cards=("owl", "weaver"))
    assert sorted(name for name, _ in ranking.hits) == ["owl", "weaver"]


@on_every_store
def test_stale_card_is_ranked_with_a_warning(vaults: StoreVaults) -> None:
    vaults.write("owl.md", "---\ntitle: Owl\n---\nOwls swim? No.\n")
    ranking = vaults.ranking(QUERY)
    assert "owl" in [name for name, _ in ranking.hits]
    assert ranking.warnings == [
        "`owl` has changed since the index was built, so its score is stale: rerun `hql index build`"
    ]


@on_every_store
def test_absent_cards_are_counted_in_one_warning(vaults: StoreVaults) -> None:
    vaults.write("heron.md", "Herons.\n")
    ranking = vaults.ranking(QUERY)
    assert "heron" not in [name for name, _ in ranking.hits]
    assert ranking.warnings == [
        "1 card is absent from the index and so from this ranking: rerun `hql index build`"
    ]
    vaults.write("egret.md", "Egrets.\n")
    assert vaults.ranking(QUERY).warnings == [
        "2 cards are absent from the index and so from this ranking: rerun `hql index build`"
    ]


def test_no_index_configured(tmp_path: Path) -> None:
    write_vault(tmp_path / "v", BASE_CARDS, "")
    assert refusal(tmp_path / "v") == (
        "`semantic` needs an index: name one with `[semantics] index` in hql.toml, "
        "and build it with `hql index build`"
    )


@pytest.mark.parametrize(
    "configured", ["/tmp/index.sqlite", "../index.sqlite", "a/../../x.sqlite", "C:\\x.sqlite"]
)
def test_index_outside_the_vault(tmp_path: Path, configured: str) -> None:
    write_vault(tmp_path / "v", BASE_CARDS, f"[semantics]\nindex = '{configured}'\n")
    assert refusal(tmp_path / "v") == f"the configured index `{configured}` is outside the vault"


def test_missing_index_file(tmp_path: Path) -> None:
    write_vault(tmp_path / "v", BASE_CARDS, TOML)
    assert (
        refusal(tmp_path / "v")
        == f"there is no index at `{tmp_path / 'v' / '.hql/index.sqlite'}`: build it with `hql index build`"
    )


def test_unknown_schema(root: Path) -> None:
    tamper(root, "UPDATE index_meta SET schema_version = 2")
    assert refusal(root) == "unknown index schema: 2, and this reader knows 1"


def test_truncated_vector(root: Path) -> None:
    tamper(root, "UPDATE card SET embedding = substr(embedding, 1, 40) WHERE name = 'owl'")
    assert refusal(root) == "`owl` has a 40-byte vector where 256 were declared"


def test_other_vault(root: Path) -> None:
    tamper(root, "UPDATE index_meta SET vault = 'somewhere/else'")
    assert refusal(root) == (
        f"the index was built for `somewhere/else` and this vault is `{root}`: rerun `hql index build`"
    )


def test_same_final_component_or_same_path_accepted(root: Path) -> None:
    tamper(root, "UPDATE index_meta SET vault = 'tests/fixtures/zoo'")
    assert semantic_ranking(open_vault(root), QUERY).hits
    tamper(root, f"UPDATE index_meta SET vault = '{root.resolve().as_posix()}'")
    assert semantic_ranking(open_vault(root), QUERY).hits


@on_every_store
def test_moved_vault_keeps_its_index(vaults: StoreVaults, tmp_path: Path) -> None:
    vaults.close()  # a local Qdrant folder is copied closed, as a user copies a vault
    moved = vaults.moved(tmp_path / "elsewhere")
    try:
        assert moved.ranking(QUERY).hits[0][0] == "penguin"
    finally:
        moved.close()


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("UPDATE model SET normalized = 0", "`normalized = 0`"),
        ("UPDATE model SET metric = 'l2'", "unknown index metric `l2`"),
        ("UPDATE model SET dimensions = 0", "declares 0 dimensions"),
        ("UPDATE model SET dimensions = 9000", "declares 9000 dimensions"),
        ("INSERT INTO model VALUES ('other', 'r', 64, 'cosine', 1)", "2 models"),
        ("DROP TABLE query", "has no `query` table"),
        ("UPDATE query SET embedding = x'00'", "has a 1-byte vector where 256 were declared"),
    ],
)
def test_bad_model_rows_and_tables(root: Path, statement: str, message: str) -> None:
    tamper(root, statement)
    assert message in refusal(root)


def test_not_a_database(root: Path) -> None:
    index_file(root).write_bytes(b"this is a text file, not SQLite\n" * 100)
    assert "is not an SQLite index" in refusal(root)


def test_truncated_file(root: Path) -> None:
    data = index_file(root).read_bytes()
    index_file(root).write_bytes(data[: len(data) // 2])
    assert "is not an SQLite index" in refusal(root)


def test_empty_file(root: Path) -> None:
    index_file(root).write_bytes(b"")
    assert "has no `model` table" in refusal(root)


def test_matrix_read_once_per_revision(root: Path) -> None:
    vault = open_vault(root)
    first = open_vault_index(vault)
    second = open_vault_index(vault)
    assert first._loaded is second._loaded
    build_command(vault, queries=["another"], embedder=BagEmbedder())
    third = open_vault_index(vault)
    assert third._loaded is not first._loaded
    assert third.query_vector("another") is not None


def test_index_written_by_hand_in_the_original_layout(tmp_path: Path) -> None:
    """An index filled the way the original producer does (plain SQL, its vault argument)."""
    root = tmp_path / "birds"
    write_vault(root, {"owl": "Owls.", "duck": "Ducks."}, TOML)
    vault = open_vault(root)
    (root / ".hql").mkdir()
    db = sqlite3.connect(root / ".hql/index.sqlite")
    with db:
        db.executescript(
            "CREATE TABLE model (id TEXT PRIMARY KEY, revision TEXT, dimensions INTEGER, metric TEXT, normalized INTEGER);"
            "CREATE TABLE index_meta (schema_version INTEGER, vault TEXT, built_at TEXT, tool_version TEXT);"
            "CREATE TABLE card (name TEXT PRIMARY KEY, path TEXT, content_hash TEXT, embedding BLOB);"
            "CREATE TABLE query (text TEXT PRIMARY KEY, embedding BLOB);"
        )
        db.execute("INSERT INTO model VALUES ('m', 'r', 2, 'cosine', 1)")
        db.execute(
            "INSERT INTO index_meta VALUES (1, 'tests/fixtures/birds', '2024', 'hql-semantics 0.1.0')"
        )
        for card, vector in zip(
            sorted(vault.cards, key=lambda c: c.name), ([1, 0], [0.6, 0.8]), strict=True
        ):
            db.execute(
                "INSERT INTO card VALUES (?, ?, ?, ?)",
                (card.name, f"{card.name}.md", card.digest, np.asarray(vector, "<f4").tobytes()),
            )
        db.execute("INSERT INTO query VALUES ('q', ?)", (np.asarray([0, 1], "<f4").tobytes(),))
    db.close()
    ranking = semantic_ranking(vault, "q")
    assert [(n, round(s, 4)) for n, s in ranking.hits] == [("owl", 0.8), ("duck", 0.0)]


def test_open_directly(root: Path) -> None:
    index = SemanticIndex.open(index_file(root), root)
    assert index.dimensions == 64 and index.card_names == ("duck", "owl", "penguin", "weaver")
    vector = index.query_vector(QUERY)
    assert vector is not None
    assert index.search(vector, k=1)[0][0] == "penguin"


def test_card_alignment_is_shared_across_openers_and_fresh_lists(root: Path) -> None:
    vault = open_vault(root)
    first = open_vault_index(vault)
    first.rank(first.query_vector(QUERY), list(vault.cards))
    memo = first._loaded.last_alignment[0]
    second = open_vault_index(vault)
    hits, _ = second.rank(second.query_vector(QUERY), list(vault.cards))
    assert second._loaded.last_alignment[0] is memo
    assert hits[0][0] == "penguin"
    reloaded = open_vault(root)  # new card objects: aligned afresh
    second.rank(second.query_vector(QUERY), reloaded.cards)
    assert second._loaded.last_alignment[0] is not memo


@pytest.mark.parametrize("fraction", [0.01, 0.25, 0.5, 0.75])
def test_any_truncation_is_refused_by_reader_verify_and_inspect(
    root: Path, fraction: float
) -> None:
    from hql.index.commands import inspect_command, verify_command

    data = index_file(root).read_bytes()
    index_file(root).write_bytes(data[: int(len(data) * fraction)])
    refusal(root)  # a SemanticIndexError, whatever SQLite makes of the stump
    vault = open_vault(root)
    assert verify_command(vault)[0] == 1
    code, _ = inspect_command(vault)
    assert code in (0, 1)  # a stump that still holds the small tables may be inspected


def test_a_score_does_not_depend_on_the_rows_it_was_computed_with() -> None:
    from hql.index.reader import exact_scores

    rng = np.random.default_rng(7)
    matrix = rng.standard_normal((1001, 384)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    query = matrix[3] + matrix[500]
    query /= np.linalg.norm(query)
    whole = exact_scores(matrix, query)
    assert whole.dtype == np.float32
    assert np.allclose(whole, matrix.astype(np.float64) @ query.astype(np.float64), atol=1e-7)
    for size in (1, 3, 5, 7, 64, 333):
        for _ in range(20):
            picked = rng.choice(len(matrix), size, replace=False)
            assert np.array_equal(exact_scores(matrix[picked], query), whole[picked])


class DenseEmbedder:
    """Dense pseudo-random unit vectors (seeded by the text): every bit of a sum counts."""

    model_id, revision = "dense", "1"

    def embed_passages(self, texts):
        import hashlib

        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            rows.append(np.random.default_rng(seed).standard_normal(384))
        vectors = np.asarray(rows, dtype=np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    embed_queries = embed_passages


@on_every_store
def test_every_way_of_ranking_gives_a_card_the_same_score(tmp_path: Path, store: str) -> None:
    cards = {f"card-{n:03d}": f"Card number {n} about topic {n % 7}." for n in range(61)}
    questions = [f"topic {n}" for n in range(4)]
    vaults = StoreVaults.make(
        store,
        tmp_path,
        lambda root, toml: write_vault(root, cards, toml),
        TOML,
        collection="dense",
        name="dense",
    )
    try:
        vaults.build(queries=questions, embedder=DenseEmbedder)
        for question in questions:
            full = dict(vaults.ranking(question).hits)
            for k in (1, 2, 5, 13):
                top = vaults.ranking(question, k=k).hits
                assert top == sorted(full.items(), key=lambda hit: (-hit[1], hit[0]))[:k]
            # A third of the cards is picked from the scan; three are scored alone.
            for subset in ([f"card-{n:03d}" for n in range(0, 61, 3)], ["card-002", "card-040"]):
                within = sorted(
                    ((name, full[name]) for name in subset), key=lambda hit: (-hit[1], hit[0])
                )
                assert vaults.ranking(question, cards=subset, k=1).hits == within[:1]
                assert vaults.ranking(question, cards=subset).hits == within
    finally:
        vaults.close()


# --- one vector per card, and an index opened again ------------------------------------------


def expected_ranking(
    path: Path, query: np.ndarray, names: list[str] | None = None
) -> list[tuple[str, float, tuple[object, ...] | None]]:
    """Every card's score worked out from the file alone: the best of its sections (its own
    vector without any), as float32 of a float64 dot product; best first, ties by name."""
    import json

    db = sqlite3.connect(path)
    own = {
        name: np.frombuffer(blob, "<f4")
        for name, blob in db.execute("SELECT name, embedding FROM card")
    }
    parts: dict[str, list[tuple[tuple[object, ...], np.ndarray]]] = {}
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "section" in tables:
        query_text = "SELECT card, ordinal, heading, line_start, line_end, embedding FROM section ORDER BY card, ordinal"
        for card, ordinal, heading, start, end, blob in db.execute(query_text):
            parts.setdefault(card, []).append(
                ((tuple(json.loads(heading)), start, end, ordinal), np.frombuffer(blob, "<f4"))
            )
    db.close()
    scored = []
    for name in names if names is not None else own:
        options = parts.get(name) or [(None, own[name])]
        values = [
            float(np.float32(v.astype(np.float64) @ query.astype(np.float64))) for _, v in options
        ]
        best = int(np.argmax(values))
        info = options[best][0]
        scored.append((name, values[best], None if info is None else (*info, len(options))))
    return sorted(scored, key=lambda hit: (-hit[1], hit[0]))


def ranked(index: SemanticIndex, query: np.ndarray, cards, k):  # type: ignore[no-untyped-def]
    hits, _, sections = index.rank_sections(query, cards, k)
    return [
        (
            name,
            score,
            None if s is None else (s.heading, s.line_start, s.line_end, s.ordinal, s.sections),
        )
        for (name, score), s in zip(hits, sections, strict=True)
    ]


class WindowedDense(DenseEmbedder):
    """Dense vectors, a word a token, a window of 40 tokens: a long card is cut at its headings."""

    max_tokens = 40

    def count_tokens(self, texts):  # type: ignore[no-untyped-def]
        return [len(text.split()) + 2 for text in texts]


def dense_vault(root: Path, sections_each: int) -> Vault:
    """61 cards (every 5th with `sections_each` headed parts of 30 words) and a dense index."""
    cards = {}
    for n in range(61):
        body = f"Card number {n} about topic {n % 7}."
        if n % 5 == 0:
            body = "\n\n".join(
                f"# Part {p}\n\n" + " ".join(f"topic{(n + p + w) % 7}" for w in range(30))
                for p in range(sections_each)
            )
        cards[f"card-{n:03d}"] = body
    write_vault(root, cards, TOML)
    vault = open_vault(root)
    questions = [f"topic {n}" for n in range(4)]
    code, text = build_command(vault, queries=questions, embedder=WindowedDense())
    assert code == 0, text
    return vault


@pytest.mark.parametrize("sections_each", [1, 3])
def test_ranking_with_one_or_several_vectors_per_card_matches_the_file(
    tmp_path: Path, sections_each: int
) -> None:
    vault = dense_vault(tmp_path / "dense", sections_each)
    index = open_vault_index(vault)
    assert index._loaded.sections is not None
    assert index._loaded.sections.one_each is (sections_each == 1)
    subsets = [None, [f"card-{n:03d}" for n in range(0, 61, 3)], ["card-002", "card-040"]]
    for n in range(4):
        query = index.query_vector(f"topic {n}")
        assert query is not None
        for names in subsets:
            cards = None if names is None else [vault.card(name) for name in names]
            expected = expected_ranking(index_file(vault.root), query, names)
            for k in (None, 1, 2, 5, 13, 100):
                assert ranked(index, query, cards, k) == expected[:k], (n, names, k)


def test_an_empty_section_table_ranks_each_card_by_its_own_vector(tmp_path: Path) -> None:
    vault = dense_vault(tmp_path / "dense", 1)
    tamper(vault.root, "DELETE FROM section")  # the table stays, empty
    reseal(sqlite3.connect(index_file(vault.root)))
    index = open_vault_index(vault)
    assert index._loaded.sections is None  # no second copy of the card matrix
    for n in range(4):
        query = index.query_vector(f"topic {n}")
        assert query is not None
        expected = expected_ranking(index_file(vault.root), query)
        assert all(section is None for _, _, section in expected)
        for k in (None, 1, 3, 61):
            assert ranked(index, query, None, k) == expected[:k]
            assert ranked(index, query, list(vault.cards), k) == expected[:k]


def test_an_index_path_pointed_at_another_file_is_read_again(tmp_path: Path) -> None:
    """The index named by a symlink: re-pointed at a file of the same size and mtime but
    other vectors, the next question is answered from the new file."""
    import os
    import shutil

    vault = dense_vault(tmp_path / "dense", 1)
    hql_dir = vault.root / ".hql"
    os.replace(hql_dir / "index.sqlite", hql_dir / "first.sqlite")
    (hql_dir / "index.sqlite").symlink_to("first.sqlite")
    query = open_vault_index(vault).query_vector("topic 1")
    assert query is not None
    before = semantic_ranking(vault, "topic 1", k=3).hits
    assert [name for name, _ in before] == [
        name for name, _, _ in expected_ranking(hql_dir / "first.sqlite", query)[:3]
    ]
    # The second file: the best card's vector swapped with the worst card's, same size.
    shutil.copy2(hql_dir / "first.sqlite", hql_dir / "second.sqlite")
    ranking = expected_ranking(hql_dir / "first.sqlite", query)
    best, worst = ranking[0][0], ranking[-1][0]
    db = sqlite3.connect(hql_dir / "second.sqlite")
    with db:
        vectors = dict(
            db.execute("SELECT card, embedding FROM section WHERE card IN (?, ?)", (best, worst))
        )
        for name, other in ((best, worst), (worst, best)):
            db.execute("UPDATE section SET embedding = ? WHERE card = ?", (vectors[other], name))
            db.execute("UPDATE card SET embedding = ? WHERE name = ?", (vectors[other], name))
    reseal(db)
    db.close()
    first = (hql_dir / "first.sqlite").stat()
    os.utime(hql_dir / "second.sqlite", ns=(first.st_atime_ns, first.st_mtime_ns))
    assert (hql_dir / "second.sqlite").stat().st_size == first.st_size
    (hql_dir / "next").symlink_to("second.sqlite")
    os.replace(hql_dir / "next", hql_dir / "index.sqlite")
    after = semantic_ranking(vault, "topic 1", k=3).hits
    expected = expected_ranking(hql_dir / "second.sqlite", query)[:3]
    assert [(name, score) for name, score in after] == [
        (name, score) for name, score, _ in expected
    ]
    assert after[0][0] != best and before[0][0] == best


def test_an_index_accepted_for_one_vault_is_checked_again_for_another(
    root: Path, tmp_path: Path
) -> None:
    assert SemanticIndex.open(index_file(root), root).card_names
    other = tmp_path / "other-vault"
    other.mkdir()
    with pytest.raises(SemanticIndexError, match="the index was built for"):
        SemanticIndex.open(index_file(root), other)
    assert SemanticIndex.open(index_file(root), root).card_names


def _give_the_worsts_vectors(root: Path, best: str, worst: str) -> None:
    """The best card's vectors become the worst card's, sealed as a build that wrote them."""
    db = sqlite3.connect(index_file(root))
    with db:
        for table, key in (("card", "name"), ("section", "card")):
            (vector,) = db.execute(
                f"SELECT embedding FROM {table} WHERE {key} = ?", (worst,)
            ).fetchone()
            db.execute(f"UPDATE {table} SET embedding = ? WHERE {key} = ?", (vector, best))
    reseal(db)
    db.close()


def test_a_vault_reuses_its_store_until_the_index_file_changes(root: Path) -> None:
    from hql.index.stores import _OPENED

    vault = open_vault(root)
    first = semantic_ranking(vault, QUERY)
    store = _OPENED[vault][1]
    assert semantic_ranking(vault, QUERY).hits == first.hits
    assert _OPENED[vault][1] is store
    # The best card's vectors become the worst card's: the next question reads the new file.
    best, worst = first.hits[0][0], first.hits[-1][0]
    _give_the_worsts_vectors(root, best, worst)
    after = semantic_ranking(vault, QUERY)
    assert _OPENED[vault][1] is not store
    assert dict(after.hits)[best] == dict(first.hits)[worst]
    assert after.hits[0][0] != best


def test_an_index_file_written_over_keeping_its_size_and_mtime_is_read_again(root: Path) -> None:
    """Vectors changed in place and the mtime set back (as `cp -p` of an older build over
    it would leave it): inode, size and mtime all read as before; the change time does not."""
    import os
    import time

    from hql.index.stores import _OPENED

    vault = open_vault(root)
    first = semantic_ranking(vault, QUERY)
    store = _OPENED[vault][1]
    before = index_file(root).stat()
    best, worst = first.hits[0][0], first.hits[-1][0]
    _give_the_worsts_vectors(root, best, worst)
    os.utime(index_file(root), ns=(before.st_atime_ns, before.st_mtime_ns))
    while index_file(root).stat().st_ctime_ns == before.st_ctime_ns:  # a coarse clock tick
        time.sleep(0.005)
        os.utime(index_file(root), ns=(before.st_atime_ns, before.st_mtime_ns))
    after_write = index_file(root).stat()
    kept = ("st_ino", "st_size", "st_mtime_ns")
    assert [getattr(after_write, name) for name in kept] == [getattr(before, name) for name in kept]
    assert after_write.st_ctime_ns != before.st_ctime_ns
    after = semantic_ranking(vault, QUERY)
    assert _OPENED[vault][1] is not store
    assert dict(after.hits)[best] == dict(first.hits)[worst]


def _topic_index(tmp_path: Path, cards: int, dimensions: int) -> tuple[SemanticIndex, list, list]:
    """An index of `cards` vectors mixed from a few topics (near ties), some copied exactly
    (ties), with the card records its rows were written from and question vectors."""
    from hql.index import schema

    class Named:
        def __init__(self, name: str, digest: str) -> None:
            self.name, self.digest = name, digest

    rng = np.random.default_rng(30)
    topics = rng.standard_normal((8, dimensions))
    weights = rng.dirichlet(np.full(8, 0.1), size=cards)
    matrix = weights @ topics + 0.01 * rng.standard_normal((cards, dimensions))
    matrix[1::97] = matrix[0]  # exact ties across the whole index
    matrix = (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)
    named = [Named(f"card-{row:05d}", f"digest-{row}") for row in range(cards)]
    root = tmp_path / "topics"
    root.mkdir()
    connection = sqlite3.connect(root / "index.sqlite")
    schema.write_index(
        connection,
        schema.ModelRow("topics", "1", dimensions, "cosine", 1),
        schema.MetaRow(schema.SCHEMA_VERSION, str(root), "2026-01-01T00:00:00Z", "test"),
        (
            schema.CardRow(card.name, f"{card.name}.md", card.digest, schema.vector_to_blob(row))
            for card, row in zip(named, matrix, strict=True)
        ),
        [],
    )
    connection.close()
    near = matrix[rng.integers(0, cards, 20)] + 0.05 * rng.standard_normal((20, dimensions))
    questions = [matrix[0], *near]
    questions = [(q / np.linalg.norm(q)).astype(np.float32) for q in questions]
    return SemanticIndex.open(root / "index.sqlite", root), named, questions


def test_the_best_few_of_every_card_rank_as_the_general_path_does(tmp_path: Path) -> None:
    """The one-pass ranking of every card (`_best_of_all`) gives the general path's hits,
    scores to the last bit, order (ties at the k boundary by name) and warnings, for a few
    best and for many (more candidates than are sorted in Python)."""
    index, named, questions = _topic_index(tmp_path, 3000, 64)
    stale = [*named[:5], type(named[0])(named[5].name, "changed"), *named[6:]]
    for cards in (named, stale, None):
        for vector in questions:
            for k in (1, 3, 10, 50, 100, 2999):
                hits, warnings, sections = index.rank_sections(vector, cards, k)
                rows, ordered = index._candidates(vector, None, k)
                general, general_sections = index.rank_rows(vector, rows, k, ordered)
                assert [(name, repr(score)) for name, score in hits] == [
                    (name, repr(score)) for name, score in general
                ]
                assert sections == general_sections
                assert warnings == (index.input_warnings(cards) if cards is not None else [])
                assert hits == index.rank_sections(vector, cards, None)[0][:k]
                # The one pass ranked them (a few candidates sorted in Python, many by numpy).
                rows, scores = index._best_of_all(vector, k)
                assert [
                    (named[row].name, score) for row, score in zip(rows, scores, strict=True)
                ] == hits
                if cards is not None:
                    found, scores, said = index.best_cards(vector, cards, k)
                    assert [
                        (card.name, score) for card, score in zip(found, scores, strict=True)
                    ] == hits
                    assert said == warnings
                    last_of = {card.name: card for card in cards}
                    assert all(card is last_of[card.name] for card in found)
            assert index._best_of_all(vector, 3000) is None  # every card: the general path
    # As many cards as rows, but one twice and another missing: the missing one is not ranked.
    repeated = [named[0], named[0], *named[2:]]
    for vector in questions:
        hits, _, _ = index.rank_sections(vector, repeated, 3000)
        assert named[1].name not in {name for name, _ in hits}
        assert index.best_cards(vector, repeated, 3000) is None  # not every card: not one pass
    assert index.rank_sections(questions[0], named, 100)[0][:2] == [
        ("card-00000", index.rank_sections(questions[0], named, 1)[0][0][1]),
        ("card-00001", index.rank_sections(questions[0], named, 1)[0][0][1]),
    ]  # the copies of card 0 tie with it, in name order


def test_a_semantic_step_ranks_the_usual_question_as_the_general_path_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cards | semantic($q) | take(n)` over a SQLite index without sections (answered by
    `scanned_best` in one call) gives the general path's ranking: the same hits, scores to
    the last bit, retrieval and warnings, with `exact`, a filter, a stale or a missing card."""
    import hql
    from hql.index import schema
    from hql.index.reader import SemanticIndex

    rng = np.random.default_rng(31)
    names = [f"note-{n:04d}" for n in range(400)]
    root = tmp_path / "notes"
    write_vault(root, {name: f"Note {name}." for name in names}, TOML)
    vault = open_vault(root)
    topics = rng.standard_normal((6, 32))
    matrix = rng.dirichlet(np.full(6, 0.2), size=len(names)) @ topics
    matrix += 0.01 * rng.standard_normal(matrix.shape)
    matrix[7::50] = matrix[3]  # exact ties
    matrix = (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)
    questions = [f"question {n}" for n in range(8)]
    asked = matrix[rng.integers(0, len(names), len(questions))] + 0.05 * rng.standard_normal(
        (len(questions), 32)
    )
    asked[0] = matrix[3]
    asked = (asked / np.linalg.norm(asked, axis=1, keepdims=True)).astype(np.float32)
    (root / ".hql").mkdir(exist_ok=True)
    connection = sqlite3.connect(index_file(root))
    by_name = {card.name: card for card in vault.cards}
    digests = {name: by_name[name].digest for name in names}
    digests[names[5]] = "an older text"  # a stale card
    schema.write_index(
        connection,
        schema.ModelRow("topics", "1", 32, "cosine", 1),
        schema.MetaRow(schema.SCHEMA_VERSION, str(root), "2026-01-01T00:00:00Z", "test"),
        [
            schema.CardRow(name, f"{name}.md", digests[name], schema.vector_to_blob(row))
            for name, row in zip(names, matrix, strict=True)
        ],
        [(q, schema.vector_to_blob(v)) for q, v in zip(questions, asked, strict=True)],
    )
    connection.close()
    (root / "extra.md").write_text("Not in the index.\n", encoding="utf-8")  # a missing card
    vault = open_vault(root)
    programs = [
        "import semantic\ncards | semantic($q) | take(10)",
        "import semantic\ncards | semantic($q) | take(1)",
        "import semantic\ncards | semantic($q) | take(3)",
        "import semantic\ncards | semantic($q, exact = true) | take(10)",
        "import semantic\ncards | semantic($q) | take(100)",
        "import semantic\ncards | semantic($q)",
        'import semantic\ncards | filter(c => c.name != "note-0003") | semantic($q) | take(5)',
        "import semantic\ncards | semantic($q) | take(5) | map(h => h.card.name)",
    ]

    def answers() -> list[tuple[object, list[str], list[str]]]:
        found = []
        for program in programs:
            for q in questions:
                outcome = hql.run(program, vault=vault, params={"q": q})
                assert not outcome.failed, outcome.reports
                value = outcome.value
                scores = [repr(hit.score) for hit in getattr(value, "hits", ())]
                found.append((value, scores, [report.message for report in outcome.reports]))
        return found

    calls = []
    best_cards = SemanticIndex.best_cards
    monkeypatch.setattr(
        SemanticIndex, "best_cards", lambda *args: calls.append(1) or best_cards(*args)
    )
    quick = answers()
    assert calls  # the usual question took the one call
    monkeypatch.setattr(SemanticIndex, "best_cards", lambda *args: None)
    monkeypatch.setattr(SemanticIndex, "_best_of_all", lambda *args: None)
    general = answers()
    assert quick == general
    assert any(messages for _, _, messages in quick)  # the stale and missing cards' warnings
    assert quick[0][0].hits[0].card.name == "note-0003"  # ties: name order
    assert quick[0][0].hits[1].card.name == "note-0007"
