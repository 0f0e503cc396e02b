"""The two link dialects: the reference's, and Obsidian's (everyday.md §4).

The reference dialect is the default: every `[[target]]` of a body is a link
to the name as written, code included, and a header that YAML refuses skips
the document (reference §9.2). A vault written for Obsidian (one with an
`.obsidian/` folder, or `[vault] dialect = "obsidian"` in hql.toml) is read
as Obsidian reads it:

* links: `[[target]]`, `[[target|shown]]`, `[[target#Heading]]`,
  `[[target#^block]]`, `[[folder/target]]`, `![[embed]]`, `[[#Heading]]`
  (the note itself), Markdown links `[text](folder/Note.md)` (URL-decoded;
  external URLs and attachments are not links), and wikilinks written in
  front-matter values (the edge data's `property` names the top-level key);
* nothing inside fenced code blocks, inline code or `%% comments %%` counts:
  no links, tags, tasks or headings;
* a front matter YAML refuses leaves the note a card with an empty header
  (the warning names the line and the cause), and an unclosed one is body;
* resolution (`Resolver`): exact name, then vault-relative path without
  extension (also relative to the linking note's folder), then
  case-insensitively, then by the cards' `aliases`; when several notes
  share a file name, the one in the linking note's folder wins, else the one
  with the shortest path.

Parsing here is per file (its result is cached); resolution needs the whole
vault and runs on load.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from hql import messages
from hql.vault import yamldata
from hql.vault.document import annotation_end, find_header, split_lines
from hql.vault.walk import DIALECTS, OBSIDIAN, REFERENCE, dialect_of  # noqa: F401 - offered here too
from hql.vault.yamldata import YamlRefused

NOTE_SUFFIXES = (".md", ".markdown", ".hmd")

# A link to a file with one of these extensions is an attachment, not a note.
ATTACHMENT_SUFFIXES = frozenset(
    [
        "png",
        "jpg",
        "jpeg",
        "gif",
        "bmp",
        "svg",
        "webp",
        "avif",
        "tif",
        "tiff",
        "ico",
        "heic",
        "pdf",
        "mp3",
        "wav",
        "m4a",
        "ogg",
        "oga",
        "flac",
        "3gp",
        "webm",
        "mp4",
        "mkv",
        "mov",
        "ogv",
        "avi",
        "canvas",
        "base",
        "excalidraw",
        "csv",
        "tsv",
        "json",
        "txt",
        "zip",
        "docx",
        "xlsx",
        "pptx",
        "odt",
        "epub",
        "html",
        "htm",
    ]
)

# More links than this in one note refuse it, as the reference does for its own form.
MAX_LINKS = 100_000


# --- parsing one note -----------------------------------------------------------


@dataclass(slots=True)
class Note:
    """What the Obsidian dialect reads from one file (plain data, cacheable)."""

    authored: dict[str, Any]
    body: str
    heading: str | None  # the first H1 outside code: the title when the header has none
    links: list[tuple[str, dict[str, Any]]]  # (target as written, edge data)
    extras: dict[str, Any]  # tags, tasks, headings (outside code) and the header warning


_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]*?)\]\]")
_MARKDOWN_LINK = re.compile(
    r"(!?)\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\]\(\s*(<[^>\n]*>|[^)\s]+)(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)"
)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:|^//")
_TAG = re.compile(r"(?<![^\s(,;])#([\w/-]+)")
_TASK = re.compile(r"^[ \t]*(?:>[ \t]*)*(?:[-*+]|\d+[.)])[ \t]+\[(.)\](?:[ \t]+(.*))?$")
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^[ \t]*(?:>[ \t]*)*(`{3,}|~{3,})(.*)$")


def parse_note(text: str) -> Note:
    """Split a note the way Obsidian does and read its links, tags, tasks and headings."""
    extras: dict[str, Any] = {}
    header_text, body, header_lines = _split_header(text, extras)
    authored: dict[str, Any] = {}
    if header_text:
        try:
            authored = yamldata.load_mapping(header_text)
        except (YamlRefused, RecursionError) as refusal:
            reason = (
                str(refusal)
                if isinstance(refusal, YamlRefused)
                else messages.yaml_too_deep(yamldata.MAX_DEPTH)
            )
            line = 1 + _refused_line(header_text, reason)
            written = split_lines(header_text)[line - 2] if line >= 2 else ""
            if "{{" in written:  # an unfilled template: say so, not what YAML made of it
                reason = messages.template_placeholder(written.strip())
            extras["warning"] = messages.front_matter_ignored(line, _without_line(reason))
    links = property_links(authored)
    heading = _scan_body(body, header_lines, links, extras)
    if len(links) > MAX_LINKS:
        extras["warning"] = messages.too_many_links(MAX_LINKS)
        del links[MAX_LINKS:]
    return Note(authored, body, heading, links, extras)


def _split_header(text: str, extras: dict[str, Any]) -> tuple[str, str, int]:
    """(header text, body, lines before the body). An unclosed fence is body."""
    found = find_header(text)
    if found is None:
        return "", text, 0
    header, body_start, lines = found
    if body_start < 0:
        extras["warning"] = messages.front_matter_unclosed()
        return "", text, 0
    return header, text[body_start:], lines


_LINE_AT = re.compile(r"line (\d+)")


def _refused_line(header: str, reason: str) -> int:
    """The header line (1 = the opening `---`) a refusal concerns.

    YAML's own errors carry a line; a refused value (a template's `{{date}}`
    is a map used as a key) is found by parsing the top-level entries one by one.
    """
    found = _LINE_AT.search(reason)
    if found is not None:
        return int(found.group(1))
    lines = split_lines(header)
    starts = [
        index
        for index, line in enumerate(lines)
        if line and not line[0].isspace() and not line.startswith(("#", "-"))
    ]
    for position, start in enumerate(starts):
        end = starts[position + 1] if position + 1 < len(starts) else len(lines)
        try:
            yamldata.load_mapping("\n".join(lines[start:end]))
        except (YamlRefused, RecursionError):
            return start + 1
    return 1


def _without_line(reason: str) -> str:
    """A YAML reason without its own `(line N, column M)`, which the warning restates."""
    return re.sub(r"\s*\(?at line \d+, column \d+\)?|\s*\(line \d+, column \d+\)", "", reason)


def property_links(authored: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Wikilinks written in front-matter values, each with `property` = its top-level key."""
    found: list[tuple[str, dict[str, Any]]] = []
    for key, value in authored.items():
        for text in _strings(value):
            if "[[" in text:
                for match in _WIKILINK.finditer(text):
                    link = _wikilink(match.group(2), bool(match.group(1)))
                    if link is not None:
                        link[1]["property"] = key
                        found.append(link)
    return found


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


