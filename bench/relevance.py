"""`relevant` on a realistic vault: keeps a right note for a question the vault answers, nothing otherwise.

    .venv/bin/python bench/relevance.py [--models e5,minilm] [--steps bm25,semantic,hybrid]

The vault is bench/data/garden (440 notes: ocean papers, Wikipedia articles, this
manual; see bench/make_garden_vault.py), the questions bench/data/garden-questions.json
(written by hand: 24 the vault answers, 20 it cannot). Each question runs as the program
a user writes, `cards | STEP("question") | relevant`, through `hql.run`, on a copy of the
vault whose index `hql index build` made with the model (the questions stored with it).
Printed per step and model: the finds keeping a right note, the abstentions keeping
nothing, and the median number of notes kept on a find. The OME counterparts are in
bench/quality.py (`--only ome,ome-e5`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from quality_api import hql_string  # noqa: E402

import hql  # noqa: E402
from hql.index.commands import build_command  # noqa: E402
from hql.index.embedders import E5_MODEL, MINILM_MODEL  # noqa: E402

GARDEN = ROOT / "bench" / "data" / "garden"
QUESTIONS = ROOT / "bench" / "data" / "garden-questions.json"
MODELS = {"e5": E5_MODEL, "minilm": MINILM_MODEL}


def vault_copy(model: str, questions: list[str], keep: Path | None) -> Path:
    """A copy of the garden with an index built by `model`, the questions stored in it.

    Under `keep`, the copy stays for the next run, whose build then embeds nothing new.
    """
    base = keep / model.rsplit("/", 1)[-1] if keep else Path(tempfile.mkdtemp(prefix="hql-"))
    root = base / "garden"
    if not root.exists():
        shutil.copytree(GARDEN, root, ignore=shutil.ignore_patterns(".hql"))
    (root / "hql.toml").write_text(
        '[semantics]\nindex = ".hql/index.sqlite"\n\n'
        f'[semantics.embedder]\nprovider = "local"\nmodel = "{model}"\n',
        encoding="utf-8",
    )
    started = time.perf_counter()
    code, text = build_command(hql.open_vault(root), queries=questions)
    if code != 0:
        raise SystemExit(text)
    print(f"  index built in {time.perf_counter() - started:.0f} s: {text.splitlines()[-1]}")
    return root


def kept_names(session: hql.Session, step: str, question: str) -> list[str]:
    program = (
        f"import {step}\ncards | {step}({hql_string(question)}) | relevant | map(h => h.card.name)"
    )
    outcome = session.run(program)
    if outcome.failed:
        raise SystemExit(outcome.render_reports())
    return list(outcome.value)


def score(session: hql.Session, step: str, data: dict) -> str:
    found, kept_counts = 0, []
    for item in data["finds"]:
        names = kept_names(session, step, item["question"])
        right = {path.rsplit("/", 1)[-1] for path in item["notes"]}
        found += bool(right & set(names))
        kept_counts.append(len(names))
    abstained = sum(not kept_names(session, step, q) for q in data["abstain"])
    finds, abstentions = len(data["finds"]), len(data["abstain"])
    return (
        f"finds keeping a right note {found:>2}/{finds} ({found / finds:4.0%})   "
        f"abstentions {abstained:>2}/{abstentions} ({abstained / abstentions:4.0%})   "
        f"median kept on a find {statistics.median(kept_counts):g}"
    )


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--models", default="e5,minilm")
    options.add_argument("--steps", default="bm25,semantic,hybrid")
    options.add_argument("--keep", type=Path, help="keep the indexed copies here, for reruns")
    args = options.parse_args()
    data = json.loads(QUESTIONS.read_text(encoding="utf-8"))
    questions = [item["question"] for item in data["finds"]] + data["abstain"]
    steps = args.steps.split(",")
    if "bm25" in steps:
        session = hql.Session(hql.open_vault(GARDEN))
        print(f"cards | bm25(q) | relevant            {score(session, 'bm25', data)}", flush=True)
    for key in filter(None, args.models.split(",")):
        print(f"with {MODELS[key]}:", flush=True)
        root = vault_copy(MODELS[key], questions, args.keep)
        session = hql.Session(hql.open_vault(root))
        for step in steps:
            if step != "bm25":
                print(f"  cards | {step}(q) | relevant {score(session, step, data)}", flush=True)
        if not args.keep:
            shutil.rmtree(root.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
