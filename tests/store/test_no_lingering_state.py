"""13.4: once a suspended run is resumed, denied, settled or discarded, its saved state (the
prompt, earlier tool output, the pending arguments) is in no file the store owns, while the
store stays open and another process holds a reader connection with an old snapshot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nr_llm_core import AgentRunPersister, ScriptedProvider, ToolHost, ToolLoop, hookimpl
from nr_llm_core.loop import TerminationReason
from nr_llm_core.results import ToolResult, ToolSpec

from ._support import files_holding, owned_files, second_reader

PROMPT = "PROMPT-CANARY-5b1e"
OUTPUT = "OUTPUT-CANARY-93ac"
ARGS = "ARGS-CANARY-0d47"


class Fetch:
    """Answers with the earlier-tool-output canary (it rides in the saved messages)."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("fetch", "Fetch a page.", data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.text(f"the page says {OUTPUT}")


class Send:
    """Needs approval; its pending arguments hold the arguments canary."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(
            "send",
            "Send a message.",
            {"type": "object", "properties": {"text": {"type": "string"}}},
            data_class="public",
            requires_approval=True,
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.text("sent")


TURNS: list[Any] = [
    {"tool_calls": [{"id": "f1", "name": "fetch", "arguments": {}}]},
    {"tool_calls": [{"id": "s1", "name": "send", "arguments": {"text": ARGS}}]},
    "all done",
]


def loop(store: AgentRunPersister, turns: list[Any]) -> ToolLoop:
    host = ToolHost()
    host.register(Fetch())
    host.register(Send())
    return ToolLoop(ScriptedProvider(turns), host, persister=store)


@pytest.mark.parametrize("level", ["none", "metadata"])
@pytest.mark.parametrize("ending", ["resume", "deny", "settle", "discard", "purge"])
def test_the_saved_state_leaves_every_file_while_the_store_stays_open(
    tmp_path: Path, level: str, ending: str
) -> None:
    """Suspend a run whose state holds three canaries, open a second process's persister and a
    read transaction (which stops any checkpoint from resetting the WAL), then end the
    suspension (resume, deny, settle, discard, or purge the run) with the store still open: no
    canary may remain in the database, its -wal, -shm, -journal or any state directory."""
    db = tmp_path / "audit.db"
    with AgentRunPersister(db, privacy=level) as store:
        paused = loop(store, TURNS).run(PROMPT)
        assert paused.termination_reason is TerminationReason.AWAITING_APPROVAL
        wanted = (PROMPT, OUTPUT, ARGS)
        # The test can fail: while the run waits, the state (all three) is in a store file.
        assert set(files_holding(db, wanted)) == set(wanted), owned_files(db).keys()
        with second_reader(db):
            if ending in ("resume", "deny"):
                done = loop(store, TURNS[2:]).resume(paused.run_id, approved=ending == "resume")
                assert done.termination_reason is TerminationReason.COMPLETED
            elif ending == "settle":
                store.settle_cancelled(paused.run_id, termination_reason="cancelled")
            elif ending == "discard":
                store.discard(paused.run_id)
            else:
                assert store.purge(0) == 1
            record = store.get_run(paused.run_id)
            assert (record is None) if ending == "purge" else (record["suspended"] is False)
            assert files_holding(db, wanted) == {}
        assert files_holding(db, wanted) == {}
    assert files_holding(db, wanted) == {}


def test_a_second_suspension_of_one_run_replaces_the_first(tmp_path: Path) -> None:
    """A run suspended twice (two approval turns): while it waits the second time, its one
    state file (which holds the whole conversation, the first turn included) is the only
    place either turn's arguments are; after the decision, nowhere."""
    db = tmp_path / "audit.db"
    turns: list[Any] = [
        {"tool_calls": [{"id": "s1", "name": "send", "arguments": {"text": "FIRST-ARGS-77"}}]},
        {"tool_calls": [{"id": "s2", "name": "send", "arguments": {"text": "SECOND-ARGS-88"}}]},
        "done",
    ]
    with AgentRunPersister(db) as store, second_reader(db):
        paused = loop(store, turns).run("go")
        again = loop(store, turns[1:]).resume(paused.run_id, approved=True)
        assert again.termination_reason is TerminationReason.AWAITING_APPROVAL
        held = files_holding(db, ["FIRST-ARGS-77", "SECOND-ARGS-88"])
        assert set(held) == {"FIRST-ARGS-77", "SECOND-ARGS-88"}
        (state_file,) = {name for names in held.values() for name in names}
        assert state_file.startswith("audit.db-suspended/")
        loop(store, turns[2:]).resume(paused.run_id, approved=False)
        assert files_holding(db, ["FIRST-ARGS-77", "SECOND-ARGS-88"]) == {}
