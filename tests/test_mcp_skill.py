"""`hql skill`: the agent skill folder, and every example in it run against the sample vault."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

from hql.mcp.service import VaultService
from hql.mcp.skill import skill_files

SAMPLE = Path(__file__).resolve().parents[1] / "vaults" / "web-auth"


def test_the_command_writes_the_skill_folder_and_will_not_overwrite_it_unasked(
    tmp_path: Path,
) -> None:
    folder = tmp_path / ".claude" / "skills" / "hql"
    command = [sys.executable, "-m", "hql", "skill", str(folder)]
    first = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0 and "4 files" in first.stdout
    written = sorted(str(path.relative_to(folder)) for path in folder.rglob("*.md"))
    assert written == [
        "SKILL.md",
        "examples/abstain.md",
        "examples/ask.md",
        "examples/programs.md",
    ]
    (folder / "SKILL.md").write_text("mine", encoding="utf-8")
    again = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert again.returncode == 1 and "exists already" in again.stderr
    assert (folder / "SKILL.md").read_text(encoding="utf-8") == "mine"
    forced = subprocess.run([*command, "--force"], capture_output=True, text=True, timeout=60)
    assert forced.returncode == 0 and (folder / "SKILL.md").read_text().startswith("---\nname: hql")


def test_the_skill_names_itself_and_every_tool_the_server_offers() -> None:
    text = skill_files()["SKILL.md"]
    front = yaml.safe_load(text.split("---\n")[1])
    assert front["name"] == "hql" and len(front["description"]) > 100
    for tool in ("vaults", "context", "search", "card", "query", "check", "explain", "render"):
        assert f"`{tool}`" in text


def test_every_example_program_of_the_skill_runs_on_the_sample_vault() -> None:
    service = VaultService(SAMPLE)
    blocks = [
        block
        for text in skill_files().values()
        for block in re.findall(r"```hql\n(.*?)```", text, re.S)
    ]
    assert len(blocks) >= 6
    for program in blocks:
        params = {"who": "ada"} if "$who" in program else None
        answer = service.query(program.strip(), params)
        assert answer["ok"], (program, answer["reports"])
        assert answer["value"] not in (None, [], 0), program
    ask = skill_files()["examples/ask.md"]
    question = json.loads(re.search(r"```json\n(.*?)```", ask, re.S).group(1))  # type: ignore[union-attr]
    hits = [hit["card"] for hit in service.search(**question)["hits"]]
    assert hits == ["csrf", "session-cookies", "same-site-mitigates-csrf"]
    abstain = skill_files()["examples/abstain.md"]
    question = json.loads(re.search(r"```json\n(.*?)```", abstain, re.S).group(1))  # type: ignore[union-attr]
    assert service.search(**question)["hits"] == []
