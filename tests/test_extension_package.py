"""An extension package installed with pip into a fresh environment beside HQL.

The environment is a new venv whose site-packages sees this project and the
current environment through a `.pth` file; pip installs examples/hql-ext-demo
(and a deliberately broken package) into it offline, without build isolation.
Programs then run in that environment as a user's would.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "hql-ext-demo"
VAULT = ROOT / "vaults" / "web-auth"

BROKEN_MODULE = """
from hql.extend import Extension

extension = Extension("broken", version="0.0.1", summary="declares a signature that does not parse")


@extension.step("Collection<Card> | count_words( -> Int", summary="never loads")
def count_words(cards):
    return 0
"""

BROKEN_PYPROJECT = """
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "hql-ext-broken"
version = "0.0.1"

[project.entry-points."hql.extensions"]
broken = "hql_ext_broken:extension"

[tool.setuptools]
py-modules = ["hql_ext_broken"]
"""


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with the demo and the broken package installed; returns its python."""
    base = tmp_path_factory.mktemp("extension-env")
    venv = base / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    shared = [str(ROOT), *site.getsitepackages()]  # this project first, then what HQL needs
    (Path(purelib) / "_hql_shared.pth").write_text("\n".join(shared) + "\n", encoding="utf-8")
    demo = base / "hql-ext-demo"  # built from a copy: a build writes beside its sources
    shutil.copytree(DEMO, demo, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    broken = base / "hql-ext-broken"
    broken.mkdir()
    (broken / "pyproject.toml").write_text(BROKEN_PYPROJECT, encoding="utf-8")
    (broken / "hql_ext_broken.py").write_text(BROKEN_MODULE, encoding="utf-8")
    installed = subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--no-cache-dir",
            "--disable-pip-version-check",
            "--quiet",
            str(demo),
            str(broken),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=_clean_env(),
    )
    assert installed.returncode == 0, installed.stderr
    return python


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HQL_REPORT")}
    env["PYTHONWARNINGS"] = "ignore"
    return env


def run_in(python: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=180,
        env=_clean_env(),
        cwd=python.parent,
    )


# One interpreter runs the whole tour (the machine is shared: fewer starts, same coverage).
TOUR = textwrap.dedent(
    """
    import contextlib, io, json, sys
    from hql.cli import main
    from hql.api import Session, open_vault
    from hql.repl.completer import HqlCompleter

    vault_path = sys.argv[1]
    results = {}

    def cli(*args):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
        return {"code": code, "out": out.getvalue(), "err": err.getvalue()}

    ranked = 'import demo\\ncards | similar("bearer token")'
    results["check"] = cli("--vault", vault_path, "--format", "json", "eval", ranked)
    results["relevant"] = cli("--vault", vault_path, "--format", "json", "eval", ranked + " | relevant")
    results["fuse"] = cli(
        "--vault", vault_path, "--format", "json", "eval",
        'import demo\\nimport bm25\\nfuse(cards | similar("bearer token"), cards | bm25("bearer token"))',
    )
    results["explain"] = cli("--vault", vault_path, "explain", ranked + " | take(2)")
    results["wordcount"] = cli("--vault", vault_path, "eval", "import demo\\ncards | wordcount(min = 60) | count")
    results["shout"] = cli("eval", 'import demo\\nshout("hi")')
    results["needs_import"] = cli("eval", 'shout("hi")')
    results["type_error"] = cli("--vault", vault_path, "--format", "json", "eval", "import demo\\n[1] | similar(\\"x\\")")
    results["broken"] = cli("eval", "import broken")
    results["builtins"] = cli("builtins")
    results["help"] = cli("builtins", "--extension", "demo")
    results["help_broken"] = cli("builtins", "--extension", "broken")
    results["metadata"] = cli("--vault", vault_path, "eval", "[[oauth]].metadata.demo")

    session = Session(open_vault(vault_path))
    completer = HqlCompleter(session)
    results["complete_step"] = [c.text for c in completer.candidates("cards | simi")[1]]
    results["complete_import"] = [c.text for c in completer.candidates("import de")[1]]
    session.run("import demo")
    results["complete_name"] = [c.text for c in completer.candidates("sho")[1]]
    print(json.dumps(results))
    """
)


@pytest.fixture(scope="module")
def tour(env: Path) -> dict[str, dict[str, object]]:
    done = run_in(env, "-c", TOUR, str(VAULT))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def value(result: dict[str, object]) -> object:
    assert result["code"] == 0, result["err"]
    return json.loads(str(result["out"]))["value"]


def test_the_demo_ranks_and_is_checked(tour: dict[str, dict[str, object]]) -> None:
    outcome = json.loads(str(tour["check"]["out"]))
    assert outcome["type"] == "Ranking<Card>"
    hits = outcome["value"]["hits"]
    assert hits and hits[0]["card"] == "bearer-tokens"
    assert outcome["value"]["retrieval"]["query"] == "bearer token"
    message = json.loads(str(tour["type_error"]["out"]))["reports"][0]["message"]
    assert message == "`similar` works on Collection<T> where T: Card, not List<Int>"


