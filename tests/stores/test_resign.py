"""The approval digest becomes an HMAC under the host secret (ADR 0024): a state that was
waiting in a SQLite store when it is upgraded is re-signed once, and a keyless (version-1)
state met anywhere after that is refused."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from nr_llm_core import ScriptedProvider, ToolLoop, _audit_schema, _audit_states
from nr_llm_core.approval import SuspendedRunState
from nr_llm_core.audit import AgentRunPersister
from nr_llm_core.errors import ApprovalError

from ..loop.test_provider_usage import SAVED_BEFORE
from ..store._support import owned_files


def waiting_at_schema_3(db: Path) -> str:
    """A schema-3 database (the version before the key) with one run waiting on the
    version-1 state ``SAVED_BEFORE``, its file written as that version wrote it."""
    conn = sqlite3.connect(db, isolation_level=None)
    _audit_schema.migrate(conn, target=3)
    data = SAVED_BEFORE.encode()
    name, sha256 = _audit_states.write(_audit_states.state_dir(db), data)
    conn.execute(
        "INSERT INTO runs (id, status, started_at, privacy_level, state_file, state_sha256, "
        "state_digest) VALUES ('r1', 'suspended', '2026-01-01T00:00:00.000000Z', 'metadata', "
        "?, ?, ?)",
        (name, sha256, json.loads(SAVED_BEFORE)["digest"]),
    )
    conn.close()
    return name


def test_the_upgrade_re_signs_a_waiting_state_and_wipes_the_old_file(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    old_name = waiting_at_schema_3(db)
    with AgentRunPersister(db) as store:
        data = store.load_suspended("r1")
        assert data is not None
        state = SuspendedRunState.from_dict(data)
        state.verify()  # version 2, signed with this host's secret
        assert state.version == 2
        assert state.digest != json.loads(SAVED_BEFORE)["digest"]
        assert state.messages == SuspendedRunState.from_json(SAVED_BEFORE).messages
        assert store.claim_suspended("r1", digest=state.digest)["digest"] == state.digest
    version = sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0]
    assert version == _audit_schema.SCHEMA_VERSION
    assert not any(old_name in name for name in owned_files(db))


def test_a_keyless_state_is_refused_wherever_it_is_met() -> None:
    state = SuspendedRunState.from_json(SAVED_BEFORE)
    assert state.compute_digest() == state.digest  # intact, but anyone could have made it
    with pytest.raises(ApprovalError, match="version 1 is not supported"):
        state.verify()
    loop = ToolLoop(ScriptedProvider(["x"]), __import__("nr_llm_core").ToolHost())
    with pytest.raises(ApprovalError, match="version 1 is not supported"):
        loop.resume(state, approved=True)


def test_another_host_secret_refuses_the_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A state signed under one secret does not verify under another: machines that share a
    store must share the secret, and the message says so."""
    monkeypatch.setenv("NR_LLM_SECRET", "a" * 40)
    state = SuspendedRunState.create(
        run_id="r1",
        messages=SuspendedRunState.from_json(SAVED_BEFORE).messages,
        pending=SuspendedRunState.from_json(SAVED_BEFORE).pending,
        needs_approval=("call_1",),
        iterations=1,
        tool_rounds=0,
        usage=SuspendedRunState.from_json(SAVED_BEFORE).usage,
        allowed=None,
    )
    state.verify()
    monkeypatch.setenv("NR_LLM_SECRET", "b" * 40)
    with pytest.raises(ApprovalError, match="another host secret"):
        state.verify()
