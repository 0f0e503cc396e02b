"""Who said it: the turns of a note that records a conversation, and prompts about a speaker.

A transcript note holds one turn per line, `Name: text`, perhaps after a turn id or a time
(`D3:7 Caroline: …`, `[10:32] Bob: …`, `- **Ann**: …`). What a person did, felt or plans is
in what they said, or in what they were asked (a question put to them is about them: it
counts for whoever speaks next). A prompt that names one of the speakers ("What did Caroline
realise after her race?") is answered by that person's turns. When its other words are
matched far better by someone else's turn than by any of the person's own, the memory holds
it about someone else (the race was the other speaker's), and the transcripts are no
evidence for the prompt.

A note is read as a transcript only when at least `MIN_TURNS` of its lines are turns, by at
least two speakers, and turns are at least half of its body's lines (headings and blank
lines aside): a note with a `Note:` line or two is not one.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

from hql.record import record

MIN_TURNS = 4
# The best turn of someone else must match the prompt this many times better than the
# person's own best turn. Chosen on the even-numbered LoCoMo dev questions only
# (bench/context.py --calibrate prints the sweep); the odd ones are reported.
SOMEONE_ELSE_MARGIN = 2.0

_TURN = re.compile(
    r"^\s*(?:[-*+]\s+)?"  # a list marker
    r"(?:\[?[^\s\]]*\d[^\s\]]*\]?\s+)?"  # a turn id or a time: D3:7, [10:32], 00:01:02
    r"\**(?P<name>[^\W\d_][\w'’.-]*(?: [^\W\d_][\w'’.-]*){0,2})\**:\**\s+(?P<text>\S.*)$"
)
_SENTENCE = re.compile(r"[^.!?。！？]*[.!?。！？]+|[^.!?。！？]+$")
_QUESTION_MARKS = ("?", "？")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


@record
class Turn:
    """What one turn says about `speaker`: its told terms, or a question put to them."""

    speaker: str
    terms: frozenset[str]


@record
class Transcript:
    speakers: frozenset[str]
    turns: tuple[Turn, ...]


@record
class SomeoneElse:
    """Why a prompt about `person` is not answered by the transcripts: `speaker`'s best turn
    matches its words with weight `theirs`, the person's best with `own`."""

    person: str
    speaker: str
    theirs: float
    own: float


def raw_turns(body: str) -> list[tuple[str, str]] | None:
    """(speaker, text) per turn of a transcript body; None when the body is not one."""
    turns = []
    lines = 0
    for line in body.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        lines += 1
        match = _TURN.match(line)
        if match is not None:
            turns.append((match.group("name"), match.group("text")))
    speakers = {speaker for speaker, _ in turns}
    if len(turns) < MIN_TURNS or len(speakers) < 2 or 2 * len(turns) < lines:
        return None
    return turns


def read_transcript(body: str, terms: Callable[[str], Sequence[str]]) -> Transcript | None:
    """The transcript in a body, each turn's words read by `terms` (an analyser's)."""
    found = raw_turns(body)
    if found is None:
        return None
    turns = []
    for at, (speaker, text) in enumerate(found):
        told: list[str] = []
        asked: list[str] = []
        for sentence in _SENTENCE.findall(text):
            (asked if sentence.rstrip().endswith(_QUESTION_MARKS) else told).append(sentence)
        turns.append(Turn(speaker, frozenset(terms(" ".join(told)))))
        addressee = next((s for s, _ in found[at + 1 :] if s != speaker), None)
        if asked and addressee is not None:
            turns.append(Turn(addressee, frozenset(terms(" ".join(asked)))))
    return Transcript(frozenset(s for s, _ in found), tuple(turns))


# A card's transcript by its digest and the analyser that read it: the same cards come back
# for prompt after prompt, and their text changes only with their digest.
_BY_DIGEST: dict[tuple[str, str], Transcript | None] = {}
_BY_DIGEST_LIMIT = 50_000
_lock = threading.Lock()


def transcript_of(card: Any, analyzer: Any) -> Transcript | None:
    key = (card.digest, analyzer.fingerprint)
    if key in _BY_DIGEST:
        return _BY_DIGEST[key]
    found = read_transcript(card.body, analyzer.terms)
    with _lock:
        if len(_BY_DIGEST) >= _BY_DIGEST_LIMIT:
            _BY_DIGEST.clear()  # a bound, not a policy: refilled by the next prompts
        _BY_DIGEST[key] = found
    return found


def names_in(prompt: str, speakers: set[str] | frozenset[str]) -> set[str]:
    """The speakers a prompt names, as written (case and whole word: `Caroline's` names
    Caroline; `caroline` or `Carolines` does not)."""
    named = set()
    for speaker in speakers:
        if _CJK.search(speaker):
            found = speaker in prompt
        else:
            found = re.search(rf"(?<!\w){re.escape(speaker)}(?!\w)", prompt) is not None
        if found:
            named.add(speaker)
    return named


@record
class Read:
    """A candidate transcript as the rule reads it, with the weight of a term in its source
    (its library's idf) and the prompt's terms as its analyser reads them."""

    transcript: Transcript
    weight: Callable[[str], float]
    prompt_terms: frozenset[str]
    name_terms: Callable[[str], Sequence[str]]


def about_someone_else(
    prompt: str, read: Sequence[Read], margin: float = SOMEONE_ELSE_MARGIN
) -> SomeoneElse | None:
    """The verdict on a prompt that names exactly one speaker of the candidate transcripts:
    someone else's best turn matches its other words more than `margin` times better than
    the person's own best (None: the rule does not apply, or the person's turns hold up)."""
    speakers = frozenset().union(*(r.transcript.speakers for r in read)) if read else frozenset()
    named = names_in(prompt, speakers)
    if len(named) != 1:
        return None
    person = next(iter(named))
    own, theirs, speaker = 0.0, 0.0, ""
    for candidate in read:
        if person not in candidate.transcript.speakers:
            continue
        content = candidate.prompt_terms - set(candidate.name_terms(person))
        for turn in candidate.transcript.turns:
            weight = sum(candidate.weight(term) for term in content & turn.terms)
            if turn.speaker == person:
                own = max(own, weight)
            elif weight > theirs:
                theirs, speaker = weight, turn.speaker
    # (with an infinite margin and no own turn, inf * 0 is nan: never more, the rule is off)
    if not (theirs > 0.0 and theirs > margin * own):
        return None
    return SomeoneElse(person, speaker, theirs, own)


__all__ = ["SOMEONE_ELSE_MARGIN", "SomeoneElse", "about_someone_else", "transcript_of"]
