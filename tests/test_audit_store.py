"""The audit store's contract on both stores: life cycle, retention, crashes, concurrency.

A test that takes ``target`` (or ``store``) runs once on a real SQLite file and once on a real
PostgreSQL server the tests start (``store_target``, tests/stores/fixtures.py), through
``open_store``: what it asserts is the protocol's rule, kept by each store. The tests of the
file itself (WAL, owner-only, the schema's migrations, bytes left in the file) take ``db`` and
run on SQLite only."""

from __future__ import annotations

import os
import signal
import sqlite3
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from nr_llm_core import _audit_schema
from nr_llm_core.audit import (
    AgentRunPersister,
    AuditStoreError,
    RunSettledError,
    RunStatus,
    UnknownRunError,
    default_db_path,
)
from nr_llm_core.errors import ApprovalError
from nr_llm_core.privacy import PrivacyLevel
from nr_llm_core.results import Artifact, ToolResult
from nr_llm_core.stores import AuditStore, open_store, store_kind
from nr_llm_core.trace import RunStep, RunTrace, StepKind, ToolInvocation

from .store._support import stored_text
from .stores.fixtures import execute


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "audit" / "runs.db"


@pytest.fixture
def target(store_target: str) -> str:
    """The store under test: a SQLite file, then a PostgreSQL database."""
    return store_target


@pytest.fixture
def store(target: str) -> Any:
    with open_store(target) as opened:
        yield opened


def tool_step(round: int = 0, content: str = "ok") -> RunStep:
    invocation = ToolInvocation(name="echo", arguments={}, result=ToolResult.text(content))
    return RunStep.tool(round=round, duration_ms=1.0, invocation=invocation)


def numbered_step(writer: int, index: int) -> RunStep:
    # Numbers under snake_case keys survive METADATA: they identify each write in the store.
    return RunStep(
        kind=StepKind.TOOL, round=index, duration_ms=0.0, fields={"writer": writer, "index": index}
    )


def seqs(persister: AuditStore, run_id: str) -> list[int]:
    return [s["seq"] for s in persister.steps(run_id)]


# -- files and defaults ------------------------------------------------------------------------


def test_file_is_wal_owner_only_and_at_the_current_schema(db: Path) -> None:
    AgentRunPersister(db).close()
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == _audit_schema.SCHEMA_VERSION
    conn.close()


@pytest.mark.parametrize("how", ["open_store", "the CLI"])
def test_a_new_store_folder_is_owner_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """The folder a new store is created in is 0700 under a umask of 022, as the persister
    makes it: a path that created it first with the umask's 0755 (`open_store`, which every
    command goes through) let others list the database and its suspended-state folder."""
    import os

    from click.testing import CliRunner

    from nr_llm_core.cli import main
    from nr_llm_core.stores import open_store

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NR_LLM_DISABLE_PLUGIN_AUTOLOAD", "1")
    old = os.umask(0o022)
    try:
        if how == "open_store":
            open_store(str(tmp_path / "new" / "audit.db")).close()
            folder = tmp_path / "new"
        else:
            monkeypatch.delenv("NR_LLM_DB", raising=False)
            out = CliRunner().invoke(main, ["run", "hello"])
            assert out.exit_code == 0, out.output
            folder = tmp_path / ".nr-llm"
    finally:
        os.umask(old)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_default_db_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("NR_LLM_DB")
    assert default_db_path() == Path(".nr-llm") / "audit.db"
    monkeypatch.setenv("NR_LLM_DB", str(tmp_path / "x.db"))
    assert default_db_path() == tmp_path / "x.db"


