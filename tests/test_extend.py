"""The public extension API (hql.extend): declaring, checking, running, failing, ranking."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hql
from hql.explain import explain
from hql.extend import (
    Context,
    Extension,
    ExtensionError,
    Ranking,
    ranking,
    register,
    retrieval,
)
from hql.registry import REGISTRY, Registry, registry

FIXTURES = Path(__file__).parent / "fixtures"
limits: list[int | None] = []  # what the `titles` step was told by the planner, call by call


def declare_probe() -> Extension:
    probe = Extension(
        "probe", version="9.9", summary="steps for testing", card_metadata={"seen": True}
    )

    @probe.step(
        "Collection<Card> | lengths(min: Int = 0) -> List<Data>",
        summary="each card's name and body length",
        example="cards | lengths",
    )
    def lengths(cards: list[Any], min: int) -> list[dict[str, Any]]:
        rows = [{"card": card.name, "length": len(card.body)} for card in cards]
        return [row for row in rows if row["length"] >= min]

    @probe.step("Seq<T> | pairs() -> List<List<T>>", summary="neighbours")
    def pairs(items: list[Any]) -> list[list[Any]]:
        return [[a, b] for a, b in zip(items, items[1:], strict=False)]

    @probe.step("Seq<T> | ordered(by: T => Float) -> List<T>", summary="sort by a key")
    def ordered(items: list[Any], by: Any) -> list[Any]:
        return sorted(items, key=by)

    @probe.step("Card | initial() -> String", summary="the first letter of the title")
    def initial(card: Any) -> str:
        return card.title[:1]

    @probe.step("Collection<T> | explode() -> Int", summary="raises")
    def explode(items: list[Any]) -> int:
        raise RuntimeError("the service is down")

    @probe.step("Collection<T> | liar() -> List<Int>", summary="returns a wrong element")
    def liar(items: list[Any]) -> list[Any]:
        return [1, 2, "three"]

    @probe.step("Collection<T> | refuse() -> Int", summary="fails politely")
    def refuse(items: list[Any], context: Context) -> int:
        raise context.fail("no quota left")

    @probe.step("Collection<T> | noisy() -> Int", summary="warns")
    def noisy(items: list[Any], context: Context) -> int:
        context.warn("counted in a hurry")
        return len(items)

    @probe.step(
        "Collection<T> | titles(query: String) -> Ranking<T> where T: Card",
        summary="rank by title words shared with the query",
        absorbs=("limit",),
    )
    def titles(cards: list[Any], query: str, context: Context) -> Ranking:
        asked = set(query.lower().split())
        scored = []
        for card in cards:
            shared = asked & set(card.title.lower().split())
            if shared:
                scored.append(
                    (card, len(shared) / len(asked), "title has " + ", ".join(sorted(shared)))
                )
        made = retrieval(query, "probe.titles.v1", metric="cosine", revision="1")
        result = ranking(made, scored)
        limits.append(context.limit)
        return Ranking(result.hits[: context.limit], made) if context.limit else result

    @probe.step(
        "Collection<T> | counted(query: String) -> Ranking<T> where T: Card",
        summary="query words in the body, with the most a card can score as its bound",
    )
    def counted(cards: list[Any], query: str) -> Ranking:
        asked = query.lower().split()
        rows = []
        for card in cards:
            found = {word: 1.0 for word in asked if word in card.body.lower()}
            if found:  # `matched` is the evidence bm25's rule looks for
                rows.append((card, float(len(found)), {"matched": found}))
        made = retrieval(query, "probe.counted.v1", metric="bm25", score_bound=len(asked))
        return ranking(made, rows)

    @probe.function("shout(text: String, times: Int = 1) -> String", summary="capitals")
    def shout(text: str, times: int) -> str:
        return (text.upper() + "!") * times

    return probe


@pytest.fixture()
def probe() -> Iterator[Extension]:
    declared = declare_probe()
    register(declared)
    try:
        yield declared
    finally:
        REGISTRY.remove("probe")


@pytest.fixture()
def vault(probe: Extension) -> hql.Vault:
    return hql.open_vault(FIXTURES / "vault", use_cache=False)


def run(program: str, vault: hql.Vault | None) -> hql.Outcome:
    return hql.run(program, vault=vault)


def failure(outcome: hql.Outcome) -> str:
    assert outcome.failed, outcome.text()
    return outcome.reports[-1].message


# --- declarations ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("signature", "expected"),
    [
        (
            "Collection<Crad> | f() -> Int",
            "unknown type `Crad` (did you mean `Card`?)",
        ),
        (
            "Collection<Card> | f( -> Int",
            "does not parse at column 23: expected a parameter name, found `->`",
        ),
        ("Collection<Card> | f() -> List<U>", "the type variable `U` is not fixed"),
        ('Collection<Card> | f(n: Int = "x") -> Int', "the default of `n` is 'x'"),
        ("Collection<Card> | f(context: Int) -> Int", "`context` cannot be a parameter name"),
        ("Collection<Card> | f() -> Map<String>", "`Map` takes 2 type arguments, not 1"),
        ("Collection<Card> f() -> Int", "expected `|`, found `f`"),
        ("Seq<T> | f(by: U => Int) -> Int", "the lambda parameter `by` uses `U`"),
    ],
)
def test_a_declaration_that_does_not_parse_says_where_and_why(
    signature: str, expected: str
) -> None:
    extension = Extension("broken", version="1", summary="broken")
    with pytest.raises(ExtensionError) as raised:
        extension.add_step(signature, lambda xs, **kw: 0, summary="x")
    message = str(raised.value)
    assert message.startswith("extension `broken`, `f`:")
    assert expected in message


def test_declarations_are_checked_against_the_python_function() -> None:
    extension = Extension("broken", version="1", summary="broken")
    with pytest.raises(ExtensionError, match="cannot be called as declared"):
        extension.add_step("Seq<T> | f(n: Int) -> Int", lambda xs: 0, summary="x")
    with pytest.raises(ExtensionError, match="cannot absorb `order`"):
        extension.add_step("Seq<T> | f() -> List<T>", lambda xs: 0, summary="x", absorbs=("order",))
    with pytest.raises(ExtensionError, match="absorbs `limit` returns a Ranking or a List"):
        extension.add_step("Seq<T> | f() -> Int", lambda xs: 0, summary="x", absorbs=("limit",))
    with pytest.raises(ExtensionError, match="only a step can take"):
        extension.add_function("f(by: Int => Int) -> Int", lambda by: 0, summary="x")
    with pytest.raises(ExtensionError, match="lowercase identifier"):
        Extension("Bad-Name", version="1", summary="x")
    with pytest.raises(ExtensionError, match="card_metadata"):
        Extension("x", version="1", summary="x", card_metadata={"when": object()})


def test_a_name_taken_twice_is_refused(probe: Extension) -> None:
    with pytest.raises(ExtensionError, match="`probe` is already provided"):
        register(declare_probe())
    clash = Extension("clash", version="1", summary="x")
    clash.add_function("compare(a: Int) -> Int", lambda a: a, summary="x")
    with pytest.raises(ExtensionError, match="`compare` is already built in"):
        register(clash, registry())
    target = Registry()
    bm25 = Extension("bm25", version="1", summary="x")
    register(bm25, target)
    with pytest.raises(ExtensionError, match="already provided by shipped"):
        register(Extension("bm25", version="2", summary="y"), target)


# --- checking -------------------------------------------------------------------------


def test_calls_are_checked_from_the_declaration(vault: hql.Vault) -> None:
    assert str(hql.check("import probe\ncards | lengths", vault=vault).type) == "List<Data>"
    assert "`min` of `lengths` is Int, not String" in failure(
        hql.check('import probe\ncards | lengths(min = "x")', vault=vault)
    )
    assert "`lengths` works on Collection<Card>, not List<Int>" in failure(
        hql.check("import probe\n[1, 2] | lengths", vault=vault)
    )
    assert "`titles` needs `query`" in failure(
        hql.check("import probe\ncards | titles", vault=vault)
    )
    assert "`titles` works on Collection<T> where T: Card, not List<Int>" in failure(
        hql.check('import probe\n[1] | titles("x")', vault=vault)
    )


def test_type_variables_follow_the_input(vault: hql.Vault) -> None:
    assert str(hql.check("import probe\n[1, 2, 3] | pairs", vault=vault).type) == "List<List<Int>>"
    assert "`pairs` works on Seq<T>, not Set<Int>" in failure(
        hql.check("import probe\n{1, 2} | pairs", vault=vault)
    )
    listed = hql.check('import probe\n[ [[oauth]], [[missing]] ] | titles("x")', vault=vault)
    assert str(listed.type) == "Ranking<Card>"
    ranked = run('import probe\n[ [[oauth]], [[missing]] ] | titles("oauth")', vault).value
    assert [hit.card.name for hit in ranked.hits] == ["oauth"]  # the absent element is left out
    typed = hql.check('import probe\ncards | typed(ConceptCard) | titles("x")', vault=vault)
    assert str(typed.type) == "Ranking<ConceptCard>"
    assert str(hql.check('import probe\n[[oauth]] | titles("x")', vault=vault).type) == (
        "Ranking<Card>"
    )


def test_a_lambda_parameter_is_typed_with_the_element(vault: hql.Vault) -> None:
    outcome = run("import probe\n[3, 1, 2] | ordered(by = x => 0.0 + 1.5)", vault)
    assert not outcome.failed, outcome.render_reports()
    assert "the lambda given as `by` of `ordered` must give Float, not String" in failure(
        hql.check('import probe\n[3, 1] | ordered(by = x => "a")', vault=vault)
    )


def test_an_absent_input_passes_through_a_step_of_one_value(vault: hql.Vault) -> None:
    assert str(hql.check("import probe\n[[oauth]] | initial", vault=vault).type) == "Option<String>"
    assert run("import probe\n[[oauth]] | initial", vault).text() == "O"
    assert run("import probe\n[[missing]] | initial", vault).text() == "none"


def test_steps_and_functions_need_their_import(vault: hql.Vault) -> None:
    assert "`lengths` is provided by the `probe` extension: write `import probe`" in failure(
        run("cards | lengths", vault)
    )
    assert "`shout` is provided by the `probe` extension: write `import probe`" in failure(
        run('shout("x")', vault)
    )
    assert run('import probe\nshout("hi", times = 2)', vault).text() == "HI!HI!"
    assert "`text` of `shout` is String, not Int" in failure(run("import probe\nshout(1)", vault))
    assert "did you mean `shout`?" in failure(run('import probe\nshuot("x")', vault))


# --- running --------------------------------------------------------------------------


def test_values_cross_into_python_and_back(vault: hql.Vault) -> None:
    outcome = run("import probe\ncards | lengths(min = 400) | map(r => r.card)", vault)
    assert not outcome.failed, outcome.render_reports()
    assert run("import probe\n[1, 2, 3] | pairs", vault).text() == "[[1, 2], [2, 3]]"


def test_an_exception_is_a_report_naming_the_extension_and_step(vault: hql.Vault) -> None:
    outcome = run("import probe\ncards | explode", vault)
    report = outcome.reports[-1]
    assert report.stage.value == "evaluation"
    assert report.message == (
        "the step `explode` of the `probe` extension failed (RuntimeError: the service is down)"
    )
    assert outcome.render_reports().count("\n") < 8  # a report, never a traceback


def test_a_wrong_return_value_is_refused(vault: hql.Vault) -> None:
    assert failure(run("import probe\ncards | liar", vault)) == (
        "the step `liar` of the `probe` extension returned element 3: a Python str where its "
        "signature promises Int, so its value was refused"
    )


def test_context_fail_and_warn(vault: hql.Vault) -> None:
    assert failure(run("import probe\ncards | refuse", vault)) == (
        "the step `refuse` of the `probe` extension failed: no quota left"
    )
    noisy = run("import probe\ncards | noisy", vault)
    assert not noisy.failed and noisy.reports[0].message == "counted in a hurry"


def test_card_metadata_is_contributed_under_the_extension_name(vault: hql.Vault) -> None:
    assert run("[[oauth]].metadata.probe", vault).text() == "{seen: true}"


# --- rankings ---------------------------------------------------------------------------


def test_a_third_party_ranking_works_with_relevant_fuse_and_explain(vault: hql.Vault) -> None:
    ranked = run('import probe\ncards | titles("bearer tokens oauth")', vault)
    assert not ranked.failed, ranked.render_reports()
    assert [hit.card.name for hit in ranked.value.hits][:1] == ["bearer-tokens"]
    assert ranked.value.hits[0].retrieval.model == "probe.titles.v1"

    floor = run('import probe\ncards | titles("bearer tokens oauth") | relevant(min = 0.6)', vault)
    assert [hit.score >= 0.6 for hit in floor.value.hits] == [True] * len(floor.value.hits)
    assert floor.value.retrieval.extra["cutoff"]["rule"] == "min"
    default = run('import probe\ncards | titles("bearer tokens oauth") | relevant', vault)
    assert default.value.retrieval.extra["cutoff"]["rule"] == "median-margin"

    fused = run(
        'import probe\nimport bm25\nfuse(cards | titles("bearer token"), cards | bm25("bearer token"))',
        vault,
    )
    assert not fused.failed, fused.render_reports()
    models = [source["model"] for source in fused.value.retrieval.extra["inputs"]]
    assert models == ["probe.titles.v1", "hql.bm25.v1"]

    session = hql.Session(vault)
    text, _, failed = explain(session, 'import probe\ncards | titles("bearer tokens")', "<test>")
    assert not failed
    assert "model probe.titles.v1 (revision 1), metric cosine" in text
    assert "title has bearer, tokens" in text


def test_relevant_applies_the_coverage_rule_to_a_declared_score_bound(vault: hql.Vault) -> None:
    everything = run('import probe\ncards | counted("bearer token zebra")', vault).value
    kept = run('import probe\ncards | counted("bearer token zebra") | relevant', vault).value
    cutoff = kept.retrieval.extra["cutoff"]
    assert cutoff["rule"] == "coverage" and cutoff["bound"] == 3.0
    best = everything.hits[0].score
    threshold = max(0.05 * 3.0, 0.6 * best)
    assert [h.card for h in kept.hits] == [h.card for h in everything.hits if h.score >= threshold]
    assert kept.hits and cutoff["threshold"] == threshold


def test_a_planner_pushes_take_into_a_step_that_absorbs_limit(vault: hql.Vault) -> None:
    assert REGISTRY.extensions["probe"].steps["titles"].absorbs == ("limit",)
    assert REGISTRY.extensions["probe"].steps["lengths"].absorbs == ()
    limits.clear()
    whole = run('import probe\ncards | titles("bearer tokens oauth")', vault).value
    first = run('import probe\ncards | titles("bearer tokens oauth") | take(1)', vault).value
    assert limits == [None, 1]
    assert [hit.card for hit in first.hits] == [hit.card for hit in whole.hits[:1]]


def test_ranking_sorts_best_first_and_keeps_each_card_once(vault: hql.Vault) -> None:
    oauth, jwt = vault.card("oauth"), vault.card("bearer-tokens")
    made = retrieval("q", "m", metric="x", score_bound=2.0, note="kept")
    ranked = ranking(made, [(jwt, 0.5), (oauth, 0.9), (jwt, 0.1)])
    assert [(h.card.name, h.score) for h in ranked.hits] == [("oauth", 0.9), ("bearer-tokens", 0.5)]
    assert ranked.retrieval.as_tree()["score_bound"] == 2.0
    assert ranked.retrieval.as_tree()["note"] == "kept"
    with pytest.raises(TypeError):
        ranking(made, [("oauth", 1.0)])  # type: ignore[list-item]


# --- the shipped bm25 is declared through the same API ---------------------------------


def test_bm25_is_declared_through_the_public_api() -> None:
    from hql.steps import retrieval as shipped

    assert isinstance(shipped.BM25, Extension)
    spec = registry().extensions["bm25"].steps["bm25"]
    assert spec.signature == shipped.BM25.declared["bm25"].signature.text
    assert spec.run.__module__ == "hql.extend"
    outcome = hql.check('import bm25\n[1] | bm25("x")')
    assert "`bm25` works on Collection<T> where T: Doc, not List<Int>" in failure(outcome)


# --- discovery ------------------------------------------------------------------------


class FakeDist:
    name = "hql-ext-fake"
    version = "1.2"


class FakeEntryPoint:
    def __init__(self, name: str, loaded: Any) -> None:
        self.name = name
        self.value = f"fake_module:{name}"
        self.dist = FakeDist()
        self._loaded = loaded

    def load(self) -> Any:
        if isinstance(self._loaded, Exception):
            raise self._loaded
        return self._loaded


def test_a_package_that_fails_to_load_is_named_and_skipped() -> None:
    from hql.extend import _load_one

    target = Registry()
    target.installed_loaded = True
    _load_one(target, FakeEntryPoint("gone", ImportError("No module named 'fake_module'")))
    _load_one(target, FakeEntryPoint("other", Extension("different", version="1", summary="x")))
    _load_one(target, FakeEntryPoint("good", Extension("good", version="1", summary="x")))
    assert "good" in target.extensions and target.extensions["good"].package == "hql-ext-fake 1.2"
    assert target.load_failures["gone"] == (
        "the package `hql-ext-fake 1.2` (entry point `gone = fake_module:gone`) could not be "
        "loaded: ImportError: No module named 'fake_module'"
    )
    assert "named `other` but declares the extension `different`" in target.load_failures["other"]


def test_shipped_programs_never_look_for_installed_packages() -> None:
    probe = (
        "import sys, hql\n"
        "from hql.registry import REGISTRY\n"
        "assert hql.run('1 + 1').value == 2\n"
        "assert hql.run('[3, 1] | sort | take(1)').text() == '[1]'\n"
        "print(REGISTRY.installed_loaded, 'importlib.metadata' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.stdout.split() == ["False", "False"], done.stderr


def test_an_unknown_name_looks_for_installed_packages_once() -> None:
    probe = (
        "import json, hql\n"
        "from hql.registry import REGISTRY\n"
        "first = hql.run('import nothing_here').reports[0].message\n"
        "print(json.dumps([REGISTRY.installed_loaded, first]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    loaded, message = json.loads(done.stdout)
    assert loaded is True and message == "no extension named `nothing_here` is registered"


def test_completion_offers_extension_steps_functions_and_their_parameters(
    vault: hql.Vault,
) -> None:
    from hql.repl.completer import HqlCompleter

    session = hql.Session(vault)
    completer = HqlCompleter(session)
    steps = {c.text: c.meta for c in completer.candidates("cards | leng")[1]}
    assert steps["lengths"] == "each card's name and body length (import probe)"
    session.run("import probe")
    assert "shout" in [c.text for c in completer.candidates("sho")[1]]
    assert [c.text for c in completer.candidates('shout("a", ')[1]][:2] == ["text = ", "times = "]
    assert "min = " in [c.text for c in completer.candidates("cards | lengths(")[1]]


# --- whatever a declaration says, the answer is an ExtensionError or a declaration ----

SIGNATURE_PARTS = [
    "Collection<Card>", "Seq<T>", "List<Int>", "Ranking<T>", "Map<String, Data>", "Option<Card>",
    "|", "f", "(", ")", "->", "=>", ",", ":", "?", "=", "<", ">", "where", "T", "U", "Doc",
    "n", "by", "1", "2.5", '"x"', "true", "none", "Int", "Float", "Strin", "@", "\\", " ",
]  # fmt: skip
VALID = [
    "Collection<Card> | f(n: Int = 1) -> List<Data>",
    "Seq<T> | f(by: T => Float, n?: Int) -> List<T> where T: Orderable",
    "f(a: String, b: Int = 2) -> String",
]


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.lists(st.sampled_from(SIGNATURE_PARTS), max_size=14).map(" ".join),
        st.tuples(st.sampled_from(VALID), st.integers(0, 60), st.integers(0, 60)).map(
            lambda t: t[0][: t[1]] + t[0][t[2] :]
        ),
        st.text(max_size=40),
    ),
    st.booleans(),
)
def test_any_signature_is_accepted_or_refused_with_an_extension_error(
    text: str, step: bool
) -> None:
    extension = Extension("fuzz", version="1", summary="fuzz")

    def run(*args: Any, **kwargs: Any) -> int:
        return 0

    try:
        if step:
            extension.add_step(text, run, summary="x")
        else:
            extension.add_function(text, run, summary="x")
    except ExtensionError as error:
        assert str(error).startswith("extension `fuzz`, ")
