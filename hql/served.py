"""Commands a vault's watcher answers: `hql eval`, `run`, `check`, `explain` and `context`.

A command-line call pays for starting Python, importing the language and opening
the vault before it asks anything; on a large vault that is most of what it
costs. While `hql vault watch` serves a vault (by hand, or started by `[vault]
watch = true`), it keeps the vault open in its own process, and these commands
are sent to it over its socket, `.hql/watch.sock`: the command line (`forward`)
imports nothing of the language, hands over its arguments, working directory and
environment, and prints what comes back. The watcher (`answer`) runs the very
same command-line code with the caller's arguments, directory and environment,
its output captured, and the vault it keeps open: it reads the changes queued
for it before it runs, so an answer sees every change made before it was asked,
as a load of its own would.

A command is answered where it was typed instead when the watcher cannot answer
it the same way: it reads stdin, writes a picture file (`--svg`), names another
vault, is a usage error, prints to something that is not UTF-8, or the
environment says `HQL_LOCAL=1` (or `HQL_DEBUG`, whose tracebacks belong to the
caller's process); when HQL's files or the installed packages changed since the
watcher started; and when the watcher fails to answer. An old watcher that does
not know the question says nothing, and the command runs where it was typed. The
watcher runs only the commands of its own user (hql.vault.watcher checks the
socket's peer).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Sequence

# Not `typing.TYPE_CHECKING`: the command line's side imports nothing it can skip.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from hql.vault import Vault

# The commands a watcher answers.
SERVED = frozenset({"eval", "run", "check", "explain", "context"})
SOCKET_PATH = (".hql", "watch.sock")
# How long the command line waits to be connected before it runs the command itself.
CONNECT_SECONDS = 2.0
OK, DECLINED = b"ok\n", b"declined\n"


def main() -> int:
    """The `hql` command: answered by the vault's watcher when it can, else here."""
    code = forward(sys.argv[1:])
    if code is not None:
        return code
    from hql.cli import main as local_main

    code = local_main()
    _end_at_once(code)
    return code


def _end_at_once(code: int) -> None:
    """End the process now, its output flushed, when nothing is left for an orderly exit
    to do: no other thread runs and nothing waits to run at exit. An orderly exit frees
    every object the command made one by one (on a large vault, a card's worth of objects
    per file: tens of milliseconds); the system frees a process's memory at once. Anything
    left to finish (a thread, an exit handler, output that cannot be flushed) means the
    orderly exit, and this returns."""
    import _thread
    import atexit

    if _thread._count() or atexit._ncallbacks() or os.environ.get("HQL_DEBUG"):
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return  # said, or not, by the orderly exit
    os._exit(code)


# --- the command line's side -------------------------------------------------------


def forward(argv: Sequence[str]) -> int | None:
    """Have the vault's watcher run this command and print its answer; None: run it here."""
    if os.environ.get("HQL_LOCAL") or os.environ.get("HQL_DEBUG"):
        return None
    vault = _vault_argument(argv)
    if vault is None or not SERVED.intersection(argv):
        return None
    if (sys.stdout.encoding or "").lower().replace("-", "") != "utf8":
        return None  # the answer comes as UTF-8 text: print it the way this process would
    # Checked here, before the request is made, though `exchange` checks again: most calls
    # find no watcher, and should pay no more than this `lstat` to learn so.
    path = os.path.join(vault, *SOCKET_PATH)
    try:
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            return None
    except OSError:
        return None
    import json

    request = {
        "argv": list(argv),
        "argv0": sys.argv[0] if sys.argv else "hql",
        "cwd": os.getcwd(),
        "env": dict(os.environ),
    }
    reply = _exchange(path, json.dumps(request).encode("utf-8"))
    if reply is None or not reply.startswith(OK):
        return None
    try:
        answer = json.loads(reply[len(OK) :])
        code, out, err = int(answer["code"]), str(answer["out"]), str(answer["err"])
    except (ValueError, KeyError, TypeError):
        return None
    try:
        if err:
            sys.stderr.write(err)
            sys.stderr.flush()
        sys.stdout.write(out)
        sys.stdout.flush()
    except BrokenPipeError:
        return 1
    return code


def _vault_argument(argv: Sequence[str]) -> str | None:
    """The `--vault` the command names (the watcher checks it again with the real parser)."""
    found = None
    for index, word in enumerate(argv):
        if word == "--vault" and index + 1 < len(argv):
            found = argv[index + 1]
        elif word.startswith("--vault="):
            found = word.partition("=")[2]
    return found


def _exchange(path: str, payload: bytes) -> bytes | None:
    """Send the request and read the whole answer; None when no watcher took it."""
    from hql.unix_socket import exchange

    try:
        # No limit once connected: the command runs as long as it would run here.
        return exchange(path, b"serve %d\n" % len(payload) + payload, CONNECT_SECONDS, None)
    except KeyboardInterrupt:
        raise SystemExit(_interrupted()) from None


def _interrupted() -> int:
    from hql import messages

    print(f"hql: {messages.interrupted()}", file=sys.stderr)
    return 130


# --- the watcher's side ------------------------------------------------------------