def _scan_body(
    body: str,
    first_line: int,
    links: list[tuple[str, dict[str, Any]]],
    extras: dict[str, Any],
) -> str | None:
    """One pass over the body's lines; fills links and extras, returns the first H1."""
    tags: list[str] = []
    tasks: list[list[Any]] = []
    headings: list[list[Any]] = []
    fields: list[list[Any]] = []
    first_h1: str | None = None
    fence: str | None = None  # the fence run that closes the open code block
    in_comment = False
    for number, line in enumerate(split_lines(body), start=first_line + 1):
        if fence is not None:
            found = _FENCE.match(line)
            if found and found.group(1).startswith(fence) and not found.group(2).strip():
                fence = None
            continue
        if not in_comment and ("```" in line or "~~~" in line):
            found = _FENCE.match(line)
            if found and not (found.group(1)[0] == "`" and "`" in found.group(2)):
                fence = found.group(1)
                continue
        if in_comment or "`" in line or "%%" in line:
            clean, in_comment = _strip_code_and_comments(line, in_comment)
        else:
            clean = line
        if not clean.strip():
            continue
        if clean.lstrip(" ").startswith("#"):
            heading = _HEADING.match(clean)
            if heading is not None:
                text = (heading.group(2) or "").strip()
                level = len(heading.group(1))
                headings.append([level, text])
                if level == 1 and first_h1 is None:
                    first_h1 = text
        if "[" in clean:
            if "](" not in clean:
                if "[[" in clean:
                    _body_wikilinks(clean, links)
            elif "[[" not in clean:
                _markdown_links(clean, links)
            else:  # both kinds on one line: keep the order they are written in
                placed: list[tuple[int, tuple[str, dict[str, Any]]]] = []
                _body_wikilinks(clean, placed, positioned=True)
                _markdown_links(clean, placed, positioned=True)
                placed.sort(key=lambda item: item[0])
                links.extend(link for _, link in placed)
            if (
                "- [" in clean
                or "* [" in clean
                or "+ [" in clean
                or ". [" in clean
                or ") [" in clean
            ):
                task = _TASK.match(line)
                if task is not None:
                    tasks.append([(task.group(2) or "").strip(), task.group(1) != " ", number])
        # A task's own fields (`[due:: …]`) are its dates, not the note's.
        if "::" in clean and not (tasks and tasks[-1][2] == number):
            fields.extend([key, value, number] for key, value in inline_fields(clean))
        if "#" in clean:
            for tag in _TAG.findall(clean):
                tag = tag.rstrip("/")
                if tag and not tag.isdigit() and not tag.replace("/", "").isdigit():
                    tags.append(tag)
    if tags:
        extras["tags"] = tags
    if tasks:
        extras["tasks"] = tasks
    if headings:
        extras["headings"] = headings
    if fields:
        extras["fields"] = fields
    return first_h1


