"""`hql skill [DIR]`: write the agent skill folder that teaches an agent to use HQL's MCP server.

The folder is the Agent Skills layout (`SKILL.md` with `name` and
`description` front matter, plus `examples/`) that Claude Code and the other
harnesses which read skills load from their skills folder. Its files ship in
the package (`hql/mcp/agent-skill/`, a folder of files, not a package), so the skill
says what this HQL does.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from hql import messages
from hql.api import HostError

DEFAULT_FOLDER = ".claude/skills/hql"


def skill_files() -> dict[str, str]:
    """The skill's files by path inside the folder, e.g. `examples/ask.md`."""
    root = resources.files("hql.mcp") / "agent-skill"
    found: dict[str, str] = {}
    pending = [(root, "")]
    while pending:
        folder, prefix = pending.pop()
        for entry in folder.iterdir():
            if entry.is_dir():
                pending.append((entry, f"{prefix}{entry.name}/"))
            elif entry.name.endswith(".md"):
                found[prefix + entry.name] = entry.read_text(encoding="utf-8")
    return dict(sorted(found.items()))


def write_skill(folder: str | Path, force: bool = False) -> list[Path]:
    """Write the skill into `folder`; an existing file is refused unless `force`."""
    target = Path(folder)
    files = skill_files()
    if not force:
        existing = [target / name for name in files if (target / name).exists()]
        if existing:
            raise HostError(messages.skill_exists(str(existing[0])))
    written = []
    for name, text in files.items():
        path = target / name
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        except OSError as error:
            raise HostError(messages.cannot_write(str(path), error)) from None
        written.append(path)
    return written


def run(folder: str | None, force: bool) -> int:
    written = write_skill(folder or DEFAULT_FOLDER, force)
    print(messages.skill_written(str(Path(folder or DEFAULT_FOLDER)), len(written)))
    return 0
