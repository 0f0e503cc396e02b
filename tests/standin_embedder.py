"""A stand-in OpenAI-compatible embeddings server for the tests, on 127.0.0.1.

Vectors are deterministic: a hashed bag of lowercase words, L2-normalised, so
texts sharing words are close. An empty text gets a zero vector (to test the
refusal). Rows come back in reverse order, so clients must reorder by `index`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIMENSIONS = 64
WORD = re.compile(r"\w+")


def standin_vector(text: str, dimensions: int = DIMENSIONS) -> list[float]:
    counts = [0.0] * dimensions
    for word in WORD.findall(text.lower()):
        bucket = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "little") % dimensions
        counts[bucket] += 1.0
    norm = math.sqrt(sum(c * c for c in counts))
    # Unnormalised on purpose (scaled by 3): the client must re-normalise.
    return [3.0 * c / norm for c in counts] if norm else counts


@dataclass
class StandinState:
    requests: list[dict[str, object]] = field(default_factory=list)
    authorizations: list[str | None] = field(default_factory=list)
    fail_status: int | None = None
    garbage: bool = False
    dimensions: int = DIMENSIONS
    later_dimensions: int | None = None  # width of every answer after the first

    @property
    def texts_embedded(self) -> list[str]:
        return [text for request in self.requests for text in request["input"]]  # type: ignore[attr-defined]


def _handler(state: StandinState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append(body)
            state.authorizations.append(self.headers.get("Authorization"))
            if state.fail_status is not None:
                self._send(state.fail_status, b'{"error": "overloaded"}')
                return
            if state.garbage:
                self._send(200, b"<html>not json</html>")
                return
            width = state.dimensions
            if state.later_dimensions is not None and len(state.requests) > 1:
                width = state.later_dimensions
            rows = [
                {"object": "embedding", "index": i, "embedding": standin_vector(t, width)}
                for i, t in enumerate(body["input"])
            ]
            answer = {"object": "list", "model": body["model"], "data": list(reversed(rows))}
            self._send(200, json.dumps(answer).encode())

        def _send(self, status: int, payload: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    return Handler


@contextmanager
def standin_server() -> Iterator[tuple[str, StandinState]]:
    """Yields (endpoint URL, state) while a server runs on a free loopback port."""
    state = StandinState()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/embeddings", state
    finally:
        server.shutdown()
        server.server_close()


# --- small vaults for the index tests --------------------------------------------

BASE_CARDS = {
    "owl": "Owls hunt at night and see in the dark.",
    "duck": "Ducks swim on ponds and dabble for weeds.",
    "penguin": "Penguins swim underwater to catch fish.",
    "weaver": "Weavers weave hanging nests from grass.",
}


def write_vault(root, cards: dict[str, str], toml: str) -> None:  # type: ignore[no-untyped-def]
    """A vault folder with one `.md` card per entry (title = name) and the given hql.toml."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "hql.toml").write_text(toml, encoding="utf-8")
    for name, body in cards.items():
        (root / f"{name}.md").write_text(
            f"---\ntitle: {name.title()}\n---\n{body}\n", encoding="utf-8"
        )


def http_toml(endpoint: str, extra: str = "", embedder_extra: str = "") -> str:
    return (
        '[semantics]\nindex = ".hql/index.sqlite"\n'
        + extra
        + '\n[semantics.embedder]\nprovider = "http"\n'
        + f'endpoint = "{endpoint}"\nmodel = "standin-bow"\nrevision = "1"\n'
        + embedder_extra
    )
