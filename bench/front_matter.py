"""Which YAML library edits front matter without rewriting what the person wrote.

    .venv/bin/python bench/front_matter.py [DIR ...]

Every Markdown file below the directories (default: the repository's sample
vaults and test fixtures) that opens with a `---` front matter is edited the
way `hql note set` edits one: `status: archived` set (replacing a `status`
there, else added). For each way of editing, the share of blocks it could
read, the share it leaves byte-identical when nothing is changed, the share
whose edit touches no line other than the `status` line, and the time per
block (load, edit, dump). The anchor is PyYAML's load and dump of the same
blocks (a re-dump: what must not be done), measured in the same run.

`splice` is HQL's way (hql/notes/frontmatter.py): ruamel.yaml reads the
block and writes only the edited key; every other line stays as it was.
"""

from __future__ import annotations

import io
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DIRS = [ROOT / "vaults", ROOT / "tests" / "fixtures"]


def blocks(directories: list[Path]) -> list[str]:
    found = []
    for directory in directories:
        for path in sorted(directory.rglob("*.md")):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            text = text.replace("\r\n", "\n")
            if not text.startswith("---\n"):
                continue
            end = text.find("\n---", 3)
            if end < 0:
                continue
            block = text[4 : end + 1]
            if block.strip():
                found.append(block)
    return found


def _ruamel_like(module: str) -> tuple[Callable[[str], object], Callable[[object], str]]:
    yaml_module = __import__(module, fromlist=["YAML"])
    yaml = yaml_module.YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 1 << 16

    def load(text: str) -> object:
        return yaml.load(text)

    def dump(data: object) -> str:
        out = io.StringIO()
        yaml.dump(data, out)
        return out.getvalue()

    return load, dump


def _pyyaml() -> tuple[Callable[[str], object], Callable[[object], str]]:
    import yaml

    return yaml.safe_load, lambda data: yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def _strictyaml() -> tuple[Callable[[str], object], Callable[[object], str]]:
    import strictyaml

    def load(text: str) -> object:
        return strictyaml.dirty_load(text, allow_flow_style=True)

    return load, lambda document: document.as_yaml()  # type: ignore[attr-defined]


def _set_status(data: object) -> object:
    if hasattr(data, "as_yaml"):  # strictyaml's document
        data["status"] = "archived"  # type: ignore[index]
        return data
    if isinstance(data, dict):
        data["status"] = "archived"
    return data


def _splice_edit(block: str, *, change: bool) -> str:
    from hql.notes import frontmatter

    edited = frontmatter.FrontMatter.parse(block)
    if change:
        edited.set("status", "archived")
    return edited.text()


def _without_status(block: str) -> list[str]:
    """The block's lines less those of its top-level `status` key (its line and the
    indented lines of its value)."""
    kept, inside = [], False
    for line in block.splitlines():
        if line.startswith("status:"):
            inside = True
            continue
        if inside and (line.startswith((" ", "-")) or not line.strip()):
            continue
        inside = False
        kept.append(line)
    return kept


def measure(
    name: str, roundtrip: Callable[[str, bool], str], corpus: list[str]
) -> dict[str, float]:
    readable = identical = clean = 0
    started = time.perf_counter()
    for block in corpus:
        try:
            unchanged = roundtrip(block, False)
            edited = roundtrip(block, True)
        except Exception:  # noqa: BLE001 - a block the library refuses counts as unreadable
            continue
        readable += 1
        identical += unchanged == block
        status_lines = [line for line in edited.splitlines() if line.startswith("status:")]
        clean += _without_status(block) == _without_status(edited) and status_lines == [
            "status: archived"
        ]
    seconds = time.perf_counter() - started
    total = len(corpus)
    return {
        "readable": readable / total,
        "identical": identical / total,
        "clean_edit": clean / total,
        "ms_per_block": 1000 * seconds / (2 * total),
    }


def library_roundtrip(
    make: Callable[[], tuple[Callable[[str], object], Callable[[object], str]]],
) -> Callable[[str, bool], str]:
    load, dump = make()

    def roundtrip(block: str, change: bool) -> str:
        data = load(block)
        return dump(_set_status(data) if change else data)

    return roundtrip


def main() -> None:
    directories = [Path(arg) for arg in sys.argv[1:]] or DEFAULT_DIRS
    corpus = blocks(directories)
    print(f"{len(corpus)} front-matter blocks from {', '.join(map(str, directories))}")
    ways: list[tuple[str, Callable[[str, bool], str]]] = [
        ("pyyaml re-dump (anchor)", library_roundtrip(_pyyaml)),
        ("ruamel.yaml rt", library_roundtrip(lambda: _ruamel_like("ruamel.yaml"))),
    ]
    for module, label in (("ruyaml", "ruyaml rt"), ("strictyaml", "strictyaml")):
        try:
            __import__(module)
        except ImportError:
            print(f"{label}: not installed, left out")
            continue
        make = _strictyaml if module == "strictyaml" else (lambda m=module: _ruamel_like(m))
        ways.append((label, library_roundtrip(make)))
    ways.append(("splice (hql.notes)", lambda block, change: _splice_edit(block, change=change)))
    anchor = None
    print(
        f"{'way':26} {'readable':>9} {'identical':>10} {'clean edit':>12} {'ms/block':>9} {'x anchor':>9}"
    )
    for name, roundtrip in ways:
        result = measure(name, roundtrip, corpus)
        anchor = anchor or result["ms_per_block"]
        print(
            f"{name:26} {result['readable']:9.1%} {result['identical']:10.1%} "
            f"{result['clean_edit']:12.1%} {result['ms_per_block']:9.3f} "
            f"{result['ms_per_block'] / anchor:9.2f}"
        )


if __name__ == "__main__":
    main()
