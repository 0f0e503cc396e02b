"""`hql eval '1 + 1'` must start light: no numpy, networkx or prompt-toolkit (product.md section 6)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("numpy", "networkx", "prompt_toolkit")

# Run the real command line in a fresh interpreter, then list what it imported.
PROBE = """
import sys
from hql.cli import main
code = main(sys.argv[1:])
heavy = sorted({name.split(".")[0] for name in sys.modules} & set(sys.argv[0].split(",")))
print("CODE", code)
print("HEAVY", ",".join(heavy))
"""


def imported_by(*args: str) -> tuple[str, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.replace("sys.argv[0]", repr(",".join(HEAVY))), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = dict(
        line.split(" ", 1)
        for line in done.stdout.splitlines()
        if line.startswith(("CODE", "HEAVY"))
    )
    assert lines.get("CODE") == "0", done.stdout + done.stderr
    heavy = lines.get("HEAVY", "").strip()
    return done.stdout.splitlines()[0], heavy.split(",") if heavy else []


def test_eval_imports_no_heavy_library() -> None:
    first_line, heavy = imported_by("eval", "1 + 1")
    assert first_line == "2"
    assert heavy == []


def test_check_imports_no_heavy_library() -> None:
    _, heavy = imported_by("eval", "[1, 2] | map(x => x + 1) | sort | table")
    assert heavy == []


def test_importing_the_api_is_light() -> None:
    code = "import sys, hql; hql.check('1'); print(sorted(m for m in sys.modules if m.split('.')[0] in %r))"
    done = subprocess.run(
        [sys.executable, "-c", code % (HEAVY,)], capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == "[]", done.stderr
