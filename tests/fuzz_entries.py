"""The slow fuzz's worker (tests/test_fuzz_slow.py): mutated programs through every entry
point, one after another in this process, which the test starts under a memory limit.

    python tests/fuzz_entries.py VAULT COUNT SEED RESULTS

Entry points: `hql.run` (with and without `$` parameters), the command line in this
process (`eval` with `--param-json`, `run -` reading stdin, `check -e`, `explain`), and
the MCP server's service (query with params, check, explain, search, context, card,
the card resource, the card list, render of a document holding the program). Each
program is written to RESULTS before it runs (`start`) and after (`done`, with its CPU
and wall seconds and the internal error, if any), one JSON line each, so a crash still
names the program that caused it.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

SEEDS = [
    "cards | count",
    'cards | filter(c => c.title != "") | map(c => c.name) | sort',
    "[3, 1, 2] | sort(by = (a, b) => compare(a, b))",
    "x = [1, 2, 3]\ny = [x, x, x]\ny | count",
    '"a" + "b"',
    "{a: 1, b: {c: [1, 2]}}",
    "cards | flat_map(a => cards | map(b => a.name)) | count",
    "[[oauth]] | expand(depth = 2)",
    "1 + 2 * 3",
    "[5, 3, 9, 3] | sort(by = (a, b) => compare(a + 0, b))",
    "cards | sort(by = (a, b) => compare(b.name, a.name)) | map(c => c.name)",
    "cards | sort(by = (a, b) => compare(size(a.outlinks), size(b.outlinks))) | take(2)",
    '[1, 2] | sort(by = (a, b) => compare(a, "x"))',
    "[3, 9223372036854775807] | sort(by = (a, b) => compare(a + 1, b))",
    "[1, 2, 3] | map(x => x * 2) | filter(y => y > 2)",
    # parameters, the new steps, the retrieval and memory surface
    "cards | filter(c => c.name == $p) | map(c => c.title)",
    "$q | count",
    "import bm25\ncards | bm25($p) | take(3) | map(h => h.card.name)",
    'import bm25\ncards | bm25("refresh token") | relevant | take(5)',
    'import bm25\ncards | prompt("how long until an access token expires?") | take(3)',
    'cards | as_of("2026-01-01") | count',
    'number("1" + "0" * 50)',
    '"a,b,c" | split(",") | map(s => s + "!")',
    '"abc" | replace("b", "xx")',
    "cards | map(c => c.metadata) | take(2)",
    "cards | map(c => {name: c.name, links: size(c.outlinks)}) | sort(by = r => r.links)",
    "cards | flat_map(a => cards | flat_map(b => cards | map(c => a.name))) | count",
]
PIECES = [
    "[", "]", "(", ")", ",", "|", "=>", "1", '"x"', "cards", "count", "sort", "=", "\n",
    "{", "}", ":", ".", "99999999999999999999", "-", "+", "map(c => c)", "a", "b",
    "$p", "$q", "import bm25\n", "((((((((", "))))))))", '"' + "y" * 1000 + '"', "*",
    "flat_map(c => cards)", "relevant", "take(3)", "expand(depth = 9)", "graph",
]  # fmt: skip
QUESTIONS = ["refresh token", "", "x" * 5000, "what is oauth?", '"quoted" | count', "\u0000"]


def doc_programs() -> list[str]:
    """Every hql block of the README and docs/: the language as the pages use it."""
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        found.extend(block.strip() for block in re.findall(r"```hql\n(.*?)```", text, re.S))
    return [program for program in found if program]


def step_programs() -> list[str]:
    """Each registered step and function applied to a few inputs (most are type errors)."""
    from hql.registry import registry

    reg = registry()
    names = sorted(reg.step_names())
    functions = sorted(reg.functions)
    programs = []
    for name in names:
        programs += [f"cards | {name}", f"[1, 2, 3] | {name}", f"cards | {name}(c => c.name)"]
    for name in functions:
        programs += [f"{name}(1)", f'{name}("x")', f"{name}([1, 2])"]
    return programs


def big_literal(rng: random.Random) -> str:
    n = rng.choice([10_000, 30_000, 100_000])
    items = ", ".join(str(rng.randrange(1000)) for _ in range(n))
    tail = rng.choice(
        [
            "| count",
            "| sort(by = (a, b) => compare(b, a)) | count",
            "| sort | count",
            "| map(x => x + 1) | filter(x => x > 5) | count",
        ]
    )
    return f"[{items}] {tail}"


def mutate(rng: random.Random, program: str, seeds: list[str]) -> str:
    chars = list(program)
    for _ in range(rng.randint(1, 4)):
        where = rng.randrange(len(chars) + 1)
        action = rng.random()
        if action < 0.4:
            chars[where:where] = list(rng.choice(PIECES))
        elif action < 0.7 and chars:
            del chars[min(where, len(chars) - 1)]
        else:
            chars[where:where] = list(rng.choice(seeds))
    return "".join(chars)


def param_value(rng: random.Random) -> Any:
    """A value for `$p`/`$q`: plain ones and hostile ones (deep, long, huge, odd keys)."""
    choice = rng.randrange(9)
    if choice == 0:
        value: Any = "leaf"
        for _ in range(rng.choice([10, 200, 900])):
            value = [value]
        return value
    if choice == 1:
        return "z" * rng.choice([10, 100_000])
    if choice == 2:
        return 10 ** rng.choice([3, 30, 400])
    if choice == 3:
        return {"": 1, "a b": [1, "2", None], "\u0000": {"x": True}}
    if choice == 4:
        return [rng.random() for _ in range(rng.choice([3, 10_000]))]
    if choice == 5:
        return None
    if choice == 6:
        return rng.choice([True, False, 0, -1, 1.5])
    return rng.choice(["oauth", "refresh token", "", "\u00e9t\u00e9"])


def _stream(data: bytes) -> io.TextIOWrapper:
    """A text stream with a byte buffer beneath, as the command line's own streams are."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace")


