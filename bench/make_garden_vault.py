"""Writes bench/data/garden/: a vault of a few hundred notes in Obsidian's layout, for `relevant`.

    .venv/bin/python bench/make_garden_vault.py

The notes are real prose on unrelated subjects, the way a personal vault mixes them:

* `Ocean/Papers/` and `Ocean/World Ocean Assessment/`: the 309 Pirá documents (ocean,
  Brazilian coast, climate; CC0), one note each, titled by their first words.
* `Reading/`: the 48 Wikipedia articles of XQuAD-R (English, CC BY-SA 4.0), one note per
  article, each paragraph under a heading of its own.
* `Manual/`: this repository's docs/*.md, one note per `##` section.

Every note has a YAML header (tags, source) and most link to a neighbour, as notes do.
The vault is committed; bench/relevance.py asks bench/data/garden-questions.json of it.
Rerun this only to change the vault (the questions name notes by path).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ROOT.parent / "shared" / "datasets"
VAULT = ROOT / "bench" / "data" / "garden"


def words_title(text: str, count: int = 7) -> str:
    first = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]
    words = re.sub(r"[^\w\s-]", " ", first).split()[:count]
    return " ".join(words)


def unique_path(folder: Path, title: str) -> Path:
    path = folder / f"{title}.md"
    number = 2
    while path.exists():
        path = folder / f"{title} {number}.md"
        number += 1
    return path


def write(path: Path, header: dict[str, object], body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["---"]
    for key, value in header.items():
        lines.append(f"{key}: {json.dumps(value, ensure_ascii=False)}")
    lines.append("---")
    path.write_text("\n".join(lines) + "\n" + body.rstrip() + "\n", encoding="utf-8")


def ocean_notes() -> None:
    rows = [
        json.loads(line)
        for line in (DATASETS / "pira" / "corpus.en.jsonl").read_text().splitlines()
    ]
    previous: dict[str, str] = {}
    for row in rows:
        source = row["metadata"].get("source", "")
        assessment = source.startswith("UN World Ocean")
        folder = VAULT / "Ocean" / ("World Ocean Assessment" if assessment else "Papers")
        path = unique_path(folder, words_title(row["text"]))
        link = previous.get(folder.name)
        body = f"# {path.stem}\n\n## Summary\n\n{row['text']}\n"
        if link:
            body += f"\n## Related\n\n- [[{link}]]\n"
        tags = ["ocean", "assessment" if assessment else "paper"]
        write(path, {"tags": tags, "source": source or "Scopus abstract"}, body)
        previous[folder.name] = path.stem


def reading_notes() -> None:
    rows = [
        json.loads(line)
        for line in (DATASETS / "xquad-r" / "en" / "corpus.paragraphs.jsonl")
        .read_text()
        .splitlines()
    ]
    articles: dict[str, list[str]] = {}
    for row in rows:
        articles.setdefault(row["title"], []).append(row["text"])
    titles = list(articles)
    for number, (article, paragraphs) in enumerate(articles.items()):
        name = article.replace("_", " ").replace(",", "")
        sections = [f"## {words_title(paragraph, 5)}\n\n{paragraph}\n" for paragraph in paragraphs]
        neighbour = titles[(number + 1) % len(titles)].replace("_", " ").replace(",", "")
        body = f"# {name}\n\n" + "\n".join(sections) + f"\nSee also [[{neighbour}]].\n"
        write(
            VAULT / "Reading" / f"{name}.md",
            {"tags": ["reading", "wikipedia"], "source": f"Wikipedia: {article}"},
            body,
        )


def manual_notes() -> None:
    for page in sorted((ROOT / "docs").glob("*.md")):
        text = page.read_text(encoding="utf-8")
        parts = re.split(r"(?m)^(?=## )", text)
        for part in parts[1:]:
            heading = part.splitlines()[0][3:].strip()
            title = re.sub(r"[^\w\s-]", " ", heading).split()
            path = unique_path(VAULT / "Manual", f"{page.stem} - {' '.join(title[:8])}")
            write(path, {"tags": ["hql", "manual"], "source": f"docs/{page.name}"}, part)


def main() -> None:
    shutil.rmtree(VAULT, ignore_errors=True)
    VAULT.mkdir(parents=True)
    ocean_notes()
    reading_notes()
    manual_notes()
    (VAULT / "Home.md").write_text(
        "# Home\n\nWhat I read and keep: [[Ocean]], [[Reading]], the HQL [[Manual]].\n",
        encoding="utf-8",
    )
    print(f"{sum(1 for _ in VAULT.rglob('*.md'))} notes in {VAULT}")


if __name__ == "__main__":
    main()
