"""Human approval: suspend before anything of the turn runs, resume with a bound decision."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from nr_llm_core import (
    ChatMessage,
    OpenAIChatProvider,
    ScriptedProvider,
    SuspendedRunState,
    ToolHost,
    ToolLoop,
)
from nr_llm_core.errors import ApprovalError
from nr_llm_core.loop import TerminationReason

from ._tools import CANARIES, LOOKUP_CONTENT, Lookup, MemoryRecorder, Writer
from ._wire import WireServer
from .test_openai_wire import text_reply, tool_call_reply


def call(name: str, arguments: dict[str, Any], id: str) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "id": id}


def setup(*turns: Any, recorder: MemoryRecorder | None = None) -> tuple[ToolLoop, Writer]:
    writer = Writer()
    host = ToolHost()
    host.register(Lookup())
    host.register(writer)
    return ToolLoop(ScriptedProvider(turns), host, persister=recorder), writer


WRITE_TURN = {
    "tool_calls": [call("lookup", {"id": 42}, "look"), call("write_note", {"text": "hi"}, "w1")]
}


def suspended(recorder: MemoryRecorder | None = None, *more: Any) -> tuple[ToolLoop, Writer, Any]:
    loop, writer = setup(
        {"tool_calls": [call("lookup", {"id": 42}, "first")]},
        WRITE_TURN,
        *(more or ("all done",)),
        recorder=recorder,
    )
    return loop, writer, loop.run("note it")


def test_the_whole_turn_waits_for_approval() -> None:
    recorder = MemoryRecorder()
    _, writer, result = suspended(recorder)
    assert result.termination_reason is TerminationReason.AWAITING_APPROVAL
    state = result.suspended
    assert isinstance(state, SuspendedRunState)
    assert [c.id for c in state.pending] == ["look", "w1"]
    assert state.needs_approval == ("w1",)
    # Nothing of the turn ran: not the writer, and not the harmless lookup beside it.
    assert writer.calls == []
    assert [i.call_id for i in result.invocations] == ["first"]
    assert recorder.suspended[result.run_id] == state.to_dict()
    assert recorder.runs[result.run_id]["status"] == "awaiting_approval"


def test_the_saved_state_holds_no_artifact() -> None:
    _, _, result = suspended()
    text = result.suspended.to_json()
    assert LOOKUP_CONTENT in text  # the content string of the earlier round is kept
    for canary in CANARIES:
        assert canary not in text
    assert "artifact" not in text


def test_approve_all_runs_the_calls_and_continues() -> None:
    recorder = MemoryRecorder()
    loop, writer, result = suspended(recorder)
    state = SuspendedRunState.from_json(result.suspended.to_json())
    done = loop.resume(state, approved=True, digest=state.digest)
    assert done.termination_reason is TerminationReason.COMPLETED
    assert done.content == "all done"
    assert writer.calls == [{"text": "hi"}]
    assert [i.call_id for i in done.invocations] == ["look", "w1"]
    kinds = [s.kind.value for s in done.trace.steps]
    assert kinds == ["approval", "tool", "tool", "request", "llm"]
    assert done.trace.steps[0].to_dict()["approvals"] == {"w1": True}
    assert recorder.runs[result.run_id]["status"] == "completed"
    assert result.run_id not in recorder.suspended


def test_deny_answers_with_a_refusal_and_continues() -> None:
    loop, writer, result = suspended()
    done = loop.resume(result.suspended, approved=False)
    assert writer.calls == []
    by_id = {i.call_id: i.result.content for i in done.invocations}
    assert by_id["w1"] == 'Error: the user did not approve the call to "write_note".'
    assert by_id["look"] == LOOKUP_CONTENT  # needed no approval
    assert done.termination_reason is TerminationReason.COMPLETED


def test_a_mapping_decides_per_call_and_missing_means_refused() -> None:
    turn = {
        "tool_calls": [
            call("write_note", {"text": "a"}, "wa"),
            call("write_note", {"text": "b"}, "wb"),
            call("write_note", {"text": "c"}, "wc"),
        ]
    }
    loop, writer = setup(turn, "ok")
    state = loop.run("go").suspended
    done = loop.resume(state, approved={"wb": True, "wc": False})
    assert writer.calls == [{"text": "b"}]
    assert done.trace.steps[0].to_dict()["approvals"] == {"wa": False, "wb": True, "wc": False}


def test_a_stale_digest_is_refused() -> None:
    loop, writer, result = suspended()
    with pytest.raises(ApprovalError, match="stale"):
        loop.resume(result.suspended, approved=True, digest="0" * 64)
    assert writer.calls == []


def test_an_altered_state_is_refused() -> None:
    loop, writer, result = suspended()
    state = result.suspended
    evil_call = attrs.evolve(state.pending[1], arguments={"text": "rm -rf"})
    altered_msgs = (
        *state.messages[:-1],
        ChatMessage.assistant_tool_calls([state.pending[0], evil_call]),
    )
    altered = attrs.evolve(state, messages=altered_msgs, pending=(state.pending[0], evil_call))
    with pytest.raises(ApprovalError, match="digest"):
        loop.resume(altered, approved=True)
    # Even with a recomputed digest, the approver's digest binds what they saw.
    rehashed = attrs.evolve(altered, digest=altered.compute_digest())
    with pytest.raises(ApprovalError, match="stale"):
        loop.resume(rehashed, approved=True, digest=state.digest)
    assert writer.calls == []


@pytest.mark.parametrize("approved", [{"nope": True}, {"w1": "yes"}, {"w1": 1}])
def test_bad_decisions_are_refused(approved: Any) -> None:
    loop, writer, result = suspended()
    with pytest.raises(ApprovalError):
        loop.resume(result.suspended, approved=approved)
    assert writer.calls == []


def test_approved_must_be_a_bool_or_mapping() -> None:
    loop, _, result = suspended()
    with pytest.raises(TypeError):
        loop.resume(result.suspended, approved="yes")  # type: ignore[arg-type]


def test_resume_by_run_id_through_the_recorder() -> None:
    recorder = MemoryRecorder()
    loop, writer, result = suspended(recorder)
    done = loop.resume(result.run_id, approved=True)
    assert done.content == "all done"
    assert writer.calls == [{"text": "hi"}]
    with pytest.raises(ApprovalError, match="not waiting"):
        loop.resume(result.run_id, approved=True)
    # Nor can the state object be replayed once the stored run has moved on.
    with pytest.raises(ApprovalError, match="not waiting"):
        loop.resume(result.suspended, approved=True)
    assert writer.calls == [{"text": "hi"}]


def test_with_a_store_the_stored_turn_is_the_one_approved() -> None:
    recorder = MemoryRecorder()
    loop, writer, result = suspended(recorder)
    other = attrs.evolve(result.suspended, run_id="run-1", iterations=9)
    other = attrs.evolve(other, digest=other.compute_digest())
    with pytest.raises(ApprovalError, match="stale"):
        loop.resume(other, approved=True)
    assert writer.calls == []


def test_the_gate_is_applied_again_on_resume() -> None:
    """A tool disabled since the run was suspended: approving its call is refused before
    anything is claimed or run (the approval would run nothing), saying which tool and that
    the run still waits; denying it answers the call and the run goes on."""
    recorder = MemoryRecorder()
    _, writer, result = suspended(recorder)
    host = ToolHost(disable=["write_note"])
    host.register(Lookup())
    host.register(writer)
    later = ToolLoop(ScriptedProvider(["after"]), host, persister=recorder)
    with pytest.raises(ApprovalError, match=r'tool "write_note" .*not offered.*still waits'):
        later.resume(result.run_id, approved=True)
    assert writer.calls == []
    assert recorder.runs[result.run_id]["status"] == "awaiting_approval"
    assert recorder.load_suspended(result.run_id) is not None
    done = later.resume(result.run_id, approved=False)
    by_id = {i.call_id: i.result.content for i in done.invocations}
    assert by_id["w1"] == 'Error: tool "write_note" not permitted'
    assert writer.calls == []
    # An external provider no longer gets the lookup either when the zone changes.
    external = ToolLoop(ScriptedProvider(["after"], trust_zone="external"), host)
    assert [s.name for s in external.offer()] == ["lookup"]


def test_from_dict_is_strict() -> None:
    _, _, result = suspended()
    data = result.suspended.to_dict()
    for key, value in [("iterations", "2"), ("run_id", 5), ("extra", 1)]:
        broken = {**data, key: value}
        with pytest.raises(ApprovalError):
            SuspendedRunState.from_dict(broken)
    with pytest.raises(ApprovalError):
        SuspendedRunState.from_json("[]")
    with pytest.raises(ApprovalError):
        SuspendedRunState.from_json("{bad")


def test_suspend_and_resume_on_the_openai_wire() -> None:
    replies = [
        tool_call_reply(("call_look", "lookup", '{"id": 42}')),
        tool_call_reply(("call_write", "write_note", '{"text": "hello"}')),
        text_reply("Noted."),
    ]
    recorder = MemoryRecorder()
    writer = Writer()
    host = ToolHost()
    host.register(Lookup())
    host.register(writer)
    with WireServer(replies) as server:
        provider = OpenAIChatProvider(f"{server.url}/v1", "m", "sk-x", max_retries=0)
        loop = ToolLoop(provider, host, persister=recorder)
        paused = loop.run("note customer 42")
        assert paused.termination_reason is TerminationReason.AWAITING_APPROVAL
        stored = SuspendedRunState.from_dict(recorder.load_suspended(paused.run_id) or {})
        done = loop.resume(stored, approved={"call_write": True}, digest=paused.suspended.digest)
    assert done.content == "Noted."
    assert writer.calls == [{"text": "hello"}]
    last = server.requests[-1].json()["messages"]
    assert last[-1] == {"role": "tool", "tool_call_id": "call_write", "content": "wrote 'hello'"}
    wire = server.all_bytes() + paused.suspended.to_json().encode()
    for canary in CANARIES:
        assert canary.encode() not in wire, canary
