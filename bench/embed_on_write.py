"""What a note written with `[semantics] embed_on_write = true` costs, against re-embedding
that one note alone, on a vault of 5,000 cards; and that the next `semantic` query sees it.

    flock /work/bench.lock .venv/bin/python bench/embed_on_write.py [--cards 5000]
        [--keep /tmp/hql-embed-on-write] [--rounds 5] [--embedder minilm|standin]

The vault is the first N SciFact abstracts, one note each, with the int8 ONNX
all-MiniLM-L6-v2 as its embedder (built once and kept under --keep: a first run
embeds every card), or `--embedder standin`: the tests' stand-in embeddings
server on loopback (a hashed bag of words, answered at once), which leaves what
HQL itself adds to a write (catalogue, bm25 store, the store's upsert) standing
out against an embedding that costs next to nothing. Each round appends a sentence to one note through
`hql.notes` (write, catalogue, bm25 store, the note's vectors into the SQLite
index) and times the whole call; the anchor, in the same round, is embedding
that note's sections alone (`card_vectors_for`, the embedder already loaded).
After each write the index must hold the note's new digest, and a `semantic`
query for the appended sentence must score the note higher than before the write.
With the stand-in, the note is also embedded by the shipped MiniLM alone, and the
write with MiniLM is estimated as the write less its stand-in embedding plus that.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CORPUS = Path("/work/shared/datasets/scifact/corpus.jsonl")
TOML = """[semantics]
index = ".hql/index.sqlite"
embed_on_write = true
embed_queries = true
ann = "off"

[semantics.embedder]
{embedder}"""
MINILM = 'provider = "local"\nmodel = "sentence-transformers/all-MiniLM-L6-v2"\n'


def standin(endpoint: str) -> str:
    return f'provider = "http"\nendpoint = "{endpoint}"\nmodel = "standin-bow"\nrevision = "1"\n'


SENTENCES = [
    "A quokka colony on the island changed its breeding season after the drought.",
    "Volcanic ash fertilised the terraces where the monks grew saffron.",
    "The lighthouse keeper logged every storm petrel that struck the lamp.",
    "Glacier meltwater carried diatoms into the fjord each spring.",
    "Beekeepers in the valley moved their hives ahead of the frost.",
    "A sourdough starter kept for a century still raised bread.",
]


def make_vault(root: Path, cards: int, embedder: str) -> None:
    (root / "Papers").mkdir(parents=True, exist_ok=True)
    (root / "hql.toml").write_text(TOML.format(embedder=embedder))
    with CORPUS.open() as corpus:
        for number, line in enumerate(corpus):
            if number >= cards:
                break
            paper = json.loads(line)
            text = paper["text"]
            title = paper["title"].replace('"', "'")
            (root / "Papers" / f"paper {paper['_id']}.md").write_text(
                f'---\ntitle: "{title}"\nsource: scifact\n---\n{text}\n'
            )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cards", type=int, default=5000)
    parser.add_argument("--keep", type=Path, default=Path("/tmp/hql-embed-on-write"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--embedder", choices=("minilm", "standin"), default="minilm")
    args = parser.parse_args()
    if args.embedder == "minilm":
        run(args, MINILM)
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from standin_embedder import standin_server

    with standin_server() as (endpoint, _state):
        run(args, standin(endpoint))


def run(args: argparse.Namespace, embedder_toml: str) -> None:
    import hql
    import hql.notes
    from hql.index.config import load_semantics_config
    from hql.index.embedders import make_embedder
    from hql.index.producer import build_index, card_vectors_for
    from hql.index.reader import raw_config
    from hql.index.stores import open_store

    root = args.keep / f"scifact-{args.cards}-{args.embedder}"
    (root / "hql.toml").parent.mkdir(parents=True, exist_ok=True)
    if not (root / ".hql" / "index.sqlite").exists():
        make_vault(root, args.cards, embedder_toml)
        started = time.perf_counter()
        build_index(hql.Vault.open(root))
        print(f"built the index of {args.cards} cards in {time.perf_counter() - started:.0f} s")
    (root / "hql.toml").write_text(TOML.format(embedder=embedder_toml))  # this run's endpoint
    vault = hql.Vault.open(root)
    print(f"{len(vault)} cards, embedder {args.embedder}")
    config = load_semantics_config(raw_config(vault))
    embedder = make_embedder(config.require_embedder())
    # With the stand-in, a second anchor: the same note embedded by the shipped MiniLM alone.
    minilm = None
    if args.embedder == "standin":
        from hql.index.config import EmbedderConfig

        minilm = make_embedder(EmbedderConfig("local", "sentence-transformers/all-MiniLM-L6-v2"))
    notes = hql.notes.open(root)
    names = sorted(card.name for card in vault.cards)[:: max(1, len(vault) // (args.rounds + 1))]
    notes.append(names[-1], "Warm-up: loads the embedder in this process.")  # not timed
    writes, alone, refreshes, by_minilm = [], [], [], []
    run_word = "".join(chr(ord("a") + int(digit)) for digit in str(time.time_ns())[-9:])
    question = (
        "import semantic\ncards | semantic($q) | filter(h => h.card.name == $n) | map(h => h.score)"
    )
    for round_number in range(args.rounds):
        name = names[round_number]
        # A word of this run's own: a note kept from an earlier run already holds the sentence.
        sentence = f"{SENTENCES[round_number % len(SENTENCES)]} Run {run_word}."
        before = list(hql.run(question, vault=vault, params={"q": sentence, "n": name}).value)
        started = time.perf_counter()
        written = notes.append(name, sentence)
        writes.append(time.perf_counter() - started)
        assert written.freshness is not None and written.freshness.embedded == [name], (
            written.freshness
        )
        refreshes.append(written.freshness.seconds)
        fresh = hql.Vault.open(root)
        card = fresh.card(name)
        started = time.perf_counter()
        card_vectors_for(fresh, embedder, [card])
        alone.append(time.perf_counter() - started)
        if minilm is not None:
            card_vectors_for(fresh, minilm, [card])  # loads the model once: not timed
            started = time.perf_counter()
            card_vectors_for(fresh, minilm, [card])
            by_minilm.append(time.perf_counter() - started)
        assert open_store(fresh, config).digests()[name] == card.digest
        after = list(hql.run(question, vault=fresh, params={"q": sentence, "n": name}).value)
        print(f"  {name}: write {1000 * writes[-1]:.0f} ms, the note alone {1000 * alone[-1]:.0f} ms, "
              f"its semantic score for the new sentence {before[0]:.3f} -> {after[0]:.3f}")  # fmt: skip
        assert after[0] > before[0], (before, after)
        vault = fresh
    write, anchor = statistics.median(writes), statistics.median(alone)
    print(
        f"median over {args.rounds} writes: the whole write {1000 * write:.0f} ms "
        f"(of which the refresh {1000 * statistics.median(refreshes):.0f} ms), "
        f"re-embedding the note alone {1000 * anchor:.0f} ms: x{write / anchor:.1f}"
    )
    if by_minilm:
        real = statistics.median(by_minilm)
        # What a write would cost with MiniLM: the same write, its stand-in embedding
        # replaced by MiniLM's (estimated: the index here holds stand-in vectors).
        estimate = write - anchor + real
        print(
            f"the note embedded by MiniLM alone {1000 * real:.0f} ms; a write with MiniLM "
            f"(estimated: the write less its stand-in embedding, plus MiniLM's) "
            f"{1000 * estimate:.0f} ms: x{estimate / real:.1f}"
        )


if __name__ == "__main__":
    main()
