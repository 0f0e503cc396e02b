"""One writer process of tests/test_notes_concurrent.py: edits, appends and sets properties on
the vault's notes through `hql.notes`, each change with the digest it read, and records
every outcome as a JSON line.

    python tests/notes_worker.py ROOT WORKER CHANGES SEED OUT [START]

With START, a worker that has opened the vault (and read the first note) says so in
START.WORKER and waits for the file START itself, so that every writer's changes fall in the
same span of time and the first changes of all meet on one note.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

import hql.notes
from hql.notes.writer import NoteRefused


def main() -> None:
    root, worker, changes, seed, out = sys.argv[1:6]
    notes = hql.notes.open(root)
    names = [f"shared {number:02d}" for number in range(20)]
    # Every writer reads the first note before any writes: of their first changes, one is
    # accepted and the others are stale, however the machine's load spaces the rest out.
    first = notes.read(names[0])
    if len(sys.argv) > 6:
        _wait_for_the_others(Path(sys.argv[6]), worker)
    pick = random.Random(int(seed))
    with open(out, "w", encoding="utf-8") as log:
        for number in range(int(changes)):
            name = pick.choice(names)
            token = f"w{worker}n{number}"
            kind = pick.choice(("append", "set", "edit"))
            if number == 0:
                name, kind, state = names[0], "append", first
            else:
                state = notes.read(name)
            time.sleep(pick.random() * 0.03)  # let the others in between read and write
            try:
                if kind == "append":
                    notes.append(name, f"appended {token}", base_digest=state.digest)
                elif kind == "set":
                    notes.set(name, f"p_{token}", number, base_digest=state.digest)
                else:
                    notes.edit(
                        name,
                        f"edited {token} <!-- slot -->",
                        old_text="<!-- slot -->",
                        base_digest=state.digest,
                    )
                outcome = "accepted"
            except NoteRefused as refusal:
                outcome = refusal.reason
            log.write(json.dumps({"note": name, "kind": kind, "token": token, "outcome": outcome}))
            log.write("\n")


def _wait_for_the_others(start: Path, worker: str) -> None:
    start.with_name(f"{start.name}.{worker}").touch()
    deadline = time.monotonic() + 300
    while not start.exists() and time.monotonic() < deadline:
        time.sleep(0.01)


if __name__ == "__main__":
    main()