def test_privacy_defaults_to_environment_then_metadata(
    monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    with open_store(target) as p:
        assert p.privacy is PrivacyLevel.METADATA
    monkeypatch.setenv("NR_LLM_PRIVACY_LEVEL", "redacted")
    with open_store(target) as p:
        assert p.privacy is PrivacyLevel.REDACTED
        # The environment is the operator's named level: a run asking for more gets it capped.
        run = p.begin(privacy="full")
        assert p.get_run(run)["privacy_level"] == "redacted"


# -- life cycle --------------------------------------------------------------------------------


def test_begin_record_settle(store: AuditStore) -> None:
    run = store.begin(meta={"model": "m1"})
    assert store.record_step(run, tool_step(0))
    llm = RunStep.llm(
        round=0, duration_ms=2.5, content="x", usage={"input_tokens": 7, "output_tokens": 2}
    )
    assert store.record_step(run, llm)
    store.settle_completed(run, termination_reason="completed", iterations=1, truncated=False)
    record = store.get_run(run)
    assert record is not None
    assert record["status"] == "completed"
    assert record["ended_at"] is not None
    assert (record["tokens_in"], record["tokens_out"]) == (7, 2)
    assert (record["iterations"], record["truncated"], record["steps"]) == (1, False, 2)
    assert record["meta"] == {"model": "m1"}
    steps = store.steps(run)
    assert [s["kind"] for s in steps] == ["tool", "llm"]
    assert steps[1]["duration_ms"] == 2.5
    assert steps[0]["step"]["content_redacted"] is True
    assert [r["id"] for r in store.list_runs()] == [run]


def test_a_final_status_cannot_be_settled_twice(store: AuditStore) -> None:
    run = store.begin()
    store.settle_failed(run, termination_reason="provider_error")
    with pytest.raises(RunSettledError):
        store.settle_completed(run)
    with pytest.raises(RunSettledError):
        store.settle(run, "cancelled")
    with pytest.raises(RunSettledError):
        store.suspend(run, STATE)
    with pytest.raises(ApprovalError, match="is not waiting for approval"):
        store.discard(run)
    assert store.get_run(run)["status"] == "failed"


def test_settle_refuses_unknown_runs_and_non_final_statuses(store: AuditStore) -> None:
    with pytest.raises(UnknownRunError):
        store.settle_completed("nope")
    run = store.begin()
    with pytest.raises(AuditStoreError):
        store.settle(run, RunStatus.SUSPENDED)
    with pytest.raises(ValueError):
        store.settle(run, "finished")
    assert store.get_run(run)["status"] == "running"


def test_settle_usage_replaces_summed_tokens(store: AuditStore) -> None:
    run = store.begin()
    store.record_step(
        run, RunStep.llm(round=0, duration_ms=1, content="", usage={"input_tokens": 5})
    )
    store.settle_completed(run, usage={"input_tokens": 100, "output_tokens": 50})
    record = store.get_run(run)
    assert (record["tokens_in"], record["tokens_out"]) == (100, 50)


def test_termination_reason_follows_the_privacy_rule(target: str) -> None:
    with open_store(target, privacy="metadata") as p:
        run = p.begin()
        p.settle_failed(run, termination_reason="HTTP 500: CANARY-in-provider-error")
        assert p.get_run(run)["termination_reason"] == "[unrecognised-reason]"
    assert "CANARY-in-provider-error" not in stored_text(target)


def test_begin_refuses_a_duplicate_id_and_non_json_meta(store: AuditStore) -> None:
    store.begin("r1")
    with pytest.raises(AuditStoreError):
        store.begin("r1")
    with pytest.raises(AuditStoreError):
        store.begin("r2", meta={"artifact": Artifact.text("l", "t")})
    assert store.get_run("r2") is None


def test_record_step_returns_false_for_unknown_or_settled_runs(store: AuditStore) -> None:
    assert store.record_step("nope", tool_step()) is False
    run = store.begin()
    assert store.record_step(run, tool_step())
    store.settle_completed(run)
    assert store.record_step(run, tool_step()) is False
    assert seqs(store, run) == [1]


def test_sequence_advances_only_on_success(target: str) -> None:
    with open_store(target, privacy="full") as p:
        run = p.begin()
        assert p.record_step(run, tool_step(0))
        bad = RunStep.llm(round=1, duration_ms=1, content="x", raw={1, 2})  # a set: not JSON
        assert p.record_step(run, bad) is False
        nan = RunStep.llm(round=1, duration_ms=float("nan"), content="x")
        assert p.record_step(run, nan) is False
        assert p.record_step(run, tool_step(2))
        assert seqs(p, run) == [1, 2]
        assert [s["round"] for s in p.steps(run)] == [0, 2]


def test_record_step_never_raises(target: str) -> None:
    p = open_store(target)
    run = p.begin()
    assert p.record_step(run, "not a step") is False  # type: ignore[arg-type]
    assert p.record_step(run, None) is False  # type: ignore[arg-type]
    p.close()
    assert p.record_step(run, tool_step()) is False  # closed: logged, not raised


def test_trace_listener_records_every_step(store: AuditStore) -> None:
    trace = RunTrace()
    run = store.attach(trace, meta={"source": "test"})
    assert run == trace.run_id
    for i in range(3):
        trace.record(tool_step(i))
    other = RunTrace(run_id="elsewhere")
    other_run = store.begin()
    other.add_listener(store.listener(other_run))
    other.record(tool_step(9))
    assert seqs(store, run) == [1, 2, 3]
    assert seqs(store, other_run) == [1]


def test_run_privacy_level_is_read_back_from_the_store(target: str) -> None:
    with open_store(target) as writer:
        run = writer.begin(privacy="full")
    # Another process's store that names no level: the run's own applies (one that names
    # a stricter level records at it: tests/store/test_resume_level.py).
    with open_store(target) as other:
        assert other.record_step(run, tool_step(content="kept verbatim"))
        assert other.steps(run)[0]["step"]["tool_result"] == "kept verbatim"


# -- suspension --------------------------------------------------------------------------------

STATE = {"messages": [{"role": "user", "content": "hi"}], "pending": [{"id": "c1", "name": "echo"}]}


def test_suspend_load_resume(store: AuditStore) -> None:
    run = store.begin()
    assert store.load_suspended(run) is None
    store.suspend(run, STATE)
    assert store.get_run(run)["status"] == "suspended"
    assert store.get_run(run)["suspended"] is True
    assert store.load_suspended(run) == STATE
    assert store.record_step(run, tool_step())  # a suspended run still takes steps
    store.mark_resumed(run)
    assert store.get_run(run)["status"] == "running"
    assert store.load_suspended(run) is None
    with pytest.raises(AuditStoreError):
        store.mark_resumed(run)


def test_settling_clears_the_suspended_state(target: str) -> None:
    store = open_store(target)
    run = store.begin()
    store.suspend(run, {"messages": [{"role": "user", "content": "SUSPENDED-CANARY"}]})
    assert "SUSPENDED-CANARY" in stored_text(target)
    store.settle_cancelled(run, termination_reason="denied")
    assert store.get_run(run)["suspended"] is False
    assert store.load_suspended(run) is None
    with pytest.raises(RunSettledError):
        store.suspend(run, STATE)
    store.close()
    # SQLite: secure_delete overwrote the file's bytes; PostgreSQL: no row holds it (ADR 0024).
    assert "SUSPENDED-CANARY" not in stored_text(target)


@pytest.mark.parametrize(
    "state",
    [
        {"pending": [Artifact.text("label", "text")]},
        {"messages": [{"role": "tool", "result": ToolResult.text("x")}]},
        {"messages": [], "artifacts": []},
        {"messages": [], "tool_artifacts": [{"type": "text"}]},
    ],
    ids=["artifact", "tool-result", "artifacts-key", "tool-artifacts-key"],
)
def test_suspend_refuses_artifacts(store: AuditStore, state: dict[str, Any]) -> None:
    run = store.begin()
    with pytest.raises(AuditStoreError, match="artifact"):
        store.suspend(run, state)
    assert store.get_run(run)["status"] == "running"
    assert store.get_run(run)["suspended"] is False


def test_suspend_keeps_model_written_keys_that_look_like_artifacts(store: AuditStore) -> None:
    # Below the top level is data the model wrote: an argument named "artifacts" must not let
    # a model block its run's suspension.
    state = {
        "pending": [{"id": "c1", "name": "t", "arguments": {"artifacts": ["a"]}}],
        "messages": [{"role": "assistant", "content": "", "tool_artifacts": 1}],
    }
    run = store.begin()
    store.suspend(run, state)
    assert store.load_suspended(run) == state


def test_recording_the_approval_step_resumes_the_run(store: AuditStore) -> None:
    run = store.begin()
    store.suspend(run, STATE)
    step = RunStep.approval(round=1, decisions={"c1": True}, digest="ab" * 16)
    assert store.record_step(run, step)
    record = store.get_run(run)
    assert record is not None
    assert record["status"] == "running"
    assert record["suspended"] is False
    assert record["claimed_by"] is not None
    assert store.load_suspended(run) is None  # the approval cannot be replayed


def test_meta_privacy_sets_the_run_level(store: AuditStore) -> None:
    run = store.begin(meta={"provider": "ScriptedProvider", "privacy": "none"})
    assert store.get_run(run)["privacy_level"] == "none"
    assert store.record_step(run, tool_step(content="x"))
    assert set(store.steps(run)[0]["step"]) == {"kind", "round", "duration_ms"}


def test_suspend_refuses_non_json(store: AuditStore) -> None:
    run = store.begin()
    with pytest.raises(AuditStoreError):
        store.suspend(run, {"x": {1, 2}})
    assert store.get_run(run)["status"] == "running"


# -- schema (the SQLite file's own; PostgreSQL's: tests/stores/test_postgres.py) ----------------


def _tables(db: Path) -> dict[str, list[str]]:
    conn = sqlite3.connect(db)
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    out = {n: [c[1] for c in conn.execute(f"PRAGMA table_info({n})")] for n in names}
    conn.close()
    return out


def test_empty_file_gets_every_migration(tmp_path: Path) -> None:
    db = tmp_path / "empty.db"
    db.touch()
    AgentRunPersister(db).close()
    tables = _tables(db)
    assert {"runs", "events"} <= tables.keys()
    assert "meta" in tables["runs"]
    assert "recorded_at" in tables["events"]


def test_upgrade_from_version_1_keeps_data(tmp_path: Path) -> None:
    db = tmp_path / "v1.db"
    conn = sqlite3.connect(db, isolation_level=None)
    assert _audit_schema.migrate(conn, target=1) == 1
    conn.execute(
        "INSERT INTO runs (id, status, started_at, privacy_level) "
        "VALUES ('old', 'running', '2020-01-01T00:00:00.000000Z', 'metadata')"
    )
    conn.execute(
        "INSERT INTO events (run_id, seq, kind, round, duration_ms, payload) "
        "VALUES ('old', 1, 'tool', 0, 1.0, '{\"kind\":\"tool\"}')"
    )
    conn.close()
    assert "meta" not in _tables(db)["runs"]
    with AgentRunPersister(db) as p:
        assert p.get_run("old")["steps"] == 1
        assert p.record_step("old", tool_step())
        assert seqs(p, "old") == [1, 2]
        assert p.steps("old")[0]["recorded_at"] is None
    version = sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0]
    assert version == _audit_schema.SCHEMA_VERSION


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "future.db"
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {_audit_schema.SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(AuditStoreError, match="upgrade nr-llm"):
        AgentRunPersister(db)


# -- retention ---------------------------------------------------------------------------------


def test_purge_deletes_old_runs_with_their_steps_and_states(target: str) -> None:
    p = open_store(target, privacy="full")
    old, new = p.begin(), p.begin()
    p.record_step(old, tool_step(content="OLD-RUN-CANARY"))
    p.suspend(old, {"messages": [{"role": "user", "content": "OLD-STATE-CANARY"}]})
    p.record_step(new, tool_step(content="new run"))
    execute(
        target,
        "UPDATE runs SET started_at = :w WHERE id = :r",
        w="2000-01-01T00:00:00.000000Z",
        r=old,
    )
    assert p.purge(30) == 1
    assert p.get_run(old) is None
    assert p.steps(old) == []
    assert p.load_suspended(old) is None
    assert p.get_run(new) is not None
    assert p.purge(30) == 0
    with pytest.raises(AuditStoreError):
        p.purge(-1)
    p.close()
    # SQLite: no byte of the file or its companions; PostgreSQL: no row (ADR 0024).
    held = stored_text(target)
    assert "OLD-RUN-CANARY" not in held and "OLD-STATE-CANARY" not in held
    assert "new run" in held


# -- crashes and concurrency -------------------------------------------------------------------

WRITER = textwrap.dedent(
    """
    import sys, time
    from nr_llm_core.stores import open_store
    from nr_llm_core.trace import RunStep, StepKind
    target, run, writer, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    p = open_store(target)
    if run == "-":
        run = p.begin("killed-run")
    print("ready", flush=True)
    sys.stdin.readline()  # wait for the go signal
    for i in range(count):
        step = RunStep(kind=StepKind.TOOL, round=i, duration_ms=0.0,
                       fields={"writer": writer, "index": i})
        assert p.record_step(run, step)
        print(i, flush=True)
    print("done", flush=True)
    """
)


def _writer(target: str, run: str, writer: int, count: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, target, run, str(writer), str(count)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_sigkill_mid_run_loses_nothing_committed(target: str) -> None:
    """The writer reports each step on its stdout once ``record_step`` returned ``True``, and
    is killed while it writes. Every step it reported, including the ones still in the pipe
    when it died, must be in the store, in order; at most one more may be (committed, and
    killed before it could report it)."""
    open_store(target).close()
    proc = _writer(target, "-", 0, 1_000_000)
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()
    reported: list[int] = []
    while len(reported) < 200:  # read as it writes, so the kill lands mid-write, not mid-wait
        reported.append(int(proc.stdout.readline()))
    os.kill(proc.pid, signal.SIGKILL)
    # What the writer reported before it died is still in the pipe: read all of it.
    reported += [int(line) for line in proc.stdout.read().split()]
    with proc:  # closes the pipes and waits
        pass
    assert proc.returncode == -signal.SIGKILL
    assert reported == list(range(len(reported)))
    with open_store(target) as p:
        if store_kind(target) == "sqlite":
            conn = sqlite3.connect(target)
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            conn.close()
        stored = p.steps("killed-run")
        indices = [s["step"]["index"] for s in stored]
        assert indices[: len(reported)] == reported, "a step reported as committed is missing"
        assert len(stored) <= len(reported) + 1
        assert [s["seq"] for s in stored] == list(range(1, len(stored) + 1))
        assert indices == list(range(len(stored)))
        assert p.get_run("killed-run")["steps"] == len(stored)
        p.settle_failed("killed-run", termination_reason="process_killed")
        assert p.get_run("killed-run")["status"] == "failed"


def test_eight_threads_and_two_processes_store_every_step_once(target: str) -> None:
    per_writer = 150
    shared = open_store(target)
    run = shared.begin()
    procs = [_writer(target, run, 100 + n, per_writer) for n in range(2)]
    start = threading.Barrier(8 + 1)
    failures: list[int] = []

    def thread_writer(writer: int) -> None:
        # Half the threads share one store (its lock or its pool), half have their own.
        own = open_store(target) if writer % 2 else None
        p = own or shared
        start.wait()
        for i in range(per_writer):
            if not p.record_step(run, numbered_step(writer, i)):
                failures.append(writer)
        if own is not None:
            own.close()

    threads = [threading.Thread(target=thread_writer, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    start.wait()
    for t in threads:
        t.join()
    for proc in procs:
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0
        assert out.strip().endswith("done")
    assert failures == []
    stored = shared.steps(run)
    total = 10 * per_writer
    assert [s["seq"] for s in stored] == list(range(1, total + 1))
    written = sorted((s["step"]["writer"], s["step"]["index"]) for s in stored)
    expected = sorted((w, i) for w in [*range(8), 100, 101] for i in range(per_writer))
    assert written == expected
    assert shared.get_run(run)["steps"] == total
    shared.close()


def test_two_stores_alternating_on_one_run_stay_gap_free(target: str) -> None:
    # Each write by one store makes the other's next number stale (on SQLite every step after
    # the first takes the conflict path: UNIQUE refuses, the allocating insert is used).
    with open_store(target) as a, open_store(target) as b:
        run = a.begin()
        for i in range(20):
            assert (a if i % 2 else b).record_step(run, numbered_step(i % 2, i))
        assert seqs(a, run) == list(range(1, 21))
        assert [s["step"]["index"] for s in a.steps(run)] == list(range(20))


def test_a_run_id_reused_after_purge_starts_again_at_one(store: AuditStore) -> None:
    store.begin("again")
    for i in range(3):
        store.record_step("again", tool_step(i))
    assert store.purge(0) == 1
    store.begin("again")
    assert store.record_step("again", tool_step())
    assert seqs(store, "again") == [1]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX")
def test_a_forked_child_records_through_a_connection_of_its_own(db: Path) -> None:
    """A SQLite connection must not cross a fork. The persister notices a fork without asking
    the kernel for its pid per step: it tries a step recorded by a forked child through the
    parent's persister (it must open its own connection and store the step), then a step in
    the parent (the parent's connection still works), and both are in the file in order."""
    store = AgentRunPersister(db, privacy="full")
    run = store.begin()
    assert store.record_step(run, RunStep.error(round=0, reason="parent_before"))
    parents = store._connection()
    pid = os.fork()
    if pid == 0:  # the child: exit status 0 only if the step went through its own connection
        ok = store._connection() is not parents and store.record_step(
            run, RunStep.error(round=1, reason="child")
        )
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert store._connection() is parents
    assert store.record_step(run, RunStep.error(round=2, reason="parent_after"))
    reasons = [s["step"]["reason"] for s in store.steps(run)]
    store.close()
    assert reasons == ["parent_before", "child", "parent_after"]
