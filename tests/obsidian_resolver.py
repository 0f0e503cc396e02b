"""An independent reading of an Obsidian vault's note links, to measure HQL's against.

Written from Obsidian's documented behaviour, sharing no code with hql/:
wikilinks (`[[a]]`, `[[a|shown]]`, `[[a#Heading]]`, `![[a]]`, in the body and
in front-matter values) and Markdown links to notes, nothing inside code or
`%% comments %%`; a target resolves by its path (from the vault root or the
linking note's folder), else by file name ignoring case (the note in the
linking note's folder first, else the shortest path), else by an `aliases`
entry. Links to attachments are not note links.

    python tests/obsidian_resolver.py VAULT   # prints the links, one `source -> target` a line

`note_links(root)` gives the set of (source relpath, target relpath) pairs.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from pathlib import Path
from urllib.parse import unquote

import yaml

NOTE_EXTENSIONS = (".md",)
_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"(`+)(?:.+?)\1")
_COMMENT = re.compile(r"%%.*?%%", re.S)
_WIKI = re.compile(r"!?\[\[([^\[\]\n]+?)\]\]")
_MARKDOWN = re.compile(r"\[[^\]\n]*\]\(\s*<?([^)>\s]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def notes_of(root: Path) -> list[str]:
    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if name.endswith(NOTE_EXTENSIONS) and not name.startswith("."):
                found.append(Path(folder, name).relative_to(root).as_posix())
    return sorted(found)


@functools.lru_cache(maxsize=4096)
def split_front_matter(text: str) -> tuple[object, str]:
    """The front matter as YAML reads it (None when it is not YAML) and the body; kept per
    text, so callers must not change what it gives."""
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end != -1:
            try:
                header = yaml.load(text[4:end], Loader=_LOADER)  # noqa: S506 - a safe loader
            except yaml.YAMLError:
                header = None
            return header, text[end + 4 :]
    return None, text


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def strip_code(body: str) -> str:
    kept, fence = [], None
    for line in body.split("\n"):
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(2)[0] == fence[0] and len(opened.group(2)) >= len(fence):
                fence = None
            kept.append("")
            continue
        if opened:
            fence = opened.group(2)
            kept.append("")
            continue
        kept.append(_INLINE_CODE.sub("", line))
    return _COMMENT.sub("", "\n".join(kept))


def strings_in(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for item in value for text in strings_in(item)]
    if isinstance(value, dict):
        return [text for item in value.values() for text in strings_in(item)]
    return []


def targets_of(text: str) -> list[str]:
    """Every note-link target written in a note, as written (without `|…` and `#…`)."""
    header, body = split_front_matter(text)
    found = []
    for value in strings_in(header) if isinstance(header, dict) else []:
        found += [m.group(1) for m in _WIKI.finditer(value)]
    body = strip_code(body)
    found += [m.group(1) for m in _WIKI.finditer(body)]
    for match in _MARKDOWN.finditer(body):
        target = match.group(1)
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):  # a URL
            continue
        found.append(unquote(target))
    targets = []
    for raw in found:
        # `\|` is how a table cell writes the bar of `[[a|shown]]`
        target = raw.split("|", 1)[0].removesuffix("\\").split("#", 1)[0].strip()
        if target:
            targets.append(target)
    return targets


def aliases_of(text: str) -> list[str]:
    header, _ = split_front_matter(text)
    if not isinstance(header, dict):
        return []
    value = header.get("aliases", header.get("alias"))
    if isinstance(value, str):
        return [value]
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


class Resolver:
    def __init__(self, notes: list[str], aliases: dict[str, list[str]]) -> None:
        self.by_path = {note[: -len(".md")].casefold(): note for note in notes}
        self.by_name: dict[str, list[str]] = {}
        for note in notes:
            self.by_name.setdefault(Path(note).stem.casefold(), []).append(note)
        self.by_alias: dict[str, str] = {}
        for note in notes:
            for alias in aliases.get(note, []):
                self.by_alias.setdefault(alias.casefold(), note)

    def resolve(self, source: str, target: str) -> str | None:
        if target.endswith(".md"):
            target = target[: -len(".md")]
        elif re.search(r"\.[A-Za-z0-9]{1,5}$", target) and not re.search(r"\s", target[-6:]):
            return None  # an attachment (`plot.png`, `paper.pdf`)
        folder = str(Path(source).parent)
        if "/" in target:
            here = os.path.normpath(os.path.join(folder, target)).replace(os.sep, "/")
            for path in (target.lstrip("/"), here):
                if path.casefold() in self.by_path:
                    return self.by_path[path.casefold()]
            tail = "/" + target.casefold()
            ends = sorted((p for p in self.by_path if p.endswith(tail)), key=_shortest)
            return self.by_path[ends[0]] if ends else None
        candidates = self.by_name.get(target.casefold(), [])
        if candidates:
            same = [c for c in candidates if str(Path(c).parent) == folder]
            return (same or sorted(candidates, key=lambda c: _shortest(c[:-3])))[0]
        return self.by_alias.get(target.casefold())


def _shortest(path: str) -> tuple[int, int, str]:
    return (path.count("/"), len(path), path)


def note_links(root: Path) -> set[tuple[str, str]]:
    """(source, target) relpaths of every resolved note link, a note's links to itself left out."""
    notes = notes_of(root)
    texts = {note: (root / note).read_text(encoding="utf-8", errors="replace") for note in notes}
    resolver = Resolver(notes, {note: aliases_of(text) for note, text in texts.items()})
    links = set()
    for note, text in texts.items():
        for target in targets_of(text):
            found = resolver.resolve(note, target)
            if found is not None and found != note:
                links.add((note, found))
    return links


if __name__ == "__main__":
    for source, target in sorted(note_links(Path(sys.argv[1]))):
        print(f"{source} -> {target}")
