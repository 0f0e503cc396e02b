"""all-MiniLM-L6-v2 with its products in int8, made once from the model HQL ships.

The shipped ONNX file stores int8 weights but computes in fp32: each weight is cast and
scaled before its MatMul. `[semantics.embedder] int8 = true` runs a dynamically quantised
copy instead: onnxruntime's basic optimisations fold the casts into fp32 weights (the
model that runs without the option), then `quantize_dynamic` gives each MatMul int8
weights, one scale per output channel, and activations quantised per call
(MatMulInteger). Measured by bench/int8.py in one run: SciFact nDCG@10 0.661 against
0.662 (hybrid 0.730 against 0.731), each text's vector within cosine 0.991 of the
shipped model's (mean 0.995), 1.5x the texts a second. One scale per whole matrix lost
too much (mean cosine 0.935).

The copy is made at first use (it needs the `onnx` package, `hql[minilm-int8]`) in the
user's cache, `$XDG_CACHE_HOME/hql/models` or `~/.cache/hql/models`, named by the shipped
file's digest and the onnxruntime that made it; its own sha256 is kept beside it and
checked at every load, and it is part of the model's revision (an index built with
another copy is embedded again).
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from hql import messages
from hql.index.errors import EmbedderError, EmbedderUnavailable

DIGEST_SUFFIX = ".sha256"


def cache_folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hql" / "models"


def int8_model(model: str, source: Callable[[], Path], source_sha256: str) -> tuple[Path, str]:
    """The int8 copy of the shipped model file and its sha256, made from `source()` (the
    shipped file, checked) only when the cache does not hold it yet."""
    try:
        import onnxruntime
    except ImportError:
        raise _packages_missing(model) from None
    # Named by what it is made from and by; a copy once made is checked by its own digest.
    name = f"all-MiniLM-L6-v2-{source_sha256[:16]}-ort{onnxruntime.__version__}"
    target = cache_folder() / f"{name}-int8.onnx"
    digest_file = target.with_name(target.name + DIGEST_SUFFIX)
    if not target.exists() or not digest_file.exists():
        _make(model, source(), target, digest_file)
    try:
        # A damaged digest file is one that does not match: the copy is refused, with the report.
        kept = digest_file.read_bytes().decode("ascii", "replace").strip()
        found = hashlib.sha256(target.read_bytes()).hexdigest()
    except OSError as error:
        raise EmbedderError(messages.embedder_failed(model, str(error))) from None
    if found != kept:
        raise EmbedderError(messages.embedder_int8_copy_changed(str(target), found))
    return target, found


def _packages_missing(model: str) -> EmbedderUnavailable:
    return EmbedderUnavailable(
        messages.embedder_packages_missing(model, "`onnx` and `onnxruntime`", "minilm-int8")
    )


def _make(model: str, source: Path, target: Path, digest_file: Path) -> None:
    """Fold the shipped weights to fp32, quantise dynamically per channel, keep the digest."""
    import onnxruntime

    try:  # the quantiser needs `onnx`; only making the copy does
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError:
        raise _packages_missing(model) from None

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
            fp32 = Path(scratch) / "fp32.onnx"
            made = Path(scratch) / "int8.onnx"
            options = onnxruntime.SessionOptions()
            options.log_severity_level = 3
            options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
            options.optimized_model_filepath = str(fp32)
            onnxruntime.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
            logging.disable(logging.WARNING)  # its advice on pre-processing is not the user's
            try:
                quantize_dynamic(
                    str(fp32), str(made), weight_type=QuantType.QInt8, per_channel=True
                )
            finally:
                logging.disable(logging.NOTSET)
            digest = hashlib.sha256(made.read_bytes()).hexdigest()
            # Another process making the same copy at once writes the same bytes.
            os.replace(made, target)
            kept = Path(scratch) / "digest"
            kept.write_text(digest + "\n", encoding="ascii")
            os.replace(kept, digest_file)
    except EmbedderError:
        raise
    except Exception as error:  # a failure of the quantiser is not the user's traceback
        raise EmbedderError(messages.embedder_int8_model_failed(str(target), str(error))) from None
