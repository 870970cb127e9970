"""13.4, crashes: what a killed process leaves, and what the next store makes of it.

- a state file that no run names (killed between writing the file and committing, or between
  committing a claim and wiping): removed by the next persister that opens the database;
- a waiting run whose file is gone or altered: never resumed from it; refused with a clear
  error that says to discard it, and ``discard`` works;
- a database from before state files (schema 2, the state in a column): moved out on upgrade.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from nr_llm_core import (
    AgentRunPersister,
    ScriptedProvider,
    SuspendedRunState,
    ToolLoop,
    _audit_schema,
)
from nr_llm_core.audit import SuspendedStateError
from nr_llm_core.cli import main
from nr_llm_core.messages import ChatMessage
from nr_llm_core.providers.base import Usage

from ._support import APPEND_TURNS, append_host, files_holding, owned_files, suspend_append_run

CANARY = "CRASH-CANARY-41d9"


def waiting_state(run_id: str) -> dict[str, object]:
    """A signed state of ``run_id`` holding the canary, as a claim accepts it."""
    return SuspendedRunState.create(
        run_id=run_id,
        messages=(ChatMessage.user(CANARY),),
        pending=(),
        needs_approval=(),
        iterations=0,
        tool_rounds=0,
        usage=Usage(),
        allowed=None,
    ).to_dict()


CRASH = """
import os, sys
from nr_llm_core import SuspendedRunState, _audit_states
from nr_llm_core.audit import AgentRunPersister
from nr_llm_core.messages import ChatMessage
from nr_llm_core.providers.base import Usage

db, where, canary = sys.argv[1], sys.argv[2], sys.argv[3]
store = AgentRunPersister(db)
run = store.begin()
print(run, flush=True)
# A state a claim accepts (signed with the host secret), holding the canary.
state = SuspendedRunState.create(
    run_id=run, messages=(ChatMessage.user(canary),), pending=(), needs_approval=(),
    iterations=0, tool_rounds=0, usage=Usage(), allowed=None,
).to_dict()

def crash(*args, **kwargs):
    real(*args, **kwargs)
    os._exit(3)  # no cleanup, no rollback: as if killed

if where == "after-write":
    real = _audit_states.write
    _audit_states.write = crash
    store.suspend(run, state)
else:
    store.suspend(run, state)
    real = _audit_states.wipe
    _audit_states.wipe = lambda directory, name: os._exit(3)
    store.claim_suspended(run)
"""


def crash(db: Path, where: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NR_LLM_")}
    proc = subprocess.run(
        [sys.executable, "-c", CRASH, str(db), where, CANARY],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 3, proc.stderr
    return proc.stdout.strip()


@pytest.mark.parametrize(
    ("where", "status"), [("after-write", "running"), ("after-claim", "running")]
)
def test_a_state_file_no_run_names_is_removed_when_the_store_opens(
    tmp_path: Path, where: str, status: str
) -> None:
    """Killed after writing the file but before committing (the run never became suspended),
    or after committing a claim but before wiping: the file is left, holding the canary;
    the next persister that opens the database removes it."""
    db = tmp_path / "audit.db"
    run_id = crash(db, where)
    held = files_holding(db, [CANARY])
    assert [name.split("/")[0] for name in held[CANARY]] == ["audit.db-suspended"]
    with AgentRunPersister(db) as store:
        assert files_holding(db, [CANARY]) == {}
        record = store.get_run(run_id)
        assert record is not None and record["status"] == status
        assert record["suspended"] is False
        assert store.load_suspended(run_id) is None
        if where == "after-claim":
            assert record["claimed_by"] is not None


def state_file(db: Path) -> Path:
    (path,) = (db.parent / f"{db.name}-suspended").iterdir()
    return path


@pytest.mark.parametrize("damage", ["deleted", "altered"])
def test_a_waiting_run_whose_file_is_lost_is_refused_and_can_be_discarded(
    tmp_path: Path, damage: str
) -> None:
    """The row says the run waits, but its file is gone, or holds other bytes than the row
    recorded: no resume uses it (the store, the loop and the CLI refuse it by name), the run
    stays as it was, and ``nr-llm runs discard`` ends it."""
    db = tmp_path / "audit.db"
    run_id, digest = suspend_append_run(db)
    path = state_file(db)
    if damage == "deleted":
        path.unlink()
    else:
        data = json.loads(path.read_bytes())
        data["messages"][0]["content"] = "something else"
        path.write_text(json.dumps(data))
    with AgentRunPersister(db) as store:
        with pytest.raises(SuspendedStateError, match=r"missing or altered.*discard it"):
            store.load_suspended(run_id)
        with pytest.raises(SuspendedStateError):
            store.claim_suspended(run_id, digest=digest)
        loop = ToolLoop(ScriptedProvider(APPEND_TURNS[1:]), append_host(), persister=store)
        with pytest.raises(SuspendedStateError):
            loop.resume(run_id, approved=True)
        record = store.get_run(run_id)
        assert record is not None and record["status"] == "suspended"
    approve = CliRunner().invoke(main, ["runs", "approve", run_id, "--db", str(db)])
    assert approve.exit_code == 1 and "missing or altered" in approve.output
    discard = CliRunner().invoke(main, ["runs", "discard", run_id, "--db", str(db)])
    assert discard.exit_code == 0, discard.output
    assert "Discarded run" in discard.output
    with AgentRunPersister(db) as store:
        record = store.get_run(run_id)
        assert record is not None
        assert (record["status"], record["termination_reason"]) == ("cancelled", "discarded")
        assert record["claimed_by"] is not None and record["claimed_by"].startswith("cli on ")
    assert not any(name.startswith("audit.db-suspended/") for name in owned_files(db))
    again = CliRunner().invoke(main, ["runs", "discard", run_id, "--db", str(db)])
    assert again.exit_code == 1 and "was discarded by cli on" in again.output


def test_a_state_in_the_old_column_moves_out_on_upgrade(tmp_path: Path) -> None:
    """A schema-2 database with a waiting run's state in ``runs.suspended_state``: the first
    persister of this version moves it to a state file, clears the column, and the run
    resumes from the file; the canary is in no database file afterwards."""
    db = tmp_path / "audit.db"
    state = waiting_state("old")
    conn = sqlite3.connect(db, isolation_level=None)
    assert _audit_schema.migrate(conn, target=2) == 2
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA secure_delete = ON")
    conn.execute(
        "INSERT INTO runs (id, status, started_at, privacy_level, suspended_state) "
        "VALUES ('old', 'suspended', '2020-01-01T00:00:00.000000Z', 'metadata', ?)",
        (json.dumps(state),),
    )
    conn.execute(
        "INSERT INTO runs (id, status, started_at, privacy_level, suspended_state) "
        "VALUES ('done', 'completed', '2020-01-01T00:00:00.000000Z', 'metadata', ?)",
        (json.dumps({"messages": [{"role": "user", "content": CANARY + "-settled"}]}),),
    )
    conn.close()
    with AgentRunPersister(db) as store:
        record = store.get_run("old")
        assert record is not None and record["suspended"] is True
        assert store.load_suspended("old") == state
        held = files_holding(db, [CANARY, CANARY + "-settled"])
        assert set(held) == {CANARY}
        assert all(name.startswith("audit.db-suspended/") for name in held[CANARY])
        assert store.claim_suspended("old") == state
        assert files_holding(db, [CANARY]) == {}
