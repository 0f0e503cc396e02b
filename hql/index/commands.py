"""`hql index build | verify | status | doctor | inspect`: functions returning (exit code, text), and their argparse wiring."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hql import messages
from hql.index.errors import SemanticIndexError

# The producer and the stores import urllib, sqlite3 and the embedders (~60 ms): only an
# `index` command that runs needs them, not `hql --help` listing it.
if TYPE_CHECKING:
    from hql.index.embedders import Embedder
    from hql.index.producer import InspectResult, VerifyResult
    from hql.index.reader import VaultLike

EXIT_OK = 0
EXIT_PROBLEM = 1
EXIT_INTERRUPTED = 130


def build_command(
    vault: VaultLike,
    queries: Sequence[str] = (),
    built_at: str | None = None,
    embedder: Embedder | None = None,
    workers: int | None = None,
) -> tuple[int, str]:
    from hql.index.producer import build_index
    from hql.index.stores import after_build

    if workers is not None and workers < 1:
        return EXIT_PROBLEM, messages.index_bad_workers(workers)
    try:
        result = build_index(
            vault, queries=queries, embedder=embedder, built_at=built_at, workers=workers
        )
    except SemanticIndexError as error:
        return EXIT_PROBLEM, error.message
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED, messages.index_interrupted()
    if str(result.path).startswith("qdrant:"):
        location, _, collection = str(result.path).removeprefix("qdrant:").rpartition("#")
        summary = messages.qdrant_build_summary(
            result.embedded,
            result.reused,
            result.removed,
            result.queries,
            collection,
            _shown(vault, Path(location)) if "://" not in location else location,
        )
        return EXIT_OK, "\n".join([*result.notes, summary])
    summary = messages.index_build_summary(
        result.embedded, result.reused, result.removed, result.queries, _shown(vault, result.path)
    )
    try:
        beside = after_build(vault, result.path)
    except SemanticIndexError as error:
        return EXIT_PROBLEM, "\n".join([*result.notes, summary, error.message])
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED, messages.index_interrupted()
    return EXIT_OK, "\n".join([*result.notes, summary, *beside])


def verify_command(vault: VaultLike) -> tuple[int, str]:
    from hql.index.producer import verify_index

    try:
        result = verify_index(vault)
    except SemanticIndexError as error:
        return EXIT_PROBLEM, error.message
    if result.ok:
        ok = messages.index_verify_ok(result.cards, result.queries)
        return EXIT_OK, ok if result.pinned else f"{ok}\n{messages.index_verify_unpinned()}"
    return EXIT_PROBLEM, "\n".join(_verify_lines(result))


def status_command(vault: VaultLike, as_json: bool = False) -> tuple[int, str]:
    """Coverage of the vault by its index (hql.index.coverage)."""
    from hql.index.coverage import coverage, format_coverage

    try:
        found = coverage(vault)
    except SemanticIndexError as error:
        return EXIT_PROBLEM, error.message
    if as_json:
        import json

        return EXIT_OK, json.dumps(found, ensure_ascii=False, indent=2)
    return EXIT_OK, format_coverage(found)


def doctor_command(
    vault: VaultLike, as_json: bool = False, embedder: Embedder | None = None
) -> tuple[int, str]:
    """The store's health, coverage and the model's cross-language check (hql.index.doctor)."""
    from hql.index.doctor import diagnose, format_diagnosis

    report = diagnose(vault, embedder)
    code = EXIT_OK if report["ok"] else EXIT_PROBLEM
    if as_json:
        import json

        return code, json.dumps(report, ensure_ascii=False, indent=2)
    return code, format_diagnosis(report)


def _verify_lines(result: VerifyResult) -> list[str]:
    lines = []
    if result.stale:
        lines.append(messages.index_verify_stale(result.stale))
    if result.missing:
        lines.append(messages.index_verify_missing(result.missing))
    if result.extra:
        lines.append(messages.index_verify_extra(result.extra))
    if result.wrong_length:
        lines.append(messages.index_verify_wrong_length(result.wrong_length))
    if result.unsectioned:
        lines.append(messages.index_verify_unsectioned(result.unsectioned))
    if result.orphan_sections:
        lines.append(messages.index_verify_orphan_sections(result.orphan_sections))
    if result.bad_vectors:
        lines.append(messages.index_verify_bad_vectors(result.bad_vectors))
    if result.damaged_sections:
        lines.append(messages.index_verify_damaged_sections(result.damaged_sections))
    if result.bad_queries:
        lines.append(messages.index_verify_bad_queries(result.bad_queries))
    if result.changed_vectors:
        lines.append(messages.index_verify_vectors_changed(result.changed_vectors))
    if result.manifest_mismatch:
        lines.append(messages.index_verify_manifest_mismatch())
    if result.changed_queries:
        lines.append(messages.index_verify_queries_changed(result.changed_queries))
    if result.changed_vectors or result.manifest_mismatch or result.changed_queries:
        lines.append(messages.index_verify_rebuild())
    return lines


def inspect_command(vault: VaultLike | None, index: str | Path | None = None) -> tuple[int, str]:
    from hql.index.producer import index_path_of, inspect_index
    from hql.index.stores import graph_status

    try:
        if index is None and vault is not None and _store_of(vault) == "qdrant":
            return EXIT_OK, _inspect_qdrant(vault)
        path = Path(index) if index is not None else index_path_of(_require(vault))
        result = inspect_index(path)
    except SemanticIndexError as error:
        return EXIT_PROBLEM, error.message
    graph = None
    if vault is not None and index is None:
        try:
            graph = graph_status(vault, path)
        except SemanticIndexError as error:
            graph = messages.hnsw_status_unusable(error.message)
    return EXIT_OK, format_inspection(result, graph)


def format_inspection(result: InspectResult, graph: str | None = None) -> str:
    model, meta = result.model, result.meta
    rows = [
        ("index", str(result.path)),
        ("schema", str(meta.schema_version)),
        ("vault", meta.vault),
        ("built at", meta.built_at),
        ("built by", meta.tool_version),
        ("model", model.id),
        ("revision", model.revision),
        ("dimensions", str(model.dimensions)),
        ("metric", model.metric + (", normalised" if model.normalized else "")),
        ("cards", str(result.cards)),
        ("sections", _sections_row(result)),
        *([("hnsw graph", graph)] if graph is not None else []),
        ("queries", str(len(result.queries))),
    ]
    width = max(len(label) for label, _ in rows)
    lines = [f"{label.ljust(width)}  {value}" for label, value in rows]
    lines.extend(f"  {query}" for query in result.queries)
    return "\n".join(lines)


def _sections_row(result: InspectResult) -> str:
    if result.sections is None:
        return messages.index_inspect_no_sections()
    return messages.index_inspect_sections(result.sections, result.sectioned_cards)


def add_index_commands(subparsers: Any) -> argparse.ArgumentParser:
    """Add `index build|verify|inspect` to an argparse CLI's subparsers."""
    index = subparsers.add_parser(
        "index", help="build, verify or inspect the vault's semantic index"
    )
    actions = index.add_subparsers(dest="index_command", metavar="ACTION", required=True)
    build = actions.add_parser("build", help="embed changed cards (and queries) into the index")
    build.add_argument(
        "--query",
        action="append",
        default=[],
        metavar="Q",
        help="also store this question's vector (repeatable)",
    )
    build.add_argument(
        "--built-at", metavar="ISO", help="timestamp to record, for byte-identical rebuilds"
    )
    build.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="worker processes for a local model (default: [semantics.embedder] workers, else the cores)",
    )
    actions.add_parser(
        "verify", help="exit 1 when cards are stale, missing, extra or of the wrong length"
    )
    actions.add_parser(
        "status", help="how many cards are embedded, stale or missing, by folder (--format json)"
    )
    actions.add_parser(
        "doctor",
        help="the store's health, coverage and whether the model crosses languages (--format json)",
    )
    inspect = actions.add_parser("inspect", help="print the model, counts and queries of an index")
    inspect.add_argument("--index", metavar="PATH", help="an index file (default: the vault's)")
    return index


