"""What one keystroke costs in the REPL: highlighting, the Enter rule and completion.

Prints each cost per call and as a ratio to the anchor, tokenizing the same
text with hql.syntax.tokens.tokenize, measured in the same run.

    .venv/bin/python bench/repl_keystroke.py [VAULT]
"""

from __future__ import annotations

import sys
import timeit
from pathlib import Path

from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from hql.api import Session, open_vault
from hql.repl.completer import HqlCompleter
from hql.repl.continuation import is_complete
from hql.repl.lexer import HqlLexer
from hql.syntax.tokens import tokenize

PROGRAM = (
    'hits = cards | lexical("token theft") | take(5)\nhits | expand(depth = 1) |\n  filter(c => c.'
)


def per_call(function: object, number: int) -> float:
    return min(timeit.repeat(function, number=number, repeat=5)) / number  # type: ignore[arg-type]


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("vaults/web-auth")
    session = Session(open_vault(root))
    completer = HqlCompleter(session)
    document = Document(PROGRAM)
    lexer = HqlLexer()
    anchor = per_call(lambda: tokenize(PROGRAM.replace("c.", "c.name)")), 2000)
    costs = {
        "highlight (all lines)": per_call(
            lambda: [lexer.lex_document(document)(i) for i in range(3)], 500
        ),
        "enter rule": per_call(lambda: is_complete(PROGRAM), 2000),
        "completion after `c.`": per_call(
            lambda: list(
                completer.get_completions(document, CompleteEvent(completion_requested=True))
            ),
            200,
        ),
        "completion after `| ex`": per_call(
            lambda: list(completer.get_completions(Document("cards | ex"), CompleteEvent())), 500
        ),
    }
    print(f"anchor: tokenize {len(PROGRAM)} characters  {anchor * 1e6:8.1f} µs")
    for name, cost in costs.items():
        print(f"{name:26s} {cost * 1e6:8.1f} µs  {cost / anchor:6.1f}x anchor")


if __name__ == "__main__":
    main()
