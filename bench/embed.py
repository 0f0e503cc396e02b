"""Cards per second of `hql index build` with each local model.

    .venv/bin/python bench/embed.py [--copies 2] [--models e5,minilm]

The vault is the birds fixture repeated `--copies` times (card names made
unique). For each model: the first build (model loading included), then a
full rebuild with the model warm (the index deleted), then a no-change
rebuild (incremental: nothing embedded). The anchor is the model's own
batch call on the same texts in the same run; the ratio says what the
producer adds (text assembly, SQLite, atomic rename).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hql.index.commands import build_command  # noqa: E402
from hql.index.config import EmbedderConfig  # noqa: E402
from hql.index.embedders import E5_MODEL, MINILM_MODEL, make_embedder  # noqa: E402
from hql.vault import Vault  # noqa: E402

BIRDS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "birds"
MODELS = {"e5": E5_MODEL, "minilm": MINILM_MODEL}


def make_vault(root: Path, copies: int, model: str) -> Vault:
    root.mkdir(parents=True)
    for copy in range(copies):
        for card in BIRDS.glob("*.hmd"):
            shutil.copy(card, root / f"{card.stem}-{copy}.hmd")
    (root / "hql.toml").write_text(
        f'[semantics]\nindex = ".hql/index.sqlite"\n[semantics.embedder]\nprovider = "local"\nmodel = "{model}"\n'
    )
    return Vault.open(root, use_cache=False)


def timed_build(vault: Vault) -> float:
    start = time.perf_counter()
    code, text = build_command(vault)
    if code != 0:
        raise RuntimeError(text)
    return time.perf_counter() - start


def measure(model: str, copies: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        vault = make_vault(Path(folder) / "birds", copies, model)
        count = len(vault.cards)
        first = timed_build(vault)
        (vault.root / ".hql" / "index.sqlite").unlink()
        warm = timed_build(vault)
        unchanged = timed_build(vault)
        embedder = make_embedder(EmbedderConfig(provider="local", model=model))
        texts = [card.text for card in vault.cards]
        start = time.perf_counter()
        embedder.embed_passages(texts)
        anchor = time.perf_counter() - start
    print(f"{model}  ({count} cards)")
    print(f"  first build (loads model)  {first:7.2f} s  {count / first:7.1f} cards/s")
    print(f"  full rebuild, model warm   {warm:7.2f} s  {count / warm:7.1f} cards/s")
    print(
        f"  model alone, same texts    {anchor:7.2f} s  {count / anchor:7.1f} cards/s  (build/model {warm / anchor:.2f})"
    )
    print(f"  rebuild, nothing changed   {unchanged * 1e3:7.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=2)
    parser.add_argument("--models", default="e5,minilm")
    args = parser.parse_args()
    for key in args.models.split(","):
        try:
            measure(MODELS[key], args.copies)
        except RuntimeError as error:
            print(f"{MODELS[key]}: skipped ({error})")


if __name__ == "__main__":
    main()
