"""Where the REPL keeps its history: $XDG_STATE_HOME/hql/history, else ~/.local/state/hql/history."""

from __future__ import annotations

import os
from pathlib import Path

from prompt_toolkit.history import FileHistory, History, InMemoryHistory

from hql import messages


def history_path(environ: dict[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    state = env.get("XDG_STATE_HOME") or ""
    base = Path(state) if os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "hql" / "history"


def open_history(path: Path | None = None) -> tuple[History, str | None]:
    """A history kept in `path` (created on demand); in memory, with a warning, when it cannot be."""
    path = path or history_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as error:
        reason = error.strerror or str(error)
        return InMemoryHistory(), messages.repl_history_unwritable(str(path), reason)
    return FileHistory(str(path)), None