def run_index_command(args: argparse.Namespace, vault: VaultLike | None) -> int:
    """Run the parsed `index` command; output on stdout, problems on stderr."""
    action = args.index_command
    if vault is None and action != "inspect":
        print(messages.index_needs_vault(), file=sys.stderr)
        return EXIT_PROBLEM
    if action == "build":
        code, text = build_command(
            _require(vault), args.query, args.built_at, workers=getattr(args, "workers", None)
        )
    elif action == "verify":
        code, text = verify_command(_require(vault))
    elif action == "status":
        code, text = status_command(_require(vault), getattr(args, "format", "text") == "json")
    elif action == "doctor":
        code, text = doctor_command(_require(vault), getattr(args, "format", "text") == "json")
        print(text)  # a report, read whole whatever it found
        return code
    else:
        code, text = inspect_command(vault, getattr(args, "index", None))
    print(text, file=sys.stdout if code == EXIT_OK else sys.stderr)
    return code


def _require(vault: VaultLike | None) -> VaultLike:
    if vault is None:
        raise SemanticIndexError(messages.index_needs_vault())
    return vault


def _shown(vault: VaultLike, path: Path) -> str:
    """The index path as the user configured it: relative to the vault when inside it."""
    try:
        return path.relative_to(Path(vault.root)).as_posix()
    except ValueError:
        return str(path)


# --- the Qdrant store ------------------------------------------------------------------


def _store_of(vault: VaultLike) -> str:
    from hql.index.config import load_semantics_config
    from hql.index.reader import raw_config

    return load_semantics_config(raw_config(vault)).store


def _inspect_qdrant(vault: VaultLike) -> str:
    from hql.index.config import load_semantics_config
    from hql.index.reader import raw_config
    from hql.index.stores.qdrant import QdrantStore

    store = QdrantStore.for_vault(vault, load_semantics_config(raw_config(vault)))
    model = store.model
    counts = store.section_counts()
    queries = store.queries()
    where = store.where if "://" in store.where else _shown(vault, Path(store.where))
    rows = [
        ("store", "qdrant (local mode)" if store.local else "qdrant (server)"),
        ("location", where),
        ("collection", store.collection),
        ("vault", store.vault_label),
        ("built at", store.built_at),
        ("built by", store.tool_version),
        ("model", model.id),
        ("revision", model.revision),
        ("dimensions", str(model.dimensions)),
        ("metric", "cosine, normalised (dot product of unit vectors)"),
        ("cards", str(len(counts))),
        ("points", messages.qdrant_inspect_points(sum(counts.values()))),
        ("queries", str(len(queries))),
    ]
    width = max(len(label) for label, _ in rows)
    lines = [f"{label.ljust(width)}  {value}" for label, value in rows]
    lines.extend(f"  {query}" for query in queries)
    return "\n".join(lines)
