"""The channel a host-made error's detail takes: the tool step's ``tool_error``, a content key.

The loop asks the host for the failure beside the result and records it; the privacy filter
keeps it verbatim at FULL, redacted at REDACTED, and only its host-worded kind at METADATA.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nr_llm_core import (
    AgentRunPersister,
    PrivacyLevel,
    RunStepPrivacyFilter,
    ScriptedProvider,
    ToolHost,
    ToolLoop,
    ToolResult,
    ToolSpec,
    hookimpl,
)
from nr_llm_core.failures import FailureKind, ToolFailure
from nr_llm_core.messages import ToolCall
from nr_llm_core.providers.base import Completion

from ._tools import Writer

SECRET = "sk-proj-TOOLERRORSECRET" + "Q7w9" * 6
PLAIN = "toolerrorplaincanary"


class DbError(Exception):
    pass


class Failing:
    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("failing", "Fails.", data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        raise DbError(f"{PLAIN} could not connect with {SECRET}")


def call(name: str, arguments: Any, id: str) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "id": id}


def run_at(tmp_path: Path, level: PrivacyLevel) -> tuple[Any, list[dict[str, Any]], bytes]:
    host = ToolHost()
    host.register(Failing())
    turns = [{"tool_calls": [call("failing", {}, "c1"), call("nope", {}, "c2")]}, "done"]
    db = tmp_path / f"{level.value}.db"
    with AgentRunPersister(db, privacy=level) as store:
        result = ToolLoop(ScriptedProvider(turns), host, persister=store, privacy=level).run("go")
        steps = [s["step"] for s in store.steps(result.run_id) if s["step"]["kind"] == "tool"]
    files = b"".join(p.read_bytes() for p in tmp_path.glob(db.name + "*"))
    return result, steps, files


def test_the_loop_keeps_the_failure_beside_the_result(tmp_path: Path) -> None:
    result, _, _ = run_at(tmp_path, PrivacyLevel.FULL)
    failing, unknown = result.invocations
    assert failing.result.content == 'Error: tool "failing" failed.'
    assert failing.failure == ToolFailure(
        kind=FailureKind.FAILED,
        exception_type=f"{__name__}.DbError",
        message=f"{PLAIN} could not connect with {SECRET}",
    )
    assert unknown.failure == ToolFailure(kind=FailureKind.UNKNOWN_TOOL)
    assert PLAIN not in json.dumps([m.to_dict() for m in result.messages])


def test_full_stores_the_detail(tmp_path: Path) -> None:
    _, (failing, unknown), files = run_at(tmp_path, PrivacyLevel.FULL)
    assert failing["tool_error"] == {
        "kind": "failed",
        "exception_type": f"{__name__}.DbError",
        "message": f"{PLAIN} could not connect with {SECRET}",
    }
    assert unknown["tool_error"] == {"kind": "unknown_tool"}
    assert SECRET.encode() in files


def test_redacted_stores_the_detail_with_secrets_masked(tmp_path: Path) -> None:
    _, (failing, _), files = run_at(tmp_path, PrivacyLevel.REDACTED)
    assert failing["tool_error"]["kind"] == "failed"
    assert PLAIN in failing["tool_error"]["message"]
    assert "[REDACTED:" in failing["tool_error"]["message"]
    assert SECRET.encode() not in files


@pytest.mark.parametrize("level", [PrivacyLevel.METADATA, PrivacyLevel.NONE])
def test_metadata_and_none_keep_no_byte_of_the_detail(tmp_path: Path, level: PrivacyLevel) -> None:
    _, (failing, unknown), files = run_at(tmp_path, level)
    assert "tool_error" not in failing
    if level is PrivacyLevel.METADATA:
        assert failing["tool_error_kind"] == "failed"
        assert unknown["tool_error_kind"] == "unknown_tool"
    else:
        assert set(failing) == {"kind", "round", "duration_ms"}
    for canary in (PLAIN, SECRET, "DbError"):
        assert canary.encode() not in files


def test_metadata_keeps_only_a_kind_of_the_hosts_vocabulary() -> None:
    metadata = RunStepPrivacyFilter(PrivacyLevel.METADATA)
    step = {"kind": "tool", "round": 1, "duration_ms": 1.0, "tool_name": "t"}
    for forged in ("secretkind", "FAILED", 7, None):
        record = metadata.filter({**step, "tool_error": {"kind": forged, "message": "m"}})
        assert "tool_error_kind" not in record and "tool_error" not in record
    assert "tool_error_kind" not in metadata.filter({**step, "tool_error": "failed"})
    kept = metadata.filter({**step, "tool_error": {"kind": "timed_out"}})
    assert kept["tool_error_kind"] == "timed_out"


def test_the_loops_own_refusals_have_their_kind() -> None:
    host = ToolHost()
    host.register(Failing())
    broken = ToolCall(
        id="b", name="failing", arguments={}, arguments_error="arguments are too large"
    )
    odd = ToolCall(id="o", name="failing", arguments={"x": {1, 2}})
    turn = Completion(tool_calls=(broken, odd))
    result = ToolLoop(ScriptedProvider([turn, "done"]), host).run("go")
    by_id = {i.call_id: i for i in result.invocations}
    assert by_id["b"].result.content == (
        'Error: invalid arguments for tool "failing": arguments are too large'
    )
    assert by_id["o"].result.content == (
        'Error: invalid arguments for tool "failing": not plain JSON @ $'
    )
    for invocation in by_id.values():
        assert invocation.failure == ToolFailure(kind=FailureKind.INVALID_ARGUMENTS)


def test_a_call_not_approved_has_its_kind() -> None:
    writer = Writer()
    host = ToolHost()
    host.register(writer)
    turn = {"tool_calls": [call("write_note", {"text": "x"}, "w")]}
    loop = ToolLoop(ScriptedProvider([turn, "done"]), host)
    suspended = loop.run("go").suspended
    assert suspended is not None
    [refused] = loop.resume(suspended, approved=False).invocations
    assert refused.result.content == 'Error: the user did not approve the call to "write_note".'
    assert refused.failure == ToolFailure(kind=FailureKind.NOT_APPROVED)
    assert writer.calls == []


def test_an_arguments_error_outside_the_vocabulary_is_not_repeated() -> None:
    """A suspended state or an adapter could carry any text as ``arguments_error``: the
    content reads it through the host's vocabulary."""
    host = ToolHost()
    host.register(Failing())
    odd = ToolCall(id="x", name="failing", arguments={}, arguments_error="CANARYarg said so")
    result = ToolLoop(ScriptedProvider([Completion(tool_calls=(odd,)), "done"]), host).run("go")
    assert result.invocations[0].result.content == (
        'Error: invalid arguments for tool "failing": invalid value @ $'
    )