class OpenVault:
    """The vault a watcher keeps open between commands, opened again when its token moves.

    It is kept for the path as the command named it (a vault opened as `notes` says
    `notes/.hql` where one opened as `/home/me/notes` says the whole path), and a
    relative path from the folder it was named in.
    """

    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root)
        self._vault: Vault | None = None
        self._key: tuple[str, str, str] | None = None

    def get(self, path: str, token: str) -> Vault:
        from hql.api import open_vault

        if os.path.realpath(path) != self.root:
            return open_vault(path)
        key = (path, "" if os.path.isabs(path) else os.getcwd(), token)
        if self._vault is None or self._key != key:
            self._vault = None  # let the old one go before the new one is read
            self._vault = open_vault(path)
            self._key = key
        return self._vault

    def release(self) -> None:
        self._vault = None
        self._key = None


class Answering:
    """A watcher's answers to the commands sent to it (hql.vault.watcher.Commands).

    It answers with the code it was started with: once HQL's own files, or the folders
    packages are installed in (an extension installed, upgraded or removed), have changed
    since, every command runs where it was typed, which reads them afresh, and the
    watcher's log says so once.
    """

    def __init__(self, root: str, log: Any = None) -> None:
        self.vaults = OpenVault(root)
        self.answered = 0
        self._code = code_stamp()
        self._log = log
        self._stale = False

    def answer(self, payload: bytes, token: str) -> bytes:
        if self._stale or code_stamp() != self._code:
            if not self._stale and self._log is not None:
                from hql import messages

                print(messages.watch_code_changed(), file=self._log, flush=True)
            self._stale = True
            self.vaults.release()
            return DECLINED
        reply = answer(payload, token, self.vaults)
        self.answered += reply.startswith(OK)
        return reply

    def release(self) -> None:
        self.vaults.release()


def code_stamp() -> int:
    """What the code a command runs depends on, as of now: each of HQL's own files (its
    size and modification time) and each folder on `sys.path` (installing or removing a
    package changes its folder's modification time). A millisecond or so."""
    stamps: list[tuple[str, int, int]] = []
    for folder, subfolders, names in os.walk(os.path.dirname(os.path.abspath(__file__))):
        subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")
        for name in sorted(names):
            status = os.stat(os.path.join(folder, name))
            stamps.append((os.path.join(folder, name), status.st_mtime_ns, status.st_size))
    for entry in sys.path:
        try:
            status = os.stat(entry or ".")
        except OSError:
            continue
        stamps.append((entry, status.st_mtime_ns, 0))
    return hash(tuple(stamps))


def answer(payload: bytes, token: str, vaults: OpenVault) -> bytes:
    """Run one forwarded command; DECLINED when it must run where it was typed."""
    import json

    try:
        request = json.loads(payload)
        argv = [str(word) for word in request["argv"]]
        cwd, env = str(request["cwd"]), {str(k): str(v) for k, v in request["env"].items()}
        argv0 = str(request.get("argv0") or "hql")
    except (ValueError, KeyError, TypeError, AttributeError):
        return DECLINED
    try:
        with _Caller(cwd, env, argv0) as caller:
            args = _answerable(argv, vaults.root)
            if args is None:
                return DECLINED
            code = _run(args, lambda path: vaults.get(path, token))
    except OSError:  # the caller's directory is gone, say: its own process says so
        return DECLINED
    answered = {"code": code, "out": caller.out.getvalue(), "err": caller.err.getvalue()}
    return OK + json.dumps(answered).encode("utf-8")


def _answerable(argv: list[str], root: str) -> Any:
    """The parsed command when this watcher can answer it as the caller's process would;
    None when it must run there."""
    from hql import cli

    try:
        args = cli.parse_arguments(argv)
    except SystemExit:
        return None  # a usage error: said by the caller's own process
    if args.command not in SERVED or not args.vault:
        return None
    if os.path.realpath(args.vault) != root or getattr(args, "svg", None):
        return None
    reads_stdin = getattr(args, "file", None) == "-" or (
        args.command == "context" and args.file is None and args.prompt in (None, "-")
    )
    return None if reads_stdin else args


def _run(args: Any, opener: Callable[[str], Vault]) -> int:
    from hql import cli

    previous, cli.vault_opener = cli.vault_opener, opener
    try:
        return cli.run_parsed(args)
    finally:
        cli.vault_opener = previous


class _Caller:
    """The caller's directory, environment and program name, and its output captured, for
    the length of one command (commands are answered one at a time)."""

    def __init__(self, cwd: str, env: dict[str, str], argv0: str) -> None:
        import io

        self.cwd, self.env, self.argv0 = cwd, env, argv0
        self.out, self.err = io.StringIO(), io.StringIO()
        self._saved: tuple[Any, ...] = ()

    def __enter__(self) -> _Caller:
        import io

        self._saved = (os.getcwd(), dict(os.environ), sys.stdin, sys.stdout, sys.stderr, sys.argv)
        os.chdir(self.cwd)
        os.environ.clear()
        os.environ.update(self.env)
        sys.stdin, sys.stdout, sys.stderr = io.StringIO(), self.out, self.err
        sys.argv = [self.argv0]
        return self

    def __exit__(self, *_: object) -> None:
        cwd, env, sys.stdin, sys.stdout, sys.stderr, sys.argv = self._saved
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
