"""How fresh the MCP server's vault is: a change made through the server is seen by the
next call, and a change made on disk by every call that starts a bounded time after it,
however long the stat walk of a large vault takes (docs/agents.md, "Freshness")."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from kept_stat import rewrite_keeping_stat

from hql.mcp import notes as note_tools
from hql.mcp.service import MAX_WALK_WAIT, VaultService

SAMPLE = Path(__file__).resolve().parents[1] / "vaults" / "web-auth"
COUNT = "cards | count"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".hql"))
    return root


class _SlowWalks:
    """A clock the test moves, and stat walks that each take `walk` seconds of it."""

    def __init__(self, service: VaultService, walk: float) -> None:
        self.now = 1000.0
        self.walks = 0
        live = service.live
        walked = live._stat_walk

        def slow_walk() -> Any:
            self.walks += 1
            self.now += walk
            return walked()

        live.clock = lambda: self.now
        live._stat_walk = slow_walk  # type: ignore[method-assign]


def test_a_change_on_disk_is_seen_within_the_bound_however_slow_the_walk(vault: Path) -> None:
    service = VaultService(vault)
    clock = _SlowWalks(service, walk=60.0)  # a huge vault: 10 walks' time would be 10 minutes
    assert service.query(COUNT)["value"] == 18
    walked_at = clock.now
    (vault / "new.md").write_text("# A new card\n", encoding="utf-8")
    clock.now = walked_at + MAX_WALK_WAIT / 2
    assert service.query(COUNT)["value"] == 18  # within the bound: the last walk stands
    assert clock.walks == 1
    clock.now = walked_at + MAX_WALK_WAIT
    assert service.query(COUNT)["value"] == 19  # the bound passed: walked and seen
    assert clock.walks == 2


def test_a_cheap_walk_still_waits_only_ten_times_its_cost(vault: Path) -> None:
    service = VaultService(vault)
    clock = _SlowWalks(service, walk=0.01)
    service.query(COUNT)
    walked_at = clock.now
    (vault / "new.md").write_text("# A new card\n", encoding="utf-8")
    clock.now = walked_at + 0.1
    assert service.query(COUNT)["value"] == 19
    assert clock.walks == 2


def test_a_write_through_the_server_is_seen_by_the_next_call(vault: Path) -> None:
    service = VaultService(vault, allow_write=True)
    clock = _SlowWalks(service, walk=60.0)
    before = service.card("oauth")
    answer = note_tools.append_note(service, "oauth", "Written through the server: zebra.")
    assert answer["written"] is True, answer
    # no time passed: only the write itself makes the next call walk
    assert "zebra" in service.card_text("oauth")
    assert service.card("oauth")["title"] == before["title"]
    found = service.query('cards | filter(c => contains(c.body, "zebra")) | map(c => c.name)')
    assert found["value"] == ["oauth"]
    assert clock.walks == 2


def test_an_edit_that_keeps_size_mtime_and_inode_is_seen(vault: Path) -> None:
    """`cp -p` or `tar -x` over a card: the stat walk compares change times too."""
    service = VaultService(vault)
    clock = _SlowWalks(service, walk=0.01)
    program = "cards | filter(c => contains(c.body, $w)) | map(c => c.name)"
    assert service.query(program, params={"w": "framework"})["value"] == ["oauth"]
    rewrite_keeping_stat(vault / "concepts" / "oauth.md", b"framework", b"frameWORK")
    clock.now += 1.0  # past the wait after the last walk
    assert service.query(program, params={"w": "frameWORK"})["value"] == ["oauth"]
    assert service.query(program, params={"w": "framework"})["value"] == []
    assert clock.walks == 2 and service.live.loads == 2
