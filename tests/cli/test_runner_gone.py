"""A run whose process was killed (SIGKILL) stayed ``running`` forever: nothing but editing the
database ended it (ADR 0042). The store now records who runs a run (host, pid, the process's
start time) when it begins or is claimed; ``runs list`` and ``runs show`` show a running run
whose runner is provably gone as ``running (runner gone)``, and ``nr-llm runs abandon`` ends
it, only then: a live runner, another host, a reused pid's other start time and an unknown
runner are each tried."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from nr_llm_core import _audit_schema
from nr_llm_core._audit_runner import process_start, this_runner
from nr_llm_core.audit import AgentRunPersister, RunnerNotGoneError
from nr_llm_core.cli import main

# A real loop in another process: it begins a run on the store, then a tool blocks until the
# process is killed (a tool stuck in a remote call, an OOM kill, a power cut).
RUNNER = textwrap.dedent(
    """
    import sys, time
    from nr_llm_core import ScriptedProvider, ToolHost, ToolLoop, ToolResult, ToolSpec, hookimpl
    from nr_llm_core.audit import AgentRunPersister

    class Block:
        @hookimpl
        def tool_spec(self):
            return ToolSpec("block", "Blocks.", {"type": "object", "properties": {}})

        @hookimpl
        def execute(self, arguments):
            print("blocking", flush=True)
            time.sleep(3600)
            return ToolResult.text("never")

    host = ToolHost()
    host.register(Block())
    turns = [{"content": "", "tool_calls": [{"id": "b1", "name": "block", "arguments": {}}]}]
    with AgentRunPersister(sys.argv[1]) as store:
        ToolLoop(ScriptedProvider(turns), host, persister=store).run("block")
    """
)


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "audit.db"


@pytest.fixture
def runner_process(db: Path) -> Iterator[subprocess.Popen[str]]:
    """A process whose loop runs a run on ``db`` and blocks in a tool call (killed after)."""
    AgentRunPersister(db).close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NR_LLM_")}
    proc = subprocess.Popen(
        [sys.executable, "-c", RUNNER, str(db)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "blocking"
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def only_run(db: Path) -> str:
    with AgentRunPersister(db) as store:
        (record,) = store.list_runs()
    return record["id"]


def killed(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()  # reaped: the pid names no process now
    assert proc.returncode == -signal.SIGKILL


def test_a_killed_runs_run_is_shown_stale_and_abandoned(
    db: Path, runner_process: subprocess.Popen[str]
) -> None:
    """The process running a run is SIGKILLed mid-tool: the run stays ``running``; the CLI
    shows it as runner gone (table and JSON) and ``runs abandon`` settles it failed,
    reason abandoned, with who ended it; a second abandon is refused."""
    run_id = only_run(db)
    killed(runner_process)
    with AgentRunPersister(db) as store:
        record = store.get_run(run_id)
        assert record is not None and record["status"] == "running"
        runner = store.runners([run_id])[run_id]
    assert (runner.host, runner.pid) == (socket.gethostname(), runner_process.pid)

    code, out = cli("runs", "list", "--db", str(db))
    assert code == 0, out
    assert "running (runner gone)" in out
    code, out = cli("runs", "show", run_id, "--db", str(db))
    assert code == 0, out
    assert "status: running (runner gone)" in out
    assert f"`nr-llm runs abandon {run_id}` ends it" in " ".join(out.split())
    code, out = cli("runs", "show", run_id, "--db", str(db), "--json")
    assert code == 0, out
    shown = json.loads(out)["run"]["runner"]
    assert shown == {"host": socket.gethostname(), "pid": runner_process.pid, "state": "gone"}

    code, out = cli("runs", "abandon", run_id[:8], "--db", str(db))
    assert code == 0, out
    assert f"Abandoned run {run_id}" in out
    with AgentRunPersister(db) as store:
        record = store.get_run(run_id)
    assert record is not None
    assert (record["status"], record["termination_reason"]) == ("failed", "abandoned")
    assert record["ended_at"] is not None
    assert (record["claimed_by"] or "").startswith(f"cli on {socket.gethostname()} (pid ")
    code, out = cli("runs", "abandon", run_id, "--db", str(db))
    assert code == 1
    assert "is failed, not running" in out


def test_a_live_runner_is_never_abandoned(db: Path, runner_process: subprocess.Popen[str]) -> None:
    """While the runner lives, ``abandon`` is refused with what to do, nothing changes, and
    the listing shows plain ``running``; once it is killed, the same command ends the run."""
    run_id = only_run(db)
    code, out = cli("runs", "abandon", run_id, "--db", str(db))
    assert code == 1, out
    said = " ".join(out.split())
    assert "is still running: its runner" in said and f"pid {runner_process.pid}" in said
    assert "stop that process and try again" in said
    with AgentRunPersister(db) as store:
        record = store.get_run(run_id)
    assert record is not None and record["status"] == "running"
    assert record["claimed_by"] is None
    code, out = cli("runs", "list", "--db", str(db))
    assert "runner gone" not in out and "running" in out
    killed(runner_process)
    code, out = cli("runs", "abandon", run_id, "--db", str(db))
    assert code == 0, out


def test_discard_of_a_running_run_points_at_abandon(
    db: Path, runner_process: subprocess.Popen[str]
) -> None:
    """An operator reaches for ``runs discard`` first: its refusal names ``runs abandon``."""
    run_id = only_run(db)
    code, out = cli("runs", "discard", run_id, "--db", str(db))
    assert code == 1
    assert f"nr-llm runs abandon {run_id}" in " ".join(out.split())


def begun_here(db: Path, **runner: object) -> str:
    """A run begun by this process, its runner columns then set to ``runner``."""
    with AgentRunPersister(db) as store:
        run_id = store.begin()
    if not runner:
        return run_id
    sets = ", ".join(f"{column} = ?" for column in runner)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(f"UPDATE runs SET {sets} WHERE id = ?", (*runner.values(), run_id))
    conn.close()
    return run_id


def test_a_reused_pid_is_not_the_runner(db: Path) -> None:
    """The recorded pid lives (it is this process) but started at another time: another
    process now has the pid, so the runner is gone and the run can be abandoned."""
    here = this_runner()
    assert here.pid == os.getpid() and here.started == process_start(os.getpid())
    run_id = begun_here(db, runner_started=here.started + "0")
    code, out = cli("runs", "list", "--db", str(db), "--json")
    assert code == 0, out
    assert json.loads(out)[0]["runner"]["state"] == "gone"
    with AgentRunPersister(db) as store:
        store.abandon(run_id)
        record = store.get_run(run_id)
    assert record is not None and record["status"] == "failed"


def test_this_process_as_runner_is_alive(db: Path) -> None:
    """A run this very process runs is not abandoned through the API either."""
    run_id = begun_here(db)
    with AgentRunPersister(db) as store, pytest.raises(RunnerNotGoneError, match="alive"):
        store.abandon(run_id)


def test_a_runner_on_another_host_is_refused(db: Path) -> None:
    """A dead pid proves nothing on another host: refused, and told where to run it."""
    run_id = begun_here(db, runner_host="elsewhere.example", runner_pid=2**22 + 7)
    code, out = cli("runs", "abandon", run_id, "--db", str(db))
    assert code == 1
    said = " ".join(out.split())
    assert "pid 4194311 on elsewhere.example, another host" in said
    assert "Run the command on that host" in said
    code, out = cli("runs", "show", run_id, "--db", str(db))
    assert "runner: pid 4194311 on elsewhere.example (other host)" in out


def test_an_older_database_keeps_opening_and_its_running_runs_are_unknown(db: Path) -> None:
    """A schema-4 database (before runners were recorded) opens, gains the columns, keeps its
    running run; nothing proves that run's runner gone, so abandon refuses and says why."""
    conn = sqlite3.connect(db, isolation_level=None)
    assert _audit_schema.migrate(conn, target=4) == 4
    conn.execute(
        "INSERT INTO runs (id, status, started_at, privacy_level) "
        "VALUES ('old-run', 'running', '2026-01-01T00:00:00.000000Z', 'metadata')"
    )
    conn.close()
    code, out = cli("runs", "list", "--db", str(db))
    assert code == 0, out
    assert "old-run" in out and "runner gone" not in out
    version = sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0]
    assert version == _audit_schema.SCHEMA_VERSION == 5
    code, out = cli("runs", "abandon", "old-run", "--db", str(db))
    assert code == 1
    assert "has no recorded runner" in " ".join(out.split())
    code, out = cli("runs", "show", "old-run", "--db", str(db))
    assert "note: no runner is recorded for it" in out


CLAIMED_ELSEWHERE = textwrap.dedent(
    """
    import sys
    from nr_llm_core.audit import AgentRunPersister
    with AgentRunPersister(sys.argv[1]) as store:
        store.mark_resumed(sys.argv[2], claimant="elsewhere")
    """
)


def test_a_claim_makes_the_claimer_the_runner(db: Path) -> None:
    """A suspended run resumed by another process: that process is its runner now, so once
    it has ended the run is stale, though the process that began it still lives."""
    with AgentRunPersister(db) as store:
        run_id = store.begin()
        store.suspend(run_id, {"messages": []})
    env = {k: v for k, v in os.environ.items() if not k.startswith("NR_LLM_")}
    subprocess.run([sys.executable, "-c", CLAIMED_ELSEWHERE, str(db), run_id], check=True, env=env)
    with AgentRunPersister(db) as store:
        runner = store.runners([run_id])[run_id]
        assert runner.pid != os.getpid()
        store.abandon(run_id)
        record = store.get_run(run_id)
    assert record is not None and record["termination_reason"] == "abandoned"
