"""ChatMessage and ToolCall: the only shape a conversation has, and how tool calls are read."""

from __future__ import annotations

import attrs
import pytest

from nr_llm_core.messages import ChatMessage, Role, ToolCall
from nr_llm_core.providers._parse import RawCall, keep_tool_calls, parse_arguments
from nr_llm_core.results import Artifact, ToolResult


def test_factories_build_each_role() -> None:
    call = ToolCall(id="c1", name="echo", arguments={"x": 1})
    assert ChatMessage.system("s").role is Role.SYSTEM
    assert ChatMessage.user("u").role is Role.USER
    assert ChatMessage.assistant("a").content == "a"
    with_calls = ChatMessage.assistant_tool_calls([call])
    assert with_calls.tool_calls == (call,)
    assert with_calls.content is None
    tool = ChatMessage.tool_result("c1", "done")
    assert (tool.role, tool.tool_call_id, tool.content) == (Role.TOOL, "c1", "done")


def test_tool_result_takes_a_str_only() -> None:
    result = ToolResult.text("ok", Artifact.text("label", "secret"))
    with pytest.raises(TypeError, match=r"result\.content"):
        ChatMessage.tool_result("c1", result)  # type: ignore[arg-type]
    for bad in (b"bytes", None, 3, ["x"], {"content": "x"}):
        with pytest.raises(TypeError):
            ChatMessage.tool_result("c1", bad)  # type: ignore[arg-type]


def test_tool_result_reads_a_str_subclass_as_plain_str() -> None:
    class Evil(str):
        def __str__(self) -> str:
            return "EVIL"

    msg = ChatMessage.tool_result("c1", Evil("real"))
    assert type(msg.content) is str
    assert msg.content == "real"


@pytest.mark.parametrize("role", ["tool", Role.TOOL])
def test_constructor_cannot_build_a_tool_message(role: str) -> None:
    with pytest.raises(TypeError, match="tool_result"):
        ChatMessage(role=role, content="x")


def test_evolve_cannot_turn_a_message_into_a_tool_message() -> None:
    with pytest.raises(TypeError):
        attrs.evolve(ChatMessage.user("x"), role=Role.TOOL)


def test_only_assistant_carries_tool_calls_and_no_artifact_field_exists() -> None:
    call = ToolCall(id="c1", name="echo")
    with pytest.raises(TypeError):
        ChatMessage(role="user", content="x", tool_calls=[call])
    with pytest.raises(ValueError, match="at least one"):
        ChatMessage.assistant_tool_calls([])
    names = {f.name for f in attrs.fields(ChatMessage)}
    assert names == {"role", "content", "tool_calls", "tool_call_id"}
    assert {f.name for f in attrs.fields(ToolCall)} == {
        "id",
        "name",
        "arguments",
        "arguments_error",
    }
    with pytest.raises(AttributeError):
        ChatMessage.user("x").artifacts = ()  # type: ignore[attr-defined]


def test_dict_round_trip() -> None:
    msgs = [
        ChatMessage.system("s"),
        ChatMessage.user("u"),
        ChatMessage.assistant_tool_calls(
            [ToolCall(id="c1", name="t", arguments={"a": [1]}, arguments_error=None)], text="hm"
        ),
        ChatMessage.tool_result("c1", "r"),
        ChatMessage.assistant("done"),
    ]
    assert [ChatMessage.from_dict(m.to_dict()) for m in msgs] == msgs


def test_from_dict_refuses_malformed_records() -> None:
    with pytest.raises(ValueError):  # Role(...) says which value
        ChatMessage.from_dict({"role": "wizard", "content": "x"})
    with pytest.raises(TypeError):
        ChatMessage.from_dict({"role": "tool", "tool_call_id": "c", "content": 5})
    with pytest.raises(TypeError):
        ChatMessage.from_dict({"role": "user", "content": "x", "tool_calls": "nope"})
    with pytest.raises(TypeError):
        ChatMessage.from_dict(["role", "user"])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"a": 1}', ({"a": 1}, None)),
        ("", ({}, None)),
        (None, ({}, None)),
        ({"a": 1}, ({"a": 1}, None)),
        ("{not json", ({}, "arguments are not valid JSON")),
        ("[1, 2]", ({}, "arguments must be a JSON object")),
        ('"str"', ({}, "arguments must be a JSON object")),
        ("NaN", ({}, "arguments are not valid JSON")),
        ("[" * 100_000, ({}, "arguments are not valid JSON")),
        (42, ({}, "arguments must be a JSON object")),
        ('{"a": 1e999}', ({}, "arguments are not valid JSON")),
        ('{"a": "\\ud800"}', ({}, "arguments are not valid JSON")),
        ({"a": float("nan")}, ({}, "arguments are not valid JSON")),
    ],
)
def test_parse_arguments(raw: object, expected: tuple[dict[str, object], str | None]) -> None:
    assert parse_arguments(raw) == expected


def test_keep_tool_calls_drops_nameless_and_repairs_ids() -> None:
    calls, dropped = keep_tool_calls(
        [
            RawCall("a", "echo", "{}"),
            RawCall(None, "echo", "{}"),  # missing id -> host id
            RawCall("a", "echo", "{}"),  # repeated id -> host id
            RawCall("b", None, "{}"),  # missing name -> dropped
            RawCall("c", "bad name!", "{}"),  # a name no provider accepts -> dropped
            RawCall("x" * 500, "echo", "oops"),  # odd id, bad JSON -> kept with a marker
        ]
    )
    assert dropped == 2
    ids = [c.id for c in calls]
    assert ids[0] == "a"
    assert len(set(ids)) == len(ids) == 4
    assert all(i.startswith("nrllm_call_") for i in ids[1:])
    assert calls[3].arguments == {}
    assert calls[3].arguments_error == "arguments are not valid JSON"