def _strip_code_and_comments(line: str, in_comment: bool) -> tuple[str, bool]:
    """The line with inline code spans and `%% comments %%` blanked out."""
    kept: list[str] = []
    index = 0
    length = len(line)
    while index < length:
        if in_comment:
            close = line.find("%%", index)
            if close < 0:
                return "".join(kept), True
            index = close + 2
            in_comment = False
            kept.append(" ")
            continue
        tick = line.find("`", index)
        percent = line.find("%%", index)
        if tick < 0 and percent < 0:
            kept.append(line[index:])
            break
        if percent >= 0 and (tick < 0 or percent < tick):
            kept.append(line[index:percent])
            index = percent + 2
            in_comment = True
            continue
        run_end = tick
        while run_end < length and line[run_end] == "`":
            run_end += 1
        run = line[tick:run_end]
        close = _closing_run(line, run, run_end)
        if close < 0:  # an unmatched run of backticks is text
            kept.append(line[index:run_end])
            index = run_end
            continue
        kept.append(line[index:tick])
        kept.append(" ")
        index = close + len(run)
    return "".join(kept), in_comment


def _closing_run(line: str, run: str, start: int) -> int:
    """Where a backtick run of exactly len(run) closes the code span opened before start."""
    while True:
        found = line.find(run, start)
        if found < 0:
            return -1
        end = found + len(run)
        if (found == 0 or line[found - 1] != "`") and (end >= len(line) or line[end] != "`"):
            return found
        while end < len(line) and line[end] == "`":
            end += 1
        start = end


def _body_wikilinks(line: str, links: list[Any], positioned: bool = False) -> None:
    """Append the line's wikilinks (as (position, link) pairs when `positioned`)."""
    position = 0
    while True:
        match = _WIKILINK.search(line, position)
        if match is None:
            return
        position = match.end()
        link = _wikilink(match.group(2), bool(match.group(1)))
        if link is None:
            continue
        probe = position
        if probe < len(line) and line[probe] in " {":
            while probe < len(line) and line[probe] == " ":
                probe += 1
        if probe < len(line) and line[probe] == "{":  # the reference's annotation, when it parses
            annotation = _annotation(line, probe)
            if annotation is not None:
                mapping, position = annotation
                link[1].update(mapping)
        links.append((match.start(), link) if positioned else link)


def _annotation(line: str, start: int) -> tuple[dict[str, Any], int] | None:
    end = annotation_end(line, start)
    if end is None:
        return None
    text = line[start:end]
    simple = yamldata.load_simple_flow_mapping(text)
    if simple is not None:
        return simple, end
    try:
        return yamldata.load_mapping(text), end
    except (YamlRefused, RecursionError):
        return None


def _wikilink(inner: str, embed: bool) -> tuple[str, dict[str, Any]] | None:
    """(target, edge data) of the text between `[[` and `]]`; None when it names nothing."""
    target = inner.split("|", 1)[0]
    if target.endswith("\\"):  # `[[Note\|shown]]` inside a table
        target = target[:-1]
    return _target_and_data(target, embed)


def _target_and_data(written: str, embed: bool) -> tuple[str, dict[str, Any]] | None:
    path, hash_, subpath = written.partition("#")
    path = path.strip()
    data: dict[str, Any] = {}
    if embed:
        data["embed"] = True
    if hash_:
        part = subpath.split("#")[-1].strip()
        if part.startswith("^"):
            if part[1:]:
                data["block"] = part[1:]
        elif part:
            data["heading"] = part
    if not path and not hash_:
        return None
    if path and _is_attachment(path):
        return None
    return path, data


