"""`hql memory suggest`: cards the retrieval log shows retrieved together are proposed as relation
cards; nothing is written without --write and a yes, and a written proposal is a relation card
the next suggestion leaves out."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import hql
from hql.context.log import read_entries
from hql.context.read_path import assemble

SAMPLE = Path(__file__).parent.parent / "vaults" / "web-auth"
PROMPTS = (
    "how does PKCE protect the OAuth authorization code?",
    "OAuth code flow with PKCE for a mobile app",
    "why use PKCE with oauth",
    "refresh tokens and JWT expiry",
    "JWT signature and bearer tokens",
    "csrf and cors",
)


def _hql(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hql", "--vault", str(root), *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def _logged_vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".hql"))
    with (root / "hql.toml").open("a") as toml:
        toml.write("\n[log]\nretrieval = true\n")
    vault = hql.Vault.open(root)
    for prompt in PROMPTS:
        assemble(vault, prompt)
    return root


def test_pairs_retrieved_together_are_proposed_and_written_only_when_asked(
    tmp_path: Path,
) -> None:
    root = _logged_vault(tmp_path)
    vault = hql.Vault.open(root)
    entries = read_entries(vault)
    assert len(entries) == len(PROMPTS)
    together = Counter(
        pair for entry in entries for pair in itertools.combinations(sorted(entry["selected"]), 2)
    )
    edges = {card.name for card in vault.cards if card.kind == "RelationCard"}
    expected = {
        pair: count for pair, count in together.items() if count >= 2 and not (set(pair) & edges)
    }
    assert expected, "the prompts selected no pair twice: the test proves nothing"
    files_before = sorted(path.name for path in root.rglob("*.md"))

    shown = _hql(root, "--format", "json", "memory", "suggest", "--min", "2")
    assert shown.returncode == 0, shown.stderr
    answer = json.loads(shown.stdout)
    proposed = {(p["source"], p["target"]): p["together"] for p in answer["proposals"]}
    assert proposed == expected
    assert answer["blocks"] == len(PROMPTS) and answer["written"] == []
    assert answer["left_out"]["relation_cards"] == sum(
        1 for pair, count in together.items() if count >= 2 and set(pair) & edges
    )
    text = _hql(root, "memory", "suggest", "--min", "2")
    assert "oauth + pkce: together 3" in text.stdout and "nothing written" in text.stdout

    unasked = _hql(root, "memory", "suggest", "--min", "2", "--write")  # no terminal, no --yes
    assert unasked.returncode == 1 and "--yes" in unasked.stderr
    dry = _hql(root, "memory", "suggest", "--min", "2", "--write", "--dry-run")
    assert dry.returncode == 0 and "+  type: Relation" in dry.stdout
    assert sorted(path.name for path in root.rglob("*.md")) == files_before

    written = _hql(root, "--format", "json", "memory", "suggest", "--min", "2", "--write", "--yes")
    assert written.returncode == 0, written.stderr
    paths = [item["path"] for item in json.loads(written.stdout)["written"]]
    assert len(paths) == len(expected)
    after = hql.Vault.open(root)
    for (source, target), path in zip(proposed, paths, strict=True):
        card = next(c for c in after.cards if c.relpath == path)
        assert card.kind == "RelationCard"
        relation = card.metadata["knowledge"]["relation"]
        assert (relation["source"], relation["target"]) == (source, target)

    again = json.loads(_hql(root, "--format", "json", "memory", "suggest", "--min", "2").stdout)
    assert again["proposals"] == [] and again["left_out"]["related"] == len(expected)


def test_without_a_log_there_is_nothing_to_propose(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".hql"))
    done = _hql(root, "memory", "suggest")
    assert done.returncode == 0 and "[log] retrieval = true" in done.stdout
    bad = _hql(root, "memory", "suggest", "--min", "0")
    assert bad.returncode != 0 and "--min needs a number of at least 1" in bad.stderr
    assert "Traceback" not in bad.stderr