def internal(text: str) -> bool:
    return "defect in HQL" in text or "Traceback" in text


class Entries:
    """The entry points, each taking a program and answering an internal error or None."""

    def __init__(self, vault_path: Path, rng: random.Random) -> None:
        import hql
        from hql.mcp.service import Limits, VaultService

        self.root = vault_path
        self.rng = rng
        self.vault = hql.open_vault(vault_path, use_cache=False)
        self.service = VaultService(vault_path, Limits(seconds=30), allow_write=True)
        self.names = [card.name for card in self.vault.cards]

    def params(self, program: str) -> dict[str, Any]:
        return {name: param_value(self.rng) for name in ("p", "q") if f"${name}" in program}

    def api(self, program: str) -> str | None:
        import hql
        from hql.api import HostError

        try:
            hql.run(program, self.vault, params=self.params(program) or None)
        except HostError:
            return None  # a value HQL cannot bind: the caller's mistake, said as such
        return None

    def cli(self, program: str) -> str | None:
        from hql.cli import main

        vault = ["--vault", str(self.root)]
        form = self.rng.choice(["eval", "stdin", "check", "explain"])
        params = []
        for name, value in self.params(program).items():
            params += ["--param-json", f"{name}={json.dumps(value)}"]
        if form == "eval":
            argv = [*vault, "--format", self.rng.choice(["text", "json"]), "eval", *params, program]
        elif form == "stdin":
            argv = [*vault, "run", *params, "-"]
        elif form == "check":
            argv = [*vault, "check", "-e", program]
        else:
            argv = [*vault, "explain", program]
        out, err = _stream(b""), _stream(b"")
        stdin = sys.stdin
        sys.stdin = _stream(program.encode("utf-8", "surrogatepass"))
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                main(argv)
        except SystemExit:
            pass  # argparse's usage error: a message, not a defect
        finally:
            sys.stdin = stdin
        err.flush()
        said = err.buffer.getvalue().decode("utf-8", "replace")  # type: ignore[attr-defined]
        return said[:2000] if internal(said) else None

    def mcp(self, program: str) -> str | None:
        from hql.mcp.service import ToolFailure

        service, rng = self.service, self.rng
        calls: list[Callable[[], Any]] = [
            lambda: service.query(program, self.params(program) or None),
            lambda: service.check(program),
            lambda: service.explain(program),
            lambda: service.search(program[:2000], rng.choice([1, 10, 1000])),
            lambda: service.search(rng.choice(QUESTIONS), 5, rng.choice(["bm25", "auto"])),
            lambda: service.context(program[:5000], budget=rng.choice([1, 2000])),
            lambda: service.card(rng.choice([*self.names, program[:300]])),
            lambda: service.card_text(rng.choice([*self.names, program[:300], "../hql.toml"])),
            lambda: service.cards_text(),
            lambda: self.render(program),
        ]
        try:
            answer = rng.choice(calls)()
        except ToolFailure:
            return None  # a refusal with its reason: the client's answer
        text = answer if isinstance(answer, str) else json.dumps(answer, default=str)
        return text[:2000] if internal(text) else None

    def render(self, program: str) -> Any:
        document = self.root / "fuzz-render.md"
        document.write_text(f"# Fuzz\n\n```hql\n{program}\n```\n", encoding="utf-8")
        return self.service.render("fuzz-render.md")


def main() -> None:
    vault_path, count, seed, results = (
        Path(sys.argv[1]),
        int(sys.argv[2]),
        int(sys.argv[3]),
        sys.argv[4],
    )
    rng = random.Random(seed)
    seeds = SEEDS + doc_programs() + step_programs()
    entries = Entries(vault_path, rng)
    kinds: list[tuple[str, Callable[[str], str | None]]] = [
        ("run", entries.api),
        ("run", entries.api),
        ("run", entries.api),
        ("run", entries.api),
        ("run", entries.api),
        ("cli", entries.cli),
        ("cli", entries.cli),
        ("mcp", entries.mcp),
        ("mcp", entries.mcp),
        ("mcp", entries.mcp),
    ]
    with open(results, "w", encoding="utf-8") as log:
        for index in range(count):
            big = index % 100 == 0  # one program in a hundred: a 10^4-10^5-element literal
            program = big_literal(rng) if big else mutate(rng, rng.choice(seeds), seeds)
            shown = program if len(program) <= 200 else f"{program[:120]}…{program[-60:]}"
            kind, entry = kinds[index % len(kinds)]
            log.write(json.dumps({"start": index, "entry": kind, "program": shown}) + "\n")
            log.flush()
            started, cpu = time.perf_counter(), time.process_time()
            try:
                error = entry(program)
            except MemoryError:
                error = "MemoryError escaped (the memory limit is not a report)"
            except Exception as caught:  # noqa: BLE001 - an internal error is the finding
                error = repr(caught)[:2000]
            took, wall = time.process_time() - cpu, time.perf_counter() - started
            done = {"done": index, "entry": kind, "cpu": took, "wall": wall, "error": error}
            log.write(json.dumps(done) + "\n")
            log.flush()


if __name__ == "__main__":
    main()
