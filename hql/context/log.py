"""The retrieval log (`[log] retrieval = true`): what each context block chose, never the prompt.

Kept in `.hql/retrieval-log.sqlite`, one row per block: when, the prompt's SHA-256
and length, labels derived from it (its language, how many segments, commands,
paths and symbols it holds), the budget and the tokens used, the selected cards,
every rejected card with its reason, and why the block was empty if it was.
Nothing that persists holds the prompt's text: a log may be shared to find out
why a card was not recalled without sharing what was asked. `hql log` reads it.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

LOG_FILE = "retrieval-log.sqlite"
SCHEMA = """CREATE TABLE IF NOT EXISTS retrieval (
    id INTEGER PRIMARY KEY,
    at TEXT NOT NULL,
    prompt_sha256 TEXT NOT NULL,
    prompt_chars INTEGER NOT NULL,
    labels TEXT NOT NULL,
    budget INTEGER NOT NULL,
    tokens INTEGER NOT NULL,
    selected TEXT NOT NULL,
    rejected TEXT NOT NULL,
    abstention TEXT
)"""


class LogError(Exception):
    """The log cannot be written or read; the message says why."""


def enabled(vault: Any) -> bool:
    return vault.config.section("log").get("retrieval") is True


def log_path(vault: Any) -> Path:
    return Path(vault.state_dir) / LOG_FILE


def prompt_digest(prompt: str) -> str:
    return "sha256:" + hashlib.sha256(prompt.encode("utf-8")).hexdigest()


def labels_of(envelope: Any) -> dict[str, Any]:
    """What the log keeps of a prompt's reading (its envelope as JSON): its language and how
    many segments, commands, paths and symbols it holds; never a word of it."""
    if not isinstance(envelope, dict):
        return {}
    return {
        "language": envelope.get("language"),
        **{
            key: len(envelope.get(key) or ())
            for key in ("segments", "commands", "paths", "symbols", "constraints")
        },
    }


def record_block(vault: Any, prompt: str, block: Any, labels: dict[str, Any]) -> None:
    """Append one block to the vault's log (LogError when it cannot be written)."""
    from hql import files, messages

    state_dir = Path(vault.state_dir)
    if not files.state_dir_contained(state_dir):
        raise LogError(messages.log_outside_vault(str(state_dir)))
    diagnostics = block.diagnostics
    row = (
        datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        prompt_digest(prompt),
        len(prompt),
        json.dumps(labels, sort_keys=True),
        block.budget,
        block.tokens,
        json.dumps([item["card"] for item in diagnostics.get("selected", [])]),
        json.dumps(
            [
                {"card": item["card"], "library": item.get("library"), "reason": item["reason"]}
                for item in diagnostics.get("rejected", [])
            ],
            ensure_ascii=False,
        ),
        block.abstention,
    )
    try:
        state_dir.mkdir(exist_ok=True)
        connection = sqlite3.connect(log_path(vault), timeout=10)
        try:
            with connection:
                connection.execute(SCHEMA)
                connection.execute(
                    "INSERT INTO retrieval (at, prompt_sha256, prompt_chars, labels, budget, "
                    "tokens, selected, rejected, abstention) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    row,
                )
        finally:
            connection.close()
    except (sqlite3.Error, OSError) as error:
        raise LogError(messages.log_unwritable(str(log_path(vault)), str(error))) from None


def read_entries(vault: Any, limit: int | None = None) -> list[dict[str, Any]]:
    """The log's rows, newest first (every row, or the last `limit`); [] without a log."""
    from hql import messages

    path = log_path(vault)
    if not path.exists():
        return []
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
        try:
            query = (
                "SELECT id, at, prompt_sha256, prompt_chars, labels, budget, tokens, selected, "
                "rejected, abstention FROM retrieval ORDER BY id DESC"
            )
            rows = connection.execute(
                query + (" LIMIT ?" if limit else ""), (limit,) if limit else ()
            )
            found = [_entry(row) for row in rows]
        finally:
            connection.close()
    except (sqlite3.Error, ValueError) as error:
        raise LogError(messages.log_unreadable(str(path), str(error))) from None
    return found


def _entry(row: tuple[Any, ...]) -> dict[str, Any]:
    number, at, digest, chars, labels, budget, tokens, selected, rejected, abstention = row
    return {
        "id": number,
        "at": at,
        "prompt_sha256": digest,
        "prompt_chars": chars,
        "labels": json.loads(labels),
        "budget": budget,
        "tokens": tokens,
        "selected": json.loads(selected),
        "rejected": json.loads(rejected),
        "abstention": abstention,
    }
