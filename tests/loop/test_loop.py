"""The tool loop with the scripted provider and real tools in a real ToolHost."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from nr_llm_core import ChatMessage, ProviderError, ScriptedProvider, ToolCall, ToolLoop, hookimpl
from nr_llm_core.loop import MAX_ITERATIONS_CAP, TerminationReason
from nr_llm_core.providers import Completion, TrustZone, Usage
from nr_llm_core.results import ToolResult, ToolSpec
from nr_llm_core.trace import RunStep, RunTrace

from ._tools import (
    CANARIES,
    EXC_CANARY,
    LOOKUP_CONTENT,
    Explode,
    Internal,
    Lookup,
    MemoryRecorder,
    Undeclared,
    make_host,
)


def call(
    name: str, arguments: dict[str, Any] | None = None, id: str | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "arguments": arguments or {}}
    if id:
        out["id"] = id
    return out


def sent_text(provider: ScriptedProvider) -> str:
    return repr([[m.to_dict() for m in msgs] for msgs, _ in provider.requests])


def test_tool_content_reaches_the_next_request_and_artifacts_do_not() -> None:
    provider = ScriptedProvider(
        [
            {"tool_calls": [call("lookup", {"id": 42}, "c-1"), call("explode", {}, "c-2")]},
            "Ada it is.",
        ]
    )
    result = ToolLoop(provider, make_host()).run("who is 42?")
    assert result.termination_reason is TerminationReason.COMPLETED
    assert result.content == "Ada it is."
    assert result.iterations == 2
    assert not result.truncated
    second = provider.requests[1][0]
    tool_msgs = [m for m in second if m.tool_call_id]
    assert [(m.tool_call_id, m.content) for m in tool_msgs] == [
        ("c-1", LOOKUP_CONTENT),
        ("c-2", 'Error: tool "explode" failed.'),
    ]
    text = sent_text(provider)
    for canary in CANARIES:
        assert canary not in text
    # The artifacts did reach the trace (the only place they go).
    lookup = result.invocations[0]
    assert lookup.call_id == "c-1"
    assert len(lookup.result.artifacts) == 2
    kinds = [s.kind.value for s in result.trace.steps]  # type: ignore[union-attr]
    assert kinds == ["request", "llm", "tool", "tool", "request", "llm"]


def test_exception_text_never_enters_the_conversation() -> None:
    provider = ScriptedProvider([{"tool_calls": [call("explode")]}, "ok"])
    result = ToolLoop(provider, make_host()).run("go")
    assert EXC_CANARY not in repr([m.to_dict() for m in result.messages])


def test_allowed_narrows_the_offer_and_is_rechecked_at_execution() -> None:
    host = make_host(Lookup(), Explode())
    provider = ScriptedProvider([{"tool_calls": [call("explode", id="x")]}, "fine"])
    result = ToolLoop(provider, host).run("go", allowed=["lookup"])
    assert provider.requests[0][1] == ("lookup",)
    assert result.invocations[0].result.content == 'Error: tool "explode" not permitted'
    assert result.invocations[0].result.is_error


def test_unknown_tool_and_invalid_arguments_are_answered_not_run() -> None:
    host = make_host()
    bad = Completion(
        tool_calls=(
            ToolCall(id="a", name="nope"),
            ToolCall(id="b", name="lookup", arguments_error="arguments are not valid JSON"),
            ToolCall(id="c", name="lookup", arguments={"id": "forty-two"}),
        )
    )
    provider = ScriptedProvider([bad, "done"])
    result = ToolLoop(provider, host).run("go")
    contents = [i.result.content for i in result.invocations]
    assert contents[0] == 'Error: unknown tool "nope"'
    assert contents[1] == 'Error: invalid arguments for tool "lookup": arguments are not valid JSON'
    assert contents[2].startswith('Error: invalid arguments for tool "lookup":')
    assert result.termination_reason is TerminationReason.COMPLETED


@pytest.mark.parametrize(
    ("zone", "offered"),
    [
        ("local", ("env_dump", "internal_report", "lookup")),
        ("private-hosted", ("internal_report", "lookup")),
        ("external", ("lookup",)),
    ],
)
def test_trust_zone_gate(zone: str, offered: tuple[str, ...]) -> None:
    host = make_host(Lookup(), Internal(), Undeclared())
    provider = ScriptedProvider([{"tool_calls": [call("env_dump", id="e")]}, "ok"], trust_zone=zone)
    result = ToolLoop(provider, host).run("go")
    assert provider.requests[0][1] == offered
    first = result.invocations[0].result
    if "env_dump" in offered:
        assert first.content == "PATH=/usr/bin"
    else:
        assert first.content == 'Error: tool "env_dump" not permitted'


class _NoZone:
    def __init__(self, zone: object = None) -> None:
        if zone is not None:
            self.trust_zone = zone
        self.tools: list[tuple[str, ...]] = []

    def complete(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> Completion:
        self.tools.append(tuple(t.name for t in tools))
        return Completion(content="hi")


@pytest.mark.parametrize("zone", [None, "moon", 3, TrustZone.EXTERNAL])
def test_unknown_zone_is_the_strictest(zone: object) -> None:
    provider = _NoZone(zone)
    ToolLoop(provider, make_host(Lookup(), Internal(), Undeclared())).run("go")  # type: ignore[arg-type]
    assert provider.tools == [("lookup",)]


def test_empty_offer_is_one_plain_completion() -> None:
    provider = ScriptedProvider([{"tool_calls": [call("lookup", {"id": 42})]}, "unused"])
    result = ToolLoop(provider, make_host()).run("go", allowed=[])
    assert len(provider.requests) == 1
    assert provider.requests[0][1] == ()
    assert result.termination_reason is TerminationReason.COMPLETED
    assert result.invocations == ()
    llm = result.trace.steps[1].to_dict()  # type: ignore[union-attr]
    assert llm["notes"] == ["tool calls not answered: no tools were offered"]


def test_round_cap_then_one_final_completion_without_tools() -> None:
    turns: list[Any] = [{"tool_calls": [call("lookup", {"id": 1})]} for _ in range(3)]
    provider = ScriptedProvider([*turns, "best effort"])
    result = ToolLoop(provider, make_host(), max_iterations=3).run("go")
    assert result.termination_reason is TerminationReason.MAX_ITERATIONS
    assert result.truncated
    assert result.content == "best effort"
    assert [tools for _, tools in provider.requests] == [("explode", "lookup")] * 3 + [()]
    assert len(result.invocations) == 3
    assert result.iterations == 4


def test_default_is_five_and_requests_are_clamped() -> None:
    assert ToolLoop(ScriptedProvider([]), make_host()).max_iterations == 5
    assert ToolLoop(ScriptedProvider([]), make_host(), max_iterations=1000).max_iterations == (
        MAX_ITERATIONS_CAP
    )
    assert ToolLoop(ScriptedProvider([]), make_host(), max_iterations=0).max_iterations == 1
    with pytest.raises(TypeError):
        ToolLoop(ScriptedProvider([]), make_host(), max_iterations="5")  # type: ignore[arg-type]


def test_budget_exhausted_stops_before_running_more_tools() -> None:
    usage = Usage(input_tokens=60, output_tokens=50)
    turns = [
        Completion(
            tool_calls=(ToolCall(id="1", name="lookup", arguments={"id": 42}),), usage=usage
        ),
        Completion(
            tool_calls=(ToolCall(id="2", name="lookup", arguments={"id": 42}),), usage=usage
        ),
        "never reached",
    ]
    result = ToolLoop(ScriptedProvider(turns), make_host(), token_budget=200).run("go")
    assert result.termination_reason is TerminationReason.BUDGET_EXHAUSTED
    assert [i.call_id for i in result.invocations] == ["1"]
    assert result.usage == Usage(input_tokens=120, output_tokens=100)
    assert result.messages[-1].content == "Not run: the token budget is spent."


def test_usage_is_summed() -> None:
    turns = [
        Completion(
            tool_calls=(ToolCall(id="1", name="lookup", arguments={"id": 1}),),
            usage=Usage(input_tokens=10, output_tokens=2),
        ),
        Completion(content="x", usage=Usage(input_tokens=30, output_tokens=5)),
    ]
    result = ToolLoop(ScriptedProvider(turns), make_host()).run("go")
    assert result.usage == Usage(input_tokens=40, output_tokens=7)


class _Raising:
    trust_zone = "local"

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def complete(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> Completion:
        raise self.exc


class _Garbage:
    trust_zone = "local"

    def __init__(self, value: object) -> None:
        self.value = value

    def complete(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> Any:
        return self.value


@pytest.mark.parametrize(
    ("provider", "reason"),
    [
        (_Raising(ProviderError("the provider is down")), "provider error: the provider is down"),
        (_Raising(KeyError("sk-secret")), "provider error: the provider raised KeyError"),
        (
            _Garbage({"content": "hi"}),
            "provider error: the provider returned an invalid completion",
        ),
        (
            _Garbage(Completion(content=b"x")),
            "provider error: the provider returned an invalid completion",
        ),  # type: ignore[arg-type]
        (ScriptedProvider([]), "provider error: the scripted provider has no more turns"),
    ],
)
def test_provider_faults_end_the_run_as_failed(provider: Any, reason: str) -> None:
    recorder = MemoryRecorder()
    result = ToolLoop(provider, make_host(), persister=recorder).run("go")
    assert result.termination_reason is TerminationReason.FAILED
    assert result.error == reason
    assert "sk-secret" not in reason
    assert result.content == ""
    assert result.trace.steps[-1].to_dict()["reason"] == reason  # type: ignore[union-attr]
    assert recorder.runs[result.run_id]["status"] == "failed"


def test_every_step_reaches_listeners_and_the_recorder() -> None:
    seen: list[str] = []

    def listener(trace: RunTrace, step: RunStep) -> None:
        seen.append(step.kind.value)

    recorder = MemoryRecorder()
    provider = ScriptedProvider([{"tool_calls": [call("lookup", {"id": 42})]}, "done"])
    result = ToolLoop(
        provider, make_host(), persister=recorder, trace_listeners=[listener], privacy="metadata"
    ).run("go")
    assert result.run_id == "run-1"
    assert seen == ["request", "llm", "tool", "request", "llm"]
    assert [s.kind.value for s in recorder.steps["run-1"]] == seen
    assert recorder.runs["run-1"]["meta"] == {"provider": "ScriptedProvider", "privacy": "metadata"}
    assert recorder.runs["run-1"]["termination_reason"] == "completed"
    assert recorder.runs["run-1"]["iterations"] == 2


def test_dropped_tool_calls_are_noted_in_the_llm_step() -> None:
    provider = ScriptedProvider([Completion(content="hmm", dropped_tool_calls=2)])
    result = ToolLoop(provider, make_host()).run("go")
    llm = result.trace.steps[1].to_dict()  # type: ignore[union-attr]
    assert llm["notes"] == ["dropped 2 tool call(s) without a name"]
    assert result.content == "hmm"


def test_run_validates_its_inputs() -> None:
    loop = ToolLoop(ScriptedProvider(["x"]), make_host())
    with pytest.raises(TypeError):
        loop.run("go", allowed="lookup")
    with pytest.raises(TypeError):
        loop.run([{"role": "user", "content": "x"}])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="at least one"):
        loop.run([])


class _Named:
    """A stand-in for a builtin tool of the same name (the builtins live on another branch)."""

    def __init__(self, name: str) -> None:
        self.name = name

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(self.name, "stand-in", {"type": "object"}, data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.text(f"{self.name} ran with {sorted(arguments)}")


def test_demo_script_is_a_plain_list_that_calls_the_builtin_tools() -> None:
    demo = ScriptedProvider.demo()
    names = [c["name"] for t in demo.turns if isinstance(t, dict) for c in t.get("tool_calls", ())]
    assert names == ["list_tables", "read_records", "calculate"]
    host = make_host(*(_Named(n) for n in ("list_tables", "read_records", "calculate")))
    result = ToolLoop(demo, host).run("demo")
    assert result.termination_reason is TerminationReason.COMPLETED
    assert [i.result.content for i in result.invocations] == [
        "list_tables ran with []",
        "read_records ran with ['limit', 'table']",
        "calculate ran with ['expression']",
    ]
    assert result.content.startswith("I listed the tables")


def test_a_tool_that_never_returns_times_out_and_the_loop_continues() -> None:
    import threading

    release = threading.Event()

    class Stuck:
        @hookimpl
        def tool_spec(self) -> ToolSpec:
            return ToolSpec("stuck", "Never returns.", data_class="public")

        @hookimpl
        def execute(self, arguments: dict[str, Any]) -> ToolResult:
            release.wait(30)
            return ToolResult.text("too late")

    provider = ScriptedProvider([{"tool_calls": [call("stuck", id="s")]}, "moved on"])
    try:
        result = ToolLoop(provider, make_host(Stuck()), tool_timeout=0.2).run("go")
    finally:
        release.set()
    assert result.invocations[0].result.content == 'Error: tool "stuck" timed out.'
    assert result.content == "moved on"
    assert result.termination_reason is TerminationReason.COMPLETED


class Mutator:
    """Rewrites the arguments it was given, top level and nested."""

    def __init__(self) -> None:
        self.calls = 0

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("mutate", "Changes its arguments.", data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        self.calls += 1
        arguments["path"] = "/etc/shadow"
        arguments["nested"]["items"].append("injected")
        arguments["nested"]["items"][0] = "changed"
        return ToolResult.text("done")


def test_a_tool_that_changes_its_arguments_changes_neither_history_nor_record() -> None:
    asked = {"path": "notes.txt", "nested": {"items": ["a", "b"]}}
    provider = ScriptedProvider([{"tool_calls": [call("mutate", asked, "m-1")]}, "ok"])
    recorder = MemoryRecorder()
    result = ToolLoop(provider, make_host(Mutator()), persister=recorder).run("go")
    assert result.invocations[0].result.content == "done"
    original = {"path": "notes.txt", "nested": {"items": ["a", "b"]}}
    # What the model is told it asked for, in the next request ...
    assistant = [m for m in provider.requests[1][0] if m.tool_calls]
    assert [c.arguments for c in assistant[0].tool_calls] == [original]
    assert "injected" not in sent_text(provider)
    # ... and what the run, its trace and the recorder hold.
    assert result.invocations[0].arguments == original
    (steps,) = recorder.steps.values()
    tool_steps = [s for s in steps if s.kind.value == "tool"]
    assert tool_steps[0].to_dict()["tool_arguments"] == original


def test_arguments_that_are_not_plain_json_are_answered_not_run() -> None:
    mutator = Mutator()
    odd = Completion(tool_calls=(ToolCall(id="m", name="mutate", arguments={"x": {1, 2}}),))
    result = ToolLoop(ScriptedProvider([odd, "done"]), make_host(mutator)).run("go")
    assert result.invocations[0].result.content == (
        'Error: invalid arguments for tool "mutate": not plain JSON @ $'
    )
    assert mutator.calls == 0
    assert result.termination_reason is TerminationReason.COMPLETED
