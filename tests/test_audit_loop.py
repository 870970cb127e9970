"""The real ToolLoop recording into the real SQLite store: a run, a suspension, a resume."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nr_llm_core import AgentRunPersister, PrivacyLevel, ScriptedProvider, ToolHost, ToolLoop
from nr_llm_core.errors import ApprovalError
from nr_llm_core.loop import TerminationReason

from .loop._tools import CANARIES, LOOKUP_CONTENT, Explode, Lookup, Writer


def call(name: str, arguments: dict[str, Any], id: str) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "id": id}


def loop_for(
    store: AgentRunPersister, *turns: Any, privacy: PrivacyLevel | None = None
) -> ToolLoop:
    host = ToolHost()
    for plugin in (Lookup(), Explode(), Writer()):
        host.register(plugin)
    return ToolLoop(ScriptedProvider(turns), host, persister=store, privacy=privacy)


def db_bytes(db: Path) -> bytes:
    """Every file the store owns: the database, -wal/-shm, and its state directory."""
    owned = (p for p in db.parent.iterdir() if p.name.startswith(db.name))
    files = (f for p in owned for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file())
    return b"".join(f.read_bytes() for f in files)


def test_a_run_is_recorded_and_settled_without_artifacts(tmp_path: Path) -> None:
    db = tmp_path / "loop.db"
    with AgentRunPersister(db) as store:
        loop = loop_for(
            store,
            {"tool_calls": [call("lookup", {"id": 42}, "a"), call("explode", {}, "b")]},
            "all done",
        )
        result = loop.run("who is 42?")
        assert result.termination_reason is TerminationReason.COMPLETED
        record = store.get_run(result.run_id)
        steps = store.steps(result.run_id)
        assert [s["seq"] for s in steps] == list(range(1, len(steps) + 1))
        assert [s["kind"] for s in steps].count("tool") == 2
        assert record is not None
        assert record["status"] == "completed"
        assert record["termination_reason"] == "completed"
        assert record["iterations"] == result.iterations
        data = db_bytes(db)
    for canary in (*CANARIES, LOOKUP_CONTENT):
        assert canary.encode() not in data
    data = db_bytes(db)  # closed: the WAL is folded into the file
    for canary in (*CANARIES, LOOKUP_CONTENT):
        assert canary.encode() not in data


def test_the_loop_privacy_argument_sets_the_run_level(tmp_path: Path) -> None:
    with AgentRunPersister(tmp_path / "full.db") as store:
        loop = loop_for(store, "plain answer", privacy=PrivacyLevel.FULL)
        result = loop.run("hello")
        assert store.get_run(result.run_id)["privacy_level"] == "full"
        assert any(s["step"].get("content") == "plain answer" for s in store.steps(result.run_id))


def test_suspend_and_resume_through_the_store(tmp_path: Path) -> None:
    db = tmp_path / "approval.db"
    turns = (
        {"tool_calls": [call("lookup", {"id": 42}, "first")]},
        {"tool_calls": [call("write_note", {"text": "hi"}, "w1")]},
        "all done",
    )
    with AgentRunPersister(db) as store:
        result = loop_for(store, *turns).run("note it")
        assert result.termination_reason is TerminationReason.AWAITING_APPROVAL
        run = result.run_id
        assert store.get_run(run)["status"] == "suspended"
        assert store.load_suspended(run) == result.suspended.to_dict()
        for canary in CANARIES:  # the saved state and the steps hold no artifact byte
            assert canary.encode() not in db_bytes(db)

    # Another process, another persister: resume by run id from the file.
    with AgentRunPersister(db) as store:
        loop = loop_for(store, *turns[2:])
        done = loop.resume(run, approved=True)
        assert done.termination_reason is TerminationReason.COMPLETED
        assert store.get_run(run)["status"] == "completed"
        assert store.load_suspended(run) is None
        kinds = [s["kind"] for s in store.steps(run)]
        assert "approval" in kinds
        assert [s["seq"] for s in store.steps(run)] == list(range(1, len(kinds) + 1))
        with pytest.raises(ApprovalError):
            loop.resume(run, approved=True)  # no replay
