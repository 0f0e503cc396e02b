"""Every `.base` file of a vault run by `hql base`, its rows compared with an independent evaluation.

    .venv/bin/python bench/bases_check.py VAULT [--this NOTE] [--no-embeds] [--no-command]

For each `.base` file below VAULT and each of its views, the notes HQL's program
keeps (in order, within the view's limit) are compared with those
tests/bases_evaluator.py keeps (Python over the files, no code shared with hql/).
Each base is checked as a file of its own (`this` is the base, or --this) and,
unless --no-embeds, once more for every note that embeds it (`![[X.base]]`,
`![[X.base#View]]`: only that view), with that note as `this`, as Obsidian
shows it there. Unless --no-command, `hql base FILE --format json` runs in a
process of its own for each of these, and must succeed with as many rows per
view. Prints one line per view and a count of agreeing views.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from bases_compare import hql_rows  # noqa: E402
from bases_evaluator import rows as evaluated_rows  # noqa: E402
from obsidian_resolver import notes_of, strip_code  # noqa: E402

import hql  # noqa: E402

_EMBED = re.compile(r"!\[\[([^\[\]|#\n]+?\.base)(?:#([^\[\]|\n]+?))?(?:\|[^\[\]\n]*)?\]\]")


def embeds(root: Path) -> dict[str, list[tuple[str, str | None]]]:
    """Per `.base` file name, the notes embedding it (as link text, the path without `.md`)
    and the view each embed names (None: all of them)."""
    found: dict[str, list[tuple[str, str | None]]] = {}
    for note in notes_of(root):
        text = strip_code((root / note).read_text(encoding="utf-8", errors="replace"))
        for match in _EMBED.finditer(text):
            name = Path(match.group(1).strip()).name
            shown = (note[: -len(".md")], match.group(2).strip() if match.group(2) else None)
            if shown not in found.setdefault(name, []):
                found[name].append(shown)
    return found


def command_rows(root: Path, path: Path, this: str | None) -> dict[str, int] | str:
    """Rows per view as `hql base` prints them in JSON, or what went wrong."""
    extra = ["--this", this] if this is not None else []
    done = subprocess.run(
        [sys.executable, "-m", "hql", "--quiet", "--vault", str(root), "base", str(path)]
        + [*extra, "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return f"exit {done.returncode}: {done.stderr.strip()[:300]}"
    return {view["view"]: len(view["rows"]) for view in json.loads(done.stdout)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--this", default=None, help="the note the bases are shown for")
    parser.add_argument("--no-embeds", action="store_true", help="only the bases as files")
    parser.add_argument("--no-command", action="store_true", help="do not run `hql base`")
    args = parser.parse_args()
    vault = hql.Vault.open(args.vault)
    shown_in = {} if args.no_embeds else embeds(args.vault)
    agree = total = commands = commands_ok = 0
    for path in sorted(args.vault.rglob("*.base")):
        if any(part.startswith(".") for part in path.relative_to(args.vault).parts):
            continue
        cases: list[tuple[str | None, str | None]] = [(args.this, None)]
        cases += shown_in.get(path.name, [])
        for this, only in cases:
            ours = hql_rows(vault, path, this)
            theirs = evaluated_rows(args.vault, path, this)
            where = f"{path.relative_to(args.vault)}" + (f" in {this}" if this else "")
            printed = None if args.no_command else command_rows(args.vault, path, this)
            if printed is not None:
                commands += 1
                commands_ok += not isinstance(printed, str)
                if isinstance(printed, str):
                    print(f"FAILED    hql base {where}: {printed}")
            for name, kept in theirs.items():
                if only is not None and name != only:
                    continue
                total += 1
                same = ours.get(name) == kept
                if isinstance(printed, dict):
                    same = same and printed.get(name) == len(kept)
                agree += same
                mark = "same" if same else "DIFFERENT"
                print(f"{mark:9} {where} / {name}: {len(kept)} rows")
                if not same:
                    print(f"          hql:       {ours.get(name)}")
                    print(f"          evaluated: {kept}")
                    if isinstance(printed, dict):
                        print(f"          hql base printed {printed.get(name)} rows")
    if commands:
        print(f"`hql base` succeeded {commands_ok} of {commands} times")
    print(f"{agree} of {total} views agree")


if __name__ == "__main__":
    main()