def test_the_demo_ranking_works_with_relevant_fuse_and_explain(
    tour: dict[str, dict[str, object]],
) -> None:
    kept = value(tour["relevant"])["hits"]  # type: ignore[index]
    everything = value(tour["check"])["hits"]  # type: ignore[index]
    assert 0 < len(kept) < len(everything)
    assert [hit["card"] for hit in kept] == [hit["card"] for hit in everything[: len(kept)]]
    fused = json.loads(str(tour["fuse"]["out"]))
    assert fused["type"] == "Ranking<Card>"
    models = [source["model"] for source in fused["value"]["retrieval"]["inputs"]]
    assert models == ["demo.similar.v1", "hql.bm25.v1"]
    explained = str(tour["explain"]["out"])
    assert "model demo.similar.v1 (revision 0.1.0), metric cosine" in explained
    assert "shares bearer, token" in explained


def test_the_demo_step_and_function_run(tour: dict[str, dict[str, object]]) -> None:
    assert tour["wordcount"]["code"] == 0 and str(tour["wordcount"]["out"]).strip().isdigit()
    assert str(tour["shout"]["out"]).strip() == "HI!"
    assert "`shout` is provided by the `demo` extension: write `import demo`" in str(
        tour["needs_import"]["err"]
    )
    assert str(tour["metadata"]["out"]).strip() == '{words_model: "demo.words.v1"}'


def test_installed_extensions_are_listed_and_documented(
    tour: dict[str, dict[str, object]],
) -> None:
    listing = str(tour["builtins"]["out"])
    assert "demo 0.1.0 (imported where it is used, package hql-ext-demo 0.1.0)" in listing
    assert "Collection<T> | similar(query: String) -> Ranking<T> where T: Card" in listing
    assert "installed extensions that did not load" in listing
    help_text = str(tour["help"]["out"])
    assert help_text.startswith("## `demo` (imported where it is used)")
    assert "a following `take(k)` may be pushed into it" in help_text
    assert "### `shout`" in help_text


def test_a_broken_declaration_is_an_error_naming_the_package(
    tour: dict[str, dict[str, object]],
) -> None:
    error = str(tour["broken"]["err"])
    assert tour["broken"]["code"] == 1
    assert "the package `hql-ext-broken 0.0.1`" in error
    assert "`Collection<Card> | count_words( -> Int` does not parse at column 33" in error
    assert "Traceback" not in error
    listed = str(tour["help_broken"]["err"])
    assert tour["help_broken"]["code"] == 1
    assert listed.startswith("hql: the `broken` extension is installed but did not load")


def test_completion_offers_installed_extensions(tour: dict[str, dict[str, object]]) -> None:
    assert "similar" in tour["complete_step"]
    assert "demo" in tour["complete_import"]
    assert "shout" in tour["complete_name"]


def test_a_program_of_shipped_steps_loads_no_package(env: Path) -> None:
    probe = (
        "import sys\nfrom hql.cli import main\nmain(['eval', '1 + 1'])\n"
        "print(sorted(m for m in sys.modules if m.startswith(('hql_ext', 'importlib.metadata'))))"
    )
    done = run_in(env, "-c", probe)
    assert done.stdout.splitlines() == ["2", "[]"], done.stderr


def test_the_real_command_line_runs_the_demo(env: Path) -> None:
    done = run_in(
        env, "-m", "hql", "--vault", str(VAULT), "run", "-", stdin='import demo\nshout("ok")\n'
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "OK!"


def test_the_demo_package_own_tests_pass(env: Path) -> None:
    done = run_in(
        env, "-m", "pytest", "-o", "addopts=", "-q", "-p", "no:cacheprovider", str(DEMO / "tests")
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert " passed" in done.stdout


def test_a_vault_imports_an_installed_extension_from_its_config(env: Path, tmp_path: Path) -> None:
    (tmp_path / "hql.toml").write_text('[extensions]\nimport = ["demo"]\n', encoding="utf-8")
    (tmp_path / "tokens.md").write_text("# Bearer tokens\n\nA bearer token.\n", encoding="utf-8")
    done = run_in(env, "-m", "hql", "--vault", str(tmp_path), "eval", 'cards | similar("token")')
    assert done.returncode == 0, done.stderr
    # title + body count bearer 3, tokens 2, a 1, token 1: cosine with "token" is 1/sqrt(15)
    assert done.stdout.strip() == "[tokens (0.2582)]"


def test_a_folder_hql_runs_in_cannot_provide_an_extension(env: Path, tmp_path: Path) -> None:
    """`python -m` puts the current directory on sys.path; a vault there must not run code."""
    marker = tmp_path / "ran"
    info = tmp_path / "evil-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[hql.extensions]\nevil = evil_ext:extension\n")
    (tmp_path / "evil_ext.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    (tmp_path / "note.md").write_text("# Note\n")
    done = subprocess.run(
        [str(env), "-m", "hql", "--vault", ".", "eval", "import evil"],
        capture_output=True,
        text=True,
        timeout=180,
        env=_clean_env(),
        cwd=tmp_path,
    )
    assert "no extension named `evil` is registered" in done.stderr
    assert not marker.exists()