def _is_attachment(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    return dot > 0 and name[dot + 1 :].lower() in ATTACHMENT_SUFFIXES


def _markdown_links(line: str, links: list[Any], positioned: bool = False) -> None:
    for match in _MARKDOWN_LINK.finditer(line):
        written = match.group(2)
        if written.startswith("<"):
            written = written[1:-1]
        if _SCHEME.match(written):
            continue  # an external URL (https:, mailto:, obsidian:, //host)
        link = _target_and_data(unquote(written), bool(match.group(1)))
        if link is not None:
            links.append((match.start(), link) if positioned else link)


# --- resolution -----------------------------------------------------------------


def _folded(text: str) -> str:
    return text.casefold()


def strip_note_suffix(path: str) -> str:
    lowered = path.lower()
    for suffix in NOTE_SUFFIXES:
        if lowered.endswith(suffix):
            return path[: -len(suffix)]
    return path


class Resolver:
    """Link targets to card names, by Obsidian's order (module docstring)."""

    def __init__(self, entries: Iterable[tuple[str, str, Iterable[str]]]) -> None:
        """`entries`: (card name, vault-relative path, aliases) per card."""
        self._names: set[str] = set()
        self._by_path: dict[str, str] = {}  # relpath without suffix -> name
        self._by_folded_path: dict[str, list[tuple[str, str]]] = {}
        self._by_stem: dict[str, list[tuple[str, str]]] = {}  # stem -> [(relpath, name)]
        self._by_folded_stem: dict[str, list[tuple[str, str]]] = {}
        self._by_alias: dict[str, str] = {}
        self._by_folded_alias: dict[str, str] = {}
        for name, relpath, aliases in entries:
            self._names.add(name)
            path = strip_note_suffix(relpath)
            self._by_path.setdefault(path, name)
            self._by_folded_path.setdefault(_folded(path), []).append((relpath, name))
            stem = path.rsplit("/", 1)[-1]
            self._by_stem.setdefault(stem, []).append((relpath, name))
            self._by_folded_stem.setdefault(_folded(stem), []).append((relpath, name))
            for alias in aliases:
                self._by_alias.setdefault(alias, name)
                self._by_folded_alias.setdefault(_folded(alias), name)
        for table in (self._by_stem, self._by_folded_stem, self._by_folded_path):
            for candidates in table.values():
                candidates.sort(key=_shortest_first)

    def resolve(self, target: str, from_relpath: str = "") -> str | None:
        """The card a link from the note at `from_relpath` to `target` names, if any."""
        if not target:
            return None
        folder = from_relpath.rsplit("/", 1)[0] if "/" in from_relpath else ""
        if target in self._names and "/" not in target:
            same = self._by_stem.get(target)
            if same is None or len(same) == 1 or not folder:
                return target
        path = strip_note_suffix(target.strip().lstrip("/"))
        if not path:
            return None
        found = self._by_path_lookup(path, folder)
        if found is not None:
            return found
        if "/" not in path:
            found = self._pick(self._by_stem.get(path), folder)
            if found is None:
                found = self._pick(self._by_folded_stem.get(_folded(path)), folder)
        else:
            found = self._pick(self._by_folded_path.get(_folded(path)), folder)
            if found is None:
                found = self._suffix_match(path, folder)
        if found is not None:
            return found
        return self._by_alias.get(target) or self._by_folded_alias.get(_folded(target))

    def _by_path_lookup(self, path: str, folder: str) -> str | None:
        if path.startswith(("./", "../")) and folder is not None:
            joined = _normalise(f"{folder}/{path}" if folder else path)
            if joined is not None:
                return self._by_path.get(joined) or self._pick(
                    self._by_folded_path.get(_folded(joined)), folder
                )
            return None
        if "/" in path:
            found = self._by_path.get(path)
            if found is not None:
                return found
            if folder:  # a path relative to the linking note's folder
                return self._by_path.get(f"{folder}/{path}")
        return None

    def _suffix_match(self, path: str, folder: str) -> str | None:
        """`[[sub/Note]]` finds `a/sub/Note.md`: the last components match, case-insensitively."""
        stem = path.rsplit("/", 1)[-1]
        wanted = "/" + _folded(path)
        candidates = [
            (relpath, name)
            for relpath, name in self._by_folded_stem.get(_folded(stem), ())
            if ("/" + _folded(strip_note_suffix(relpath))).endswith(wanted)
        ]
        return self._pick(candidates, folder)

    @staticmethod
    def _pick(candidates: list[tuple[str, str]] | None, folder: str) -> str | None:
        if not candidates:
            return None
        if len(candidates) > 1:
            for relpath, name in candidates:
                if (relpath.rsplit("/", 1)[0] if "/" in relpath else "") == folder:
                    return name
        return candidates[0][1]


def _shortest_first(entry: tuple[str, str]) -> tuple[int, int, str]:
    relpath = entry[0]
    return (relpath.count("/"), len(relpath), relpath)


def _normalise(path: str) -> str | None:
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(part)
    return "/".join(parts)


def clash_names(relpaths: list[str]) -> dict[str, str]:
    """Card names in an Obsidian vault: the file name, unless another note shares it.

    Of the notes sharing a file name, the one `[[name]]` finds from the vault
    root (the shortest path, then the first in path order) keeps the bare
    name; the others are named by their vault-relative path without extension.
    """
    by_stem: dict[str, list[str]] = {}
    for relpath in relpaths:
        stem = strip_note_suffix(relpath).rsplit("/", 1)[-1]
        by_stem.setdefault(stem, []).append(relpath)
    names: dict[str, str] = {}
    for stem, group in by_stem.items():
        if len(group) == 1:
            names[group[0]] = stem
            continue
        ordered = sorted(group, key=lambda relpath: _shortest_first((relpath, "")))
        names[ordered[0]] = stem
        for relpath in ordered[1:]:
            names[relpath] = strip_note_suffix(relpath)
    # `x.md` beside `x.hmd`: only the full path tells them apart.
    taken: dict[str, int] = {}
    for name in names.values():
        taken[name] = taken.get(name, 0) + 1
    for relpath, name in names.items():
        if taken[name] > 1:
            names[relpath] = relpath
    return names


# --- the vault's links, resolved ------------------------------------------------


class LinkTable:
    """Every card's links resolved once per vault: edges, outlinks, inlinks, unresolved.

    In the reference dialect a link names a card only by its exact name, and
    edges go to the names as written (reference §9.4). In the Obsidian
    dialect links resolve by `Resolver`; an edge goes to the card a link
    resolves to, or to the target as written (without `.md`) when none does:
    such a target is a `missing` node of a graph, never a card. A link from a
    note to itself (`[[#Heading]]`) is an edge but neither an outlink nor an
    inlink, as Obsidian's backlinks do not list a note under itself.
    """

    def __init__(self, cards: Iterable[Any], dialect: str) -> None:
        self.dialect = dialect
        self.cards = list(cards)
        self.names = {card.name for card in self.cards}
        self._resolver: Resolver | None = None
        self._resolved: dict[str, list[tuple[str, dict[str, Any], bool]]] | None = None
        self._inlinks: dict[str, list[str]] | None = None

    @property
    def resolver(self) -> Resolver:
        """Built on first use: a program that follows no link never pays for it."""
        resolver = self._resolver
        if resolver is None:
            resolver = Resolver(
                (card.name, card.relpath, aliases_of(card.metadata)) for card in self.cards
            )
            self._resolver = resolver
        return resolver

    def resolve_reference(self, name: str) -> str | None:
        """The card `[[name]]` in a program names: an exact name always wins."""
        if name in self.names:
            return name
        return self.resolver.resolve(name)

    def resolved(self) -> dict[str, list[tuple[str, dict[str, Any], bool]]]:
        """Per card name: (target, edge data, resolves to a card) for each link, in order."""
        table = self._resolved
        if table is None:
            table = {}
            names = self.names
            obsidian = self.dialect == OBSIDIAN
            resolve = self.resolver.resolve
            for card in self.cards:
                entries = []
                for target, data in card.raw_links:
                    if not obsidian:
                        entries.append((target, data, target in names))
                    elif not target:
                        entries.append((card.name, data, True))
                    else:
                        found = resolve(target, card.relpath)
                        if found is None:
                            entries.append((_missing_name(target), data, False))
                        else:
                            entries.append((found, data, True))
                table[card.name] = entries
            self._resolved = table
        return table

    def outlinks(self, name: str) -> list[str]:
        return _unique(
            target for target, _, ok in self.resolved().get(name, ()) if ok and target != name
        )

    def unresolved(self, name: str) -> list[str]:
        return _unique(target for target, _, ok in self.resolved().get(name, ()) if not ok)

    def inlinks(self, name: str) -> list[str]:
        table = self._inlinks
        if table is None:
            table = {}
            for source, entries in sorted(self.resolved().items()):
                for target, _, ok in entries:
                    if ok and target != source:
                        sources = table.setdefault(target, [])
                        if not sources or sources[-1] != source:
                            sources.append(source)
            self._inlinks = table
        return list(table.get(name, ()))

    def link_pairs(self) -> Iterator[tuple[str, str, dict[str, Any]]]:
        """(source, target, data) of every link, cards in name order."""
        resolved = self.resolved()
        for card in sorted(self.cards, key=lambda card: card.name):
            for target, data, _ in resolved[card.name]:
                yield card.name, target, data

    def count_unresolved(self) -> tuple[int, int]:
        """(distinct unresolved targets summed over cards, cards with any)."""
        links = cards = 0
        for name in self.resolved():
            missing = self.unresolved(name)
            if missing:
                links += len(missing)
                cards += 1
        return links, cards


def _missing_name(target: str) -> str:
    return strip_note_suffix(target.strip())


def _unique(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    kept = []
    for item in items:
        if item not in seen:
            seen.add(item)
            kept.append(item)
    return kept


# --- what a note says about itself: tags, aliases, tasks, dates --------------------


def front_matter_list(value: Any) -> list[str]:
    """A `tags:`/`aliases:` value: a list, or a comma-separated string."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list):
        return [str(item).strip() for item in value if isinstance(item, str | int | float)]
    return []


def tags_of(metadata: dict[str, Any], inline: Iterable[str]) -> list[str]:
    """Front-matter tags, then inline ones; without `#`, deduplicated ignoring case."""
    written = front_matter_list(metadata.get("tags", metadata.get("tag")))
    kept: list[str] = []
    seen: set[str] = set()
    for tag in (*written, *inline):
        tag = tag.lstrip("#").strip()
        folded = tag.casefold()
        if tag and folded not in seen:
            seen.add(folded)
            kept.append(tag)
    return kept


def aliases_of(metadata: dict[str, Any]) -> list[str]:
    value = metadata.get("aliases", metadata.get("alias"))
    if isinstance(value, str):
        return [value.strip()] if value.strip() else []
    return front_matter_list(value)


def inline_extras(body: str, first_line: int = 0) -> dict[str, Any]:
    """Tags, tasks and headings of a body read by the reference dialect (read on demand)."""
    extras: dict[str, Any] = {}
    _scan_body(body, first_line, [], extras)
    return extras


_DATE = re.compile(
    r"^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$"
)


def created_of(metadata: dict[str, Any]) -> Any:
    """`created`, else `date`, when it is an ISO date or date-time: a date/datetime, else None."""
    import datetime

    for key in ("created", "date"):
        value = metadata.get(key)
        if isinstance(value, str) and _DATE.match(value.strip()):
            text = value.strip()
            try:
                if len(text) == 10:
                    return datetime.date.fromisoformat(text)
                return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
            except ValueError:
                return None
    return None


# The Tasks plugin's date signifiers, and Dataview's task fields, by the date they give.
_TASK_EMOJI = {"📅": "due", "🗓": "due", "⏳": "scheduled", "⌛": "scheduled", "✅": "completed"}
_TASK_FIELDS = {
    "due": "due",
    "scheduled": "scheduled",
    "completion": "completed",
    "completed": "completed",
    "done": "completed",
}
_TASK_EMOJI_DATE = re.compile(r"(📅|🗓|⏳|⌛|✅)\ufe0f?\s*(\d{4}-\d{2}-\d{2})")
_TASK_FIELD_DATE = re.compile(r"[\[(]\s*([A-Za-z]+)\s*::\s*(\d{4}-\d{2}-\d{2})\s*[\])]")


def task_dates(text: str) -> dict[str, Any]:
    """The dates a task's text gives it (`📅 2026-03-01`, `[due:: 2026-03-01]`), by name
    (`due`, `scheduled`, `completed`); the first of each kind wins, invalid dates are none."""
    found: dict[str, Any] = {}
    if not any(mark in text for mark in _TASK_EMOJI) and "::" not in text:
        return found
    import datetime

    written = [(_TASK_EMOJI[m.group(1)], m.group(2)) for m in _TASK_EMOJI_DATE.finditer(text)]
    for match in _TASK_FIELD_DATE.finditer(text):
        name = _TASK_FIELDS.get(match.group(1).casefold())
        if name is not None:
            written.append((name, match.group(2)))
    for name, iso in written:
        if name not in found:
            try:
                found[name] = datetime.date.fromisoformat(iso)
            except ValueError:
                continue
    return found


# `key:: value` on a line of its own (also as a list item), or `[key:: value]` /
# `(key:: value)` anywhere in a line: Dataview's inline fields.
_LINE_FIELD = re.compile(r"^\s*(?:[-*+]\s+)?(?:\*\*|__)?([\w][\w \-/]*?)(?:\*\*|__)?::\s*(.*?)\s*$")
_BRACKET_FIELD = re.compile(r"[\[(]([\w][\w \-/]*?)::\s*([^\])]*?)\s*[\])]")
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")


def inline_fields(line: str) -> list[tuple[str, Any]]:
    """The Dataview fields one line writes: (key, value), the value a number, a Boolean or
    the text as written."""
    found = [(m.group(1).strip(), m.group(2)) for m in _BRACKET_FIELD.finditer(line)]
    if not found:
        whole = _LINE_FIELD.match(line)
        if whole is not None and not whole.group(1).strip().startswith("http"):
            found = [(whole.group(1).strip(), whole.group(2))]
    return [(key, _field_value(value)) for key, value in found if key]


def _field_value(text: str) -> Any:
    text = text.strip()
    if _NUMBER.match(text):
        return float(text) if "." in text else int(text)
    if text in ("true", "false"):
        return text == "true"
    return text


def fields_of(extras: dict[str, Any] | None) -> dict[str, Any]:
    """A note's inline fields as metadata: a key written twice is a list of its values."""
    fields: dict[str, Any] = {}
    listed: set[str] = set()  # keys whose value is already the list of their values
    for key, value, _ in extras.get("fields", ()) if extras else ():
        if key not in fields:
            fields[key] = value
        elif key in listed:
            fields[key].append(value)
        else:
            fields[key] = [fields[key], value]
            listed.add(key)
    return fields


_DAY_IN_NAME = re.compile(r"(\d{4})-?(\d{2})-?(\d{2})")


def day_of(relpath: str, metadata: dict[str, Any]) -> Any:
    """The date a daily note is for: one in its file name (`2023-09-12`, `20230912`), else
    its `date` property when that is an ISO date; None otherwise."""
    import datetime

    stem = relpath.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    match = _DAY_IN_NAME.search(stem)
    if match is not None:
        try:
            return datetime.date(*(int(part) for part in match.groups()))
        except ValueError:
            pass
    value = metadata.get("date")
    if isinstance(value, str) and _DATE.match(value.strip()):
        try:
            return datetime.date.fromisoformat(value.strip()[:10])
        except ValueError:
            return None
    return None


# --- which dialect, which files ---------------------------------------------------


def without_excluded(found: list[Any], patterns: Iterable[str]) -> list[Any]:
    """The found files whose vault-relative path matches none of the `[vault] exclude` globs."""
    compiled = [glob_pattern(pattern) for pattern in patterns]
    return [item for item in found if not any(p.match(item.relpath) for p in compiled)]


def glob_pattern(pattern: str) -> re.Pattern[str]:
    """A glob as `.gitignore` reads one: `*` within a name, `**` across folders.

    A pattern without `/` matches a file or folder name at any depth; a folder
    matched leaves out everything below it.
    """
    pattern = pattern.strip().lstrip("/")
    anchored = "/" in pattern.rstrip("/")
    pattern = pattern.rstrip("/")
    parts = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if pattern.startswith("**/", index):
            parts.append("(?:.*/)?")
            index += 3
            continue
        if pattern.startswith("**", index):
            parts.append(".*")
            index += 2
            continue
        if char == "*":
            parts.append("[^/]*")
        elif char == "?":
            parts.append("[^/]")
        else:
            parts.append(re.escape(char))
        index += 1
    body = "".join(parts)
    prefix = "" if anchored else "(?:.*/)?"
    return re.compile(f"^{prefix}{body}(?:/.*)?$")
