"""`hql eval '1 + 1'` must start light: no numpy, networkx or prompt-toolkit (product.md section 6)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY = ["numpy", "networkx", "prompt_toolkit"]

# Runs the real command line in a fresh interpreter, then reports which heavy libraries it loaded.
PROBE = """
import json, sys
from hql.cli import main
heavy = json.loads(sys.argv[1])
code = main(sys.argv[2:])
print(json.dumps({"code": code, "heavy": sorted({m.split(".")[0] for m in sys.modules} & set(heavy))}))
"""


def run_probe(*args: str) -> tuple[list[str], dict[str, object]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(HEAVY), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    *printed, summary = done.stdout.splitlines()
    return printed, json.loads(summary)


def test_eval_imports_no_heavy_library() -> None:
    printed, summary = run_probe("eval", "1 + 1")
    assert printed == ["2"]
    assert summary == {"code": 0, "heavy": []}


def test_a_pipeline_with_presenters_imports_no_heavy_library() -> None:
    printed, summary = run_probe("eval", "[2, 1] | map(x => x + 1) | sort | table")
    assert printed[-1] == "3" and summary == {"code": 0, "heavy": []}


def test_the_probe_sees_heavy_imports() -> None:
    """A graph expansion does load networkx: the probe would notice a regression."""
    vault = str(Path(__file__).parent / "fixtures" / "vault")
    _, summary = run_probe("--vault", vault, "eval", "[[oauth]] | expand | graph")
    assert summary["heavy"] == ["networkx"]


def test_importing_the_api_is_light() -> None:
    code = "import sys, hql; hql.check('1'); print(sorted(m for m in sys.modules if m.split('.')[0] in %r))"
    done = subprocess.run(
        [sys.executable, "-c", code % (HEAVY,)], capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == "[]", done.stderr


# --- a vault whose cards need no YAML loads without PyYAML ---------------------------

LOADED = """
import json, sys
from hql.cli import main
watched = json.loads(sys.argv[1])
code = main(sys.argv[2:])
print(json.dumps({"code": code, "loaded": [m for m in watched if m in sys.modules]}))
"""


def run_watching(watched: list[str], *args: str) -> tuple[list[str], dict[str, object]]:
    done = subprocess.run(
        [sys.executable, "-c", LOADED, json.dumps(watched), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    *printed, summary = done.stdout.splitlines()
    return printed, json.loads(summary)


def _plain_vault(root: Path) -> str:
    for number in range(1, 6):
        (root / f"card-{number}.md").write_text(
            f"# Card {number}\n\nA note on cancer, number {number}, and [[card-{number % 5 + 1}]].\n"
        )
    return str(root)


BM25_TAKE = 'import bm25\ncards | bm25("cancer") | take(2)'


def test_cards_without_front_matter_never_import_pyyaml(tmp_path: Path) -> None:
    vault = _plain_vault(tmp_path)
    watched = ["yaml", "hql.vault.links", "tomllib"]  # tomllib: this vault has no hql.toml
    first, cold = run_watching(watched, "--vault", vault, "eval", BM25_TAKE)
    again, warm = run_watching(watched, "--vault", vault, "eval", BM25_TAKE)
    assert first == again == ["[card-1 (0.0593), card-2 (0.0593)]"]
    # A whole load resolves links (the link table), but parses no YAML.
    assert cold == {"code": 0, "loaded": ["hql.vault.links"]}
    # Warm, the two hits are built from the catalogue: no link grammar either.
    assert warm == {"code": 0, "loaded": []}


def test_front_matter_does_import_pyyaml(tmp_path: Path) -> None:
    """The probe sees PyYAML when a card has front matter, so the test above can fail."""
    vault = _plain_vault(tmp_path)
    (tmp_path / "card-1.md").write_text("---\ntopic: cancer\n---\n# Card 1\n\nOn cancer.\n")
    printed, summary = run_watching(["yaml"], "--vault", vault, "eval", "[[card-1]].metadata.topic")
    assert printed == ['"cancer"']
    assert summary == {"code": 0, "loaded": ["yaml"]}
