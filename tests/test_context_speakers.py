"""Prompts about one speaker of a transcript: what someone else said is no evidence for them."""

from __future__ import annotations

import math
from pathlib import Path

import hql
from hql.context.read_path import assemble
from hql.context.speakers import about_someone_else, names_in, raw_turns, read_transcript

# Two sessions of one conversation: Ann ran the charity race; Bob grows tomatoes.
RACE = """---
date: 8 May 2023
speakers: [Ann, Bob]
---
# Session 1

D1:1 Ann: Hi Bob! I ran a charity race for mental health last Saturday.
D1:2 Bob: That's great, Ann! How did the charity race go?
D1:3 Ann: It was tiring but I realised self-care matters more than I thought.
D1:4 Bob: Good for you. I spent the weekend in my garden.
D1:5 Ann: Lovely, what are you growing this year?
D1:6 Bob: Mostly tomatoes and some basil on the balcony.
"""

GARDEN = """---
date: 20 May 2023
speakers: [Ann, Bob]
---
# Session 2

D2:1 Bob: The tomatoes are finally red, I picked the first ones today.
D2:2 Ann: Congratulations! Did the basil survive the cold week?
D2:3 Bob: Barely, I moved it indoors at night.
D2:4 Ann: I have been painting sunsets again, it calms me down.
D2:5 Bob: Send me a photo of the sunset painting!
"""

# A plain note that shares the prompt's words: not a transcript, so the rule leaves it alone.
RACES = """# Charity races in town

The town's charity race runs every May; runners often say self-care matters.
"""


def _vault(tmp_path: Path, *, plain: bool = False) -> hql.Vault:
    (tmp_path / "session-1.md").write_text(RACE, encoding="utf-8")
    (tmp_path / "session-2.md").write_text(GARDEN, encoding="utf-8")
    if plain:
        (tmp_path / "races.md").write_text(RACES, encoding="utf-8")
    return hql.Vault.open(tmp_path)


def _names(block: object) -> list[str]:
    return [item.name for item in block.items]  # type: ignore[attr-defined]


def test_a_prompt_about_the_speaker_who_said_it_gets_the_session(tmp_path: Path) -> None:
    block = assemble(_vault(tmp_path), "What did Ann realise after her charity race?")
    assert "session-1" in _names(block)
    assert block.abstention is None


def test_a_prompt_about_the_other_speaker_gets_an_empty_block_that_says_why(
    tmp_path: Path,
) -> None:
    block = assemble(_vault(tmp_path), "What did Bob realise after his charity race?")
    assert block.items == ()
    assert block.rendered == ""
    assert block.abstention is not None
    assert "Bob" in block.abstention and "said by Ann" in block.abstention
    rejected = {entry["card"]: entry["reason"] for entry in block.diagnostics["rejected"]}
    assert "said by Ann" in rejected["session-1"]
    assert block.diagnostics["threshold"]["someone_else"] == {"margin": 2.0}


def test_the_rule_leaves_notes_that_are_not_transcripts(tmp_path: Path) -> None:
    block = assemble(_vault(tmp_path, plain=True), "What did Bob realise after his charity race?")
    assert _names(block) == ["races"]


def test_an_infinite_margin_turns_the_rule_off(tmp_path: Path) -> None:
    vault = _vault(tmp_path)
    block = assemble(vault, "What did Bob realise after his charity race?", speaker_margin=math.inf)
    assert "session-1" in _names(block)


def test_a_prompt_naming_both_speakers_is_not_judged(tmp_path: Path) -> None:
    block = assemble(_vault(tmp_path), "What did Bob tell Ann about the charity race?")
    assert "session-1" in _names(block)


def test_a_question_put_to_a_speaker_counts_for_them(tmp_path: Path) -> None:
    # Ann asks what Bob grows; the question is about Bob, as is his answer.
    block = assemble(_vault(tmp_path), "What is Bob growing this year?")
    assert "session-1" in _names(block)
    turns = read_transcript(RACE.split("---\n", 2)[2], str.split)
    assert turns is not None
    about_bob = [turn.terms for turn in turns.turns if turn.speaker == "Bob"]
    assert any("growing" in terms for terms in about_bob)
    about_ann = [turn.terms for turn in turns.turns if turn.speaker == "Ann"]
    assert not any("growing" in terms for terms in about_ann)


def test_what_counts_as_a_transcript() -> None:
    assert raw_turns(RACE) is not None
    bullets = "\n".join(
        f"- **{who}**: line {i}" for i, who in enumerate(["Ann", "Bob", "Ann", "Bob"])
    )
    assert raw_turns(bullets) == [
        ("Ann", "line 0"),
        ("Bob", "line 1"),
        ("Ann", "line 2"),
        ("Bob", "line 3"),
    ]
    times = "\n".join(f"[10:3{i}] {who}: hello" for i, who in enumerate(["Ann", "Bob"] * 2))
    assert raw_turns(times) is not None
    # A note with a few labelled lines is not a conversation.
    labelled = "Note: check the logs.\nTODO: fix the build.\nThe build broke twice.\nIt works."
    assert raw_turns(labelled) is None
    # One speaker only is a monologue, not a conversation.
    assert raw_turns("\n".join(["Ann: one", "Ann: two", "Ann: three", "Ann: four"])) is None
    # Turns must be at least half of the lines.
    prose = "\n".join(["Ann: one", "Bob: two", "Ann: three", "Bob: four"] + ["prose"] * 5)
    assert raw_turns(prose) is None


def test_names_are_read_as_written() -> None:
    speakers = frozenset({"Ann", "Bob", "Mary Jane"})
    assert names_in("What is Ann's plan?", speakers) == {"Ann"}
    assert names_in("what did ann say?", speakers) == set()
    assert names_in("Annual plans of Bobby", speakers) == set()
    assert names_in("Where did Mary Jane go?", speakers) == {"Mary Jane"}
    assert names_in("王伟说了什么", frozenset({"王伟", "李娜"})) == {"王伟"}


def test_the_verdict_weighs_each_side_best_turn() -> None:
    from hql.context.speakers import Read

    transcript = read_transcript(RACE.split("---\n", 2)[2], lambda text: text.lower().split())
    assert transcript is not None
    read = [Read(transcript, lambda term: 1.0, frozenset({"race", "charity"}), str.split)]
    # Only Ann's own turn says "charity race" (Bob's question about it is put to Ann).
    assert about_someone_else("Bob charity race", read) is not None
    assert about_someone_else("Ann charity race", read) is None
    # No speaker named: nothing to judge.
    assert about_someone_else("charity race", read) is None
