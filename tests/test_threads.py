"""One loaded vault serves several threads at once (product §5)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import hql

SAMPLE = Path(__file__).resolve().parents[1] / "vaults" / "web-auth"
PROGRAMS = [
    'cards | filter(c => c.metadata.status == "todo") | count',
    'import lexical\ncards | lexical("bearer token") | take(3)',
    'import bm25\ncards | bm25("cookie sent with cross-site requests") | relevant',
    "cards | take(3) | expand(depth = 2) | graph",
    "[[oauth]] | downlinks | map(e => e.source)",
]


def test_threads_share_one_vault_and_agree_with_a_single_thread() -> None:
    vault = hql.open_vault(SAMPLE, use_cache=False)
    expected = [hql.run(program, vault=vault).text() for program in PROGRAMS]
    work = PROGRAMS * 8
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda program: hql.run(program, vault=vault), work))
    assert all(not answer.failed for answer in answers)
    assert [answer.text() for answer in answers] == expected * 8


def test_threads_racing_on_a_fresh_vault_get_one_answer() -> None:
    vault = hql.open_vault(SAMPLE, use_cache=False)
    program = 'import bm25\ncards | bm25("token") | take(2)'
    with ThreadPoolExecutor(max_workers=6) as pool:
        answers = list(pool.map(lambda _: hql.run(program, vault=vault).text(), range(12)))
    alone = hql.run(program, vault=hql.open_vault(SAMPLE, use_cache=False)).text()
    assert answers == [alone] * 12
    assert alone.count("(") == 2  # two hits, each `name (score)`
