"""Other search engines over the same vault, as a user would run them: anchors for bench/scale.py.

Each engine reads the vault's Markdown files from disk (the first line, `# title`, is the
title; the rest the body), builds its own index in a folder of its own and answers a
question in a fresh process. tantivy (`pip install tantivy`) is a bench-only dependency: an
engine that is not installed is left out (`available()` lists the ones that are).
SQLite FTS5 ships with Python's sqlite3 where the library was built with it.
"""

from __future__ import annotations

import re
import resource
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

# Run in a fresh interpreter: `python -c BUILD[engine] VAULT INDEX_DIR`, `python -c
# QUERY[engine] INDEX_DIR QUESTION` (prints the ten names found).
_READ = """
import os, sys
def cards(vault):
    for entry in sorted(os.scandir(vault), key=lambda e: e.name):
        if entry.name.endswith('.md') and entry.is_file():
            with open(entry.path, encoding='utf-8') as f:
                text = f.read()
            title, _, body = text.partition('\\n')
            yield entry.name[:-3], title.lstrip('# ').strip(), body
"""

BUILD = {
    "tantivy": _READ
    + """
import tantivy
schema = tantivy.SchemaBuilder()
schema.add_text_field('name', stored=True, tokenizer_name='raw')
schema.add_text_field('title', stored=False)
schema.add_text_field('body', stored=False)
schema = schema.build()
os.makedirs(sys.argv[2], exist_ok=True)
index = tantivy.Index(schema, path=sys.argv[2])
writer = index.writer(heap_size=128_000_000, num_threads=1)
for name, title, body in cards(sys.argv[1]):
    writer.add_document(tantivy.Document(name=name, title=title, body=body))
writer.commit()
writer.wait_merging_threads()
""",
    "fts5": _READ
    + """
import sqlite3
os.makedirs(sys.argv[2], exist_ok=True)
connection = sqlite3.connect(os.path.join(sys.argv[2], 'fts.sqlite'))
connection.execute('CREATE VIRTUAL TABLE card USING fts5(name UNINDEXED, title, body)')
connection.executemany('INSERT INTO card VALUES (?, ?, ?)', cards(sys.argv[1]))
connection.commit()
connection.close()
""",
    # Not an engine a user would pick: the least any pure-Python indexer does (the UTF-8
    # text split at ASCII punctuation and spaces by one bytes.translate, ASCII lowercased,
    # with no stemming, stop words or Unicode folding; words counted per card; each word's
    # postings written out), a floor beside the others.
    "python": _READ
    + """
import marshal
from collections import Counter
spaces = bytes(c if c >= 128 or chr(c).isalnum() else 32 for c in range(256))
names, lengths, postings = [], [], {}
for number, (name, title, body) in enumerate(cards(sys.argv[1])):
    words = (title + ' ' + body).encode().lower().translate(spaces).split()
    names.append(name)
    lengths.append(len(words))
    for word, count in Counter(words).items():
        found = postings.get(word)
        if found is None:
            found = postings[word] = []
        found += (number, count)
os.makedirs(sys.argv[2], exist_ok=True)
with open(os.path.join(sys.argv[2], 'index.marshal'), 'wb') as out:
    marshal.dump((names, lengths, postings), out)
""",
}

QUERY = {
    "tantivy": """
import re, sys
import tantivy
index = tantivy.Index.open(sys.argv[1])
words = re.findall(r'\\w+', sys.argv[2])
query = index.parse_query(' '.join(words), ['title', 'body'])
searcher = index.searcher()
found = searcher.search(query, 10).hits
print('\\n'.join(searcher.doc(address)['name'][0] for _, address in found))
""",
    "fts5": """
import os, re, sys, sqlite3
connection = sqlite3.connect(os.path.join(sys.argv[1], 'fts.sqlite'))
words = re.findall(r'\\w+', sys.argv[2])
match = ' OR '.join('"' + word + '"' for word in words)
rows = connection.execute(
    'SELECT name FROM card WHERE card MATCH ? ORDER BY bm25(card) LIMIT 10', (match,)
).fetchall()
print('\\n'.join(name for (name,) in rows))
""",
}


def available() -> list[str]:
    found = []
    try:
        import tantivy  # noqa: F401
    except ImportError:
        pass
    else:
        found.append("tantivy")
    try:
        sqlite3.connect(":memory:").execute("CREATE VIRTUAL TABLE t USING fts5(x)")
    except sqlite3.OperationalError:
        pass
    else:
        found.append("fts5")
    return found


def timed(command: list[str]) -> tuple[float, float]:
    """(wall seconds, peak memory in MB) of one child process running `command`."""
    return timed_with(None, command)


def timed_with(environment: dict[str, str] | None, command: list[str]) -> tuple[float, float]:
    """`timed`, the child running in this environment."""
    probe = (
        "import resource, subprocess, sys, time\n"
        "started = time.perf_counter()\n"
        "subprocess.run(sys.argv[1:], check=True, capture_output=True)\n"
        "took = time.perf_counter() - started\n"
        "print(took, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *command],
        check=True,
        capture_output=True,
        text=True,
        env=environment,
    )
    took, peak = done.stdout.split()
    return float(took), int(peak) / 1024


def build(engine: str, vault: Path, folder: Path) -> tuple[float, float]:
    """Index the vault from its files: (seconds, peak MB)."""
    return timed([sys.executable, "-c", BUILD[engine], str(vault), str(folder)])


def query_command(engine: str, folder: Path, question: str) -> list[str]:
    return [sys.executable, "-c", QUERY[engine], str(folder), question]


def in_process(engine: str, folder: Path) -> Iterator[object]:
    """A searcher kept open in this process: send it questions, it answers ten names."""
    words = re.compile(r"\w+")
    if engine == "tantivy":
        import tantivy

        index = tantivy.Index.open(str(folder))
        searcher = index.searcher()
        question = yield None
        while True:
            query = index.parse_query(" ".join(words.findall(question)), ["title", "body"])
            question = yield [address for _, address in searcher.search(query, 10).hits]
    connection = sqlite3.connect(folder / "fts.sqlite")
    question = yield None
    while True:
        match = " OR ".join(f'"{word}"' for word in words.findall(question))
        question = yield connection.execute(
            "SELECT rowid FROM card WHERE card MATCH ? ORDER BY bm25(card) LIMIT 10", (match,)
        ).fetchall()


def peak_self_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def best_wall(command: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return min(times)
