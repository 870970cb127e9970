"""``runs abandon`` never settles a run whose runner is alive (ADR 0042, amended).

An adversarial pass found three live runners that the store took for gone, and one reading
that failed open; each test here failed before the fix, with real processes:

- a runner in another pid namespace of this host, with the host's name (a container with host
  networking, ``unshare -p``): its pid was looked up in this namespace;
- a runner that a ``hidepid`` ``/proc`` hides from the operator (another user's): "no such
  file" was read as "no such process";
- a runner whose first thread has ended while another drives the run (``pthread_exit``): its
  ``stat`` says zombie;
- a start recorded without a boot id (unreadable on one side): the two strings differed, so a
  live runner read as gone.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nr_llm_core._audit_runner import RunnerState, runner_state, this_runner
from nr_llm_core.audit import AgentRunPersister, RunnerNotGoneError

_BEGINS_AND_WAITS = textwrap.dedent(
    """
    import sys, time
    from nr_llm_core.audit import AgentRunPersister
    store = AgentRunPersister(sys.argv[1])
    store.begin(sys.argv[2])
    print("begun", flush=True)
    time.sleep(60)
    """
)

_FIRST_THREAD_ENDS = textwrap.dedent(
    """
    import ctypes, sys, threading, time
    from nr_llm_core.audit import AgentRunPersister
    store = AgentRunPersister(sys.argv[1])
    store.begin(sys.argv[2])
    def drive():
        print("begun", flush=True)
        time.sleep(60)
    threading.Thread(target=drive).start()
    time.sleep(0.3)
    ctypes.CDLL(None).pthread_exit(None)  # the first thread ends; the process goes on
    """
)


@pytest.fixture
def spawned() -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _start(procs: list[subprocess.Popen[str]], argv: list[str]) -> subprocess.Popen[str]:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    procs.append(proc)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert "begun" in line, line
    return proc


def _status(db: Path, run_id: str) -> str:
    with AgentRunPersister(db) as store:
        record = store.get_run(run_id)
    assert record is not None
    return str(record["status"])


def test_a_runner_in_another_pid_namespace_of_this_host_is_not_gone(
    tmp_path: Path, spawned: list[subprocess.Popen[str]]
) -> None:
    """Its recorded pid (1 in its own namespace) is init here, with another start time: the
    run was settled failed while it ran. It is now refused, naming the namespace."""
    db = tmp_path / "audit.db"
    AgentRunPersister(db).close()
    unshare = shutil.which("unshare")
    assert unshare is not None, "util-linux's unshare is needed (Debian: util-linux)"
    argv = [unshare, "--pid", "--fork", "--kill-child", "--mount-proc"]
    proc = _start(spawned, [*argv, sys.executable, "-c", _BEGINS_AND_WAITS, str(db), "ns-run"])
    with AgentRunPersister(db) as store:
        recorded = store.runners(["ns-run"])["ns-run"]
        assert recorded.host == os.uname().nodename and recorded.pid != proc.pid
        with pytest.raises(RunnerNotGoneError, match="another pid namespace"):
            store.abandon("ns-run")
    assert proc.poll() is None
    assert _status(db, "ns-run") == "running"


def test_a_process_whose_first_thread_ended_is_alive(
    tmp_path: Path, spawned: list[subprocess.Popen[str]]
) -> None:
    """Its ``stat`` says ``Z`` while a thread still drives the run: not gone."""
    db = tmp_path / "audit.db"
    AgentRunPersister(db).close()
    proc = _start(spawned, [sys.executable, "-c", _FIRST_THREAD_ENDS, str(db), "zr"])
    deadline = time.monotonic() + 30
    stat = Path(f"/proc/{proc.pid}/stat")
    while stat.read_text().rpartition(")")[2].split()[0] != "Z":  # the first thread has ended
        assert time.monotonic() < deadline, "the first thread never ended"
        time.sleep(0.05)
    with AgentRunPersister(db) as store, pytest.raises(RunnerNotGoneError, match="alive"):
        store.abandon("zr")
    assert proc.poll() is None
    assert _status(db, "zr") == "running"


_ABANDON_AS_NOBODY = textwrap.dedent(
    """
    import sys
    from nr_llm_core.audit import AgentRunPersister, RunnerNotGoneError
    with AgentRunPersister(sys.argv[1]) as store:
        try:
            store.abandon(sys.argv[2])
        except RunnerNotGoneError:
            print("refused")
        else:
            print("abandoned")
    """
)


def test_a_runner_that_a_hidepid_proc_hides_is_not_gone(
    spawned: list[subprocess.Popen[str]],
) -> None:
    """Another user's live runner has no ``/proc/<pid>/stat`` under ``hidepid=2``: the store
    asks with signal 0 (refused: the process lives) instead of calling it gone."""
    assert os.geteuid() == 0, "this test mounts a proc file system: CI runs it as root"
    folder = Path(tempfile.mkdtemp(prefix="nr-llm-hidepid-"))
    try:
        folder.chmod(0o777)
        db = folder / "audit.db"
        proc = _start(spawned, [sys.executable, "-c", _BEGINS_AND_WAITS, str(db), "hp"])
        for path in folder.iterdir():
            path.chmod(0o666)
        script = (
            "mount -t proc -o hidepid=2 proc /proc && exec setpriv --reuid=65534 "
            '--regid=65534 --clear-groups "$0" -c "$1" "$2" "$3"'
        )
        out = subprocess.run(
            [
                "unshare",
                "-m",
                "sh",
                "-c",
                script,
                sys.executable,
                _ABANDON_AS_NOBODY,
                str(db),
                "hp",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert out.stdout.strip() == "refused", (out.stdout, out.stderr[-2000:])
        assert proc.poll() is None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize(
    "started",
    [":4026531836:123", "boot::123", "only-two:parts", "a:b:c:d", "unknown"],
    ids=["no-boot-id", "no-namespace", "two-parts", "four-parts", "unknown"],
)
def test_a_start_recorded_without_what_would_prove_it_gone_proves_nothing(
    tmp_path: Path, started: str
) -> None:
    """A start with a part missing (the boot id or the namespace could not be read where the
    run began) is ``unknown``: no comparison with this process's can prove the runner gone."""
    db = tmp_path / "audit.db"
    with AgentRunPersister(db) as store:
        run_id = store.begin()
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "UPDATE runs SET runner_pid = ?, runner_started = ? WHERE id = ?",
            (2**22 + 7, started, run_id),  # a pid beyond pid_max: no such process
        )
    conn.close()
    with AgentRunPersister(db) as store:
        recorded = store.runners([run_id])[run_id]
        assert runner_state(recorded) is RunnerState.UNKNOWN
        with pytest.raises(RunnerNotGoneError):
            store.abandon(run_id)


def test_a_runner_of_an_earlier_boot_is_gone(tmp_path: Path) -> None:
    """The host has booted since the run began (another boot id, this namespace): gone."""
    here = this_runner()
    boot, namespace, ticks = here.started.split(":")
    db = tmp_path / "audit.db"
    with AgentRunPersister(db) as store:
        run_id = store.begin()
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "UPDATE runs SET runner_started = ? WHERE id = ?",
            (f"{boot[::-1]}:{namespace}:{ticks}", run_id),
        )
    conn.close()
    with AgentRunPersister(db) as store:
        assert runner_state(store.runners([run_id])[run_id]) is RunnerState.GONE
        store.abandon(run_id)
    assert _status(db, run_id) == "failed"
