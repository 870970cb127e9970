"""The test server's keeper: starts ``postgres`` and stops it when the process that started
it is gone, however it went (a teardown, SIGTERM, SIGKILL).

    python _pg_watchdog.py ROOT UID GID -- POSTGRES-ARGS...

Its standard input is a pipe whose other end only the starting process holds. The kernel
closes that end when the process exits for any reason, so end of file here means "the
owner is done or dead": the keeper then stops the server at once (``SIGQUIT``, PostgreSQL's
immediate shutdown: the data is thrown away anyway) and removes ``ROOT``. SIGTERM, SIGINT and
SIGHUP do the same. Started in its own session, a signal sent to the owner's process group
(Ctrl-C, ``kill -- -PGID``) does not reach it before the owner's teardown has run.

Should the keeper itself be killed, the server gets ``SIGQUIT`` from the kernel (Linux's
parent-death signal, set in the server's process after it became the ``postgres`` user: a
change of user would clear it), and the next start reaps the folder (pg_server.reap_stale).

When the server exits on its own (a failed start), the keeper leaves ``ROOT`` and its log to
the owner, who reports and removes them, and exits with the server's status.

A script, not a module of the test package: it runs in a bare interpreter, imports only the
standard library, and is found by its path.
"""

from __future__ import annotations

import ctypes
import os
import select
import shutil
import signal
import subprocess
import sys
from pathlib import Path

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_STOP_WAIT = 60.0


class _Stop(Exception):
    """A signal asked the keeper to stop the server."""


def _on_signal(signum: int, frame: object) -> None:
    raise _Stop


def _die_with(parent: int) -> None:
    """In the server's process, between fork and exec, after the change of user: receive
    SIGQUIT (immediate shutdown) when the keeper dies; and if it already has, stop now."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGQUIT), 0, 0, 0) != 0:
        os._exit(70)
    if os.getppid() != parent:
        os._exit(71)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGQUIT)
        try:
            proc.wait(_STOP_WAIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main(argv: list[str]) -> int:
    """Run the server named in ``argv`` until the owner's pipe closes; see the module."""
    root, uid, gid = Path(argv[0]), int(argv[1]), int(argv[2])
    if argv[3] != "--":
        raise SystemExit("usage: _pg_watchdog.py ROOT UID GID -- POSTGRES-ARGS...")
    args = argv[4:]
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _on_signal)
    me = os.getpid()
    as_user = uid >= 0  # root starts the server as the postgres user; anyone else as themselves
    proc: subprocess.Popen[bytes] | None = None
    try:
        with open(root / "server.log", "ab") as log:
            proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                # preexec_fn runs after the change of user (which would clear the signal);
                # the keeper has one thread, so running Python there is safe.
                preexec_fn=lambda: _die_with(me),
                user=uid if as_user else None,
                group=gid if as_user else None,
                extra_groups=[] if as_user else None,
            )
        exited = os.pidfd_open(proc.pid)
        while True:
            ready, _, _ = select.select([sys.stdin.fileno(), exited], [], [])
            if exited in ready:
                # Exited on its own: the owner reads the log, then removes the folder.
                return proc.wait()
            if not os.read(sys.stdin.fileno(), 4096):
                break  # the owner closed the pipe, or died
    except _Stop:
        pass
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)  # stopping now; a second signal must not cut it
    if proc is not None:
        _stop(proc)
    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
