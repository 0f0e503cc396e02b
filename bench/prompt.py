"""What ranking a long prompt costs against one `bm25` of the same text, at 5k cards.

    flock /work/bench.lock .venv/bin/python bench/prompt.py [--size 5000] [--rounds 7] [--reuse DIR]

The vault is SciFact abstracts (../shared/datasets/scifact) cycled to `--size` cards, one
Markdown file per card, opened once. Each prompt is about 2,000 characters: several of the
dataset's questions as list items and sentences, a file path, a command and a code symbol,
as an agent would send. Each round runs, per prompt, through `hql.run` on the open vault
(parameters bound, so the plan is checked once):

* `cards | prompt($p) | relevant | take(10)`: the variants (the whole prompt, each
  segment, its technical tokens) fused by reciprocal rank, gates and evidence;
* its anchor `cards | bm25($p) | take(10)`: one BM25 query of the same text,

alternately, so both are timed through the same moments of a shared machine; each prompt
keeps its fastest time of each. Printed: ms per prompt of both and the ratio (target <= 3x).

The rounds ask each prompt again, so both sides meet words and cards they have read
before. An agent's prompts are new each time: `--fresh N` (default 24) then times N new
prompts per side, each asked once (each side its own, interleaved), and prints the
fastest and the median of each and their ratios.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from scale import corpus, reused_vault  # noqa: E402

import hql  # noqa: E402

PROMPT = "import bm25\ncards | prompt($p) | relevant | take(10)"
ANCHOR = "import bm25\ncards | bm25($p) | take(10)"
PROMPT_CHARS = 2000


def prompts(questions: list[str], count: int, seed: int = 5) -> list[str]:
    """Prompts of about PROMPT_CHARS characters made of questions, a path, a command, a symbol."""
    rng = random.Random(seed)
    made = []
    for _ in range(count):
        parts = [
            "I am reviewing the evidence notes for our literature survey.",
            "Run `hql index build` first and keep src/survey/claims.py in sync with readEvidence.",
        ]
        while sum(len(part) + 3 for part in parts) < PROMPT_CHARS:
            parts.append(f"- {rng.choice(questions)}")
        made.append("\n".join(parts)[: PROMPT_CHARS + 200])
    return made


def best_ms(vault: hql.Vault, program: str, text: str) -> float:
    started = time.perf_counter()
    outcome = hql.run(program, vault=vault, params={"p": text})
    elapsed = (time.perf_counter() - started) * 1000
    if outcome.failed:
        raise SystemExit(outcome.render_reports())
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--reuse", type=Path, default=None)
    parser.add_argument("--fresh", type=int, default=24)
    args = parser.parse_args()
    docs, questions = corpus()
    folder = args.reuse or Path(tempfile.mkdtemp(prefix="hql-bench-prompt-"))
    root = reused_vault(folder, docs, args.size)
    vault = hql.Vault.open(root)
    texts = prompts(questions, args.prompts)
    for text in texts[:1]:  # builds the index and the analyser's caches once
        best_ms(vault, ANCHOR, text)
        best_ms(vault, PROMPT, text)
    mine = {text: float("inf") for text in texts}
    anchor = {text: float("inf") for text in texts}
    for _ in range(args.rounds):
        for text in texts:
            mine[text] = min(mine[text], best_ms(vault, PROMPT, text))
            anchor[text] = min(anchor[text], best_ms(vault, ANCHOR, text))
    ours = statistics.median(mine.values())
    theirs = statistics.median(anchor.values())
    chars = statistics.median(len(text) for text in texts)
    print(f"{len(vault.cards)} cards, {len(texts)} prompts of ~{chars:.0f} characters")
    print(f"  prompt($p) | relevant | take(10)   {ours:8.1f} ms")
    print(f"  bm25($p) | take(10) (anchor)       {theirs:8.1f} ms")
    print(f"  ratio                              {ours / theirs:8.2f}x (target <= 3x)")
    if args.fresh > 0:
        fresh(vault, questions, args.fresh)


def fresh(vault: hql.Vault, questions: list[str], count: int) -> None:
    """Each program on `count` prompts of its own, each asked once, interleaved."""
    texts = prompts(questions, 2 * count, seed=17)
    mine: list[float] = []
    anchor: list[float] = []
    for ours, theirs in zip(texts[0::2], texts[1::2], strict=True):
        mine.append(best_ms(vault, PROMPT, ours))
        anchor.append(best_ms(vault, ANCHOR, theirs))
    print(f"a new prompt for every call ({count} each)     fastest   median")
    print(
        f"  prompt($p) | relevant | take(10)   {min(mine):8.1f} {statistics.median(mine):8.1f} ms"
    )
    print(
        f"  bm25($p) | take(10) (anchor)       {min(anchor):8.1f} "
        f"{statistics.median(anchor):8.1f} ms"
    )
    print(
        f"  ratio                              {min(mine) / min(anchor):8.2f}x"
        f" {statistics.median(mine) / statistics.median(anchor):7.2f}x"
    )


if __name__ == "__main__":
    main()
