"""Each span shape, read from the SDK's in-memory exporter: ``invoke_agent``, ``chat {model}``,
``execute_tool {name}`` (every failure kind), a failed and an interrupted run, a suspended run
and its resumption (same trace, parent and link), the retry events, the duration histogram per
tool, and the current span while providers and tools run."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from nr_llm_core import (
    AgentRunPersister,
    ChatMessage,
    ScriptedProvider,
    ToolHost,
    ToolLoop,
    ToolResult,
    ToolSpec,
    hookimpl,
)
from nr_llm_core.loop import TerminationReason
from nr_llm_core.otel import SEMCONV_VERSION
from nr_llm_core.otel import semconv as sc
from nr_llm_core.privacy import call_reference
from nr_llm_core.providers import _http
from nr_llm_core.providers.base import Completion
from nr_llm_core.traceparent import parse_traceparent
from tests.loop._wire import Reply, WireServer, refused_url

from ._memory import Memory
from ._runs import NEVER, Explode, Lookup, Sleepy, WriteNote, provider, text, tool_calls


class Refuse:
    """Answers with its own error result (no host failure)."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("refuse", "Says no.", data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.error("no")


class Typed:
    """Takes one integer."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
        return ToolSpec("typed", "Takes n.", schema, data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.text(str(arguments["n"]))


class Seer:
    """Records the span that is current while it runs."""

    def __init__(self) -> None:
        self.seen: list[trace.SpanContext] = []

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("seer", "Looks around.", data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        self.seen.append(trace.get_current_span().get_span_context())
        return ToolResult.text("seen")


def host(*plugins: object) -> ToolHost:
    made = ToolHost()
    for plugin in plugins:
        made.register(plugin)
    return made


def calls(*names: str, **arguments: dict[str, Any]) -> dict[str, Any]:
    """A scripted turn calling ``names`` (ids ``c0``, ``c1`` …)."""
    return {
        "content": "",
        "tool_calls": [
            {"id": f"c{i}", "name": n, "arguments": arguments.get(n, {})}
            for i, n in enumerate(names)
        ],
    }


def one(spans: list[ReadableSpan]) -> ReadableSpan:
    assert len(spans) == 1, [s.name for s in spans]
    return spans[0]


def test_a_run_is_one_invoke_agent_span_over_its_chat_and_tool_spans(memory: Memory) -> None:
    loop = ToolLoop(
        ScriptedProvider([calls("lookup"), "done"]),
        host(Lookup()),
        telemetry=memory.telemetry(),
    )
    result = loop.run("hi")
    run = one(memory.named("invoke_agent"))
    assert run.name == "invoke_agent" and run.kind is SpanKind.INTERNAL
    assert run.parent is None
    assert run.status.status_code is StatusCode.UNSET
    assert run.instrumentation_scope is not None
    assert run.instrumentation_scope.name == "nr_llm_core.otel"
    assert run.instrumentation_scope.schema_url.endswith(SEMCONV_VERSION)
    attributes = dict(run.attributes or {})
    assert attributes[sc.OPERATION_NAME] == "invoke_agent"
    assert attributes[sc.PROVIDER_NAME] == "nr_llm.scripted"
    assert attributes[sc.CONVERSATION_ID] == attributes[sc.RUN_ID] == result.run_id
    assert attributes[sc.RUN_STATUS] == "completed"
    assert attributes[sc.TERMINATION_REASON] == "completed"
    assert attributes[sc.ITERATIONS] == 2
    assert attributes[sc.PRIVACY_LEVEL] == "metadata"
    assert attributes[sc.USAGE_INPUT_TOKENS] == result.usage.input_tokens
    children = [s for s in memory.spans() if s is not run]
    assert [s.name for s in children] == ["chat", "execute_tool lookup", "chat"]
    for span in children:
        assert span.parent is not None and span.parent.span_id == run.context.span_id
        assert span.context.trace_id == run.context.trace_id
        assert dict(span.attributes or {})[sc.CONVERSATION_ID] == result.run_id


def test_a_chat_span_carries_model_usage_and_finish_reason(memory: Memory) -> None:
    with WireServer([tool_calls(("call_1", "lookup", "{}")), text("done")]) as server:
        loop = ToolLoop(provider(server.url), host(Lookup()), telemetry=memory.telemetry())
        assert loop.run("hi").termination_reason is TerminationReason.COMPLETED
    first, second = memory.named("chat")
    assert first.name == "chat gpt-4o-mini" and first.kind is SpanKind.CLIENT
    attributes = dict(first.attributes or {})
    assert attributes[sc.OPERATION_NAME] == "chat"
    assert attributes[sc.PROVIDER_NAME] == "openai"
    assert attributes[sc.REQUEST_MODEL] == "gpt-4o-mini"
    assert attributes[sc.SERVER_ADDRESS] == "127.0.0.1"
    assert attributes[sc.SERVER_PORT] == int(server.url.rsplit(":", 1)[1])
    assert attributes[sc.USAGE_INPUT_TOKENS] == 82
    assert attributes[sc.USAGE_OUTPUT_TOKENS] == 17
    assert attributes[sc.USAGE_CACHE_READ_INPUT_TOKENS] == 64
    assert attributes[sc.RESPONSE_FINISH_REASONS] == ("tool_calls",)
    assert attributes[sc.REQUESTED_TOOL_NAMES] == ("lookup",)
    assert attributes[sc.MESSAGES_SENT_COUNT] == 1
    assert dict(second.attributes or {})[sc.RESPONSE_FINISH_REASONS] == ("stop",)
    for span in (first, second):
        assert sc.INPUT_MESSAGES not in (span.attributes or {})  # METADATA: no content
    assert NEVER["api_key"] not in repr([dict(s.attributes or {}) for s in memory.spans()])


@pytest.mark.parametrize(
    ("turn", "plugins", "kind", "name"),
    [
        (calls("ghost"), (), "unknown_tool", "[unknown-tool]"),
        (calls("explode"), (Explode(),), "failed", "explode"),
        (calls("typed", typed={"n": "x"}), (Typed(),), "invalid_arguments", "typed"),
        (calls("refuse"), (Refuse(),), "tool_error", "refuse"),
    ],
)
def test_an_execute_tool_span_says_why_a_call_failed_in_host_words(
    memory: Memory, turn: dict[str, Any], plugins: tuple[object, ...], kind: str, name: str
) -> None:
    loop = ToolLoop(
        ScriptedProvider([turn, "done"]), host(Lookup(), *plugins), telemetry=memory.telemetry()
    )
    loop.run("hi")
    span = one(memory.named("execute_tool"))
    assert span.name == f"execute_tool {name}" and span.kind is SpanKind.INTERNAL
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == kind
    attributes = dict(span.attributes or {})
    assert attributes[sc.ERROR_TYPE] == kind
    assert attributes[sc.TOOL_NAME] == name
    assert attributes[sc.TOOL_IS_ERROR] is True
    assert attributes[sc.TOOL_CALL_ID] == call_reference("c0")
    assert NEVER["exception"] not in repr(span.to_json())
    assert NEVER["exception_type"] not in repr(span.to_json())


def test_a_timed_out_call_and_a_refused_one(memory: Memory) -> None:
    sleepy = Sleepy()
    try:
        loop = ToolLoop(
            ScriptedProvider([calls("sleepy", "write_note"), "done"]),
            host(sleepy, WriteNote()),
            telemetry=memory.telemetry(),
            tool_timeout=0.2,
        )
        waiting = loop.run("hi")
        assert waiting.suspended is not None
        loop.resume(waiting.suspended, approved=False)
    finally:
        sleepy.release.set()
    kinds = {s.name: (s.attributes or {}).get(sc.ERROR_TYPE) for s in memory.named("execute_tool")}
    assert kinds == {"execute_tool sleepy": "timed_out", "execute_tool write_note": "not_approved"}


def test_a_tool_span_is_dated_by_the_call_and_keeps_the_artifacts_count_only(
    memory: Memory,
) -> None:
    loop = ToolLoop(
        ScriptedProvider([calls("lookup"), "done"]), host(Lookup()), telemetry=memory.telemetry()
    )
    result = loop.run("hi")
    span = one(memory.named("execute_tool"))
    (step,) = [s for s in result.trace.steps if s.kind.value == "tool"] if result.trace else []
    assert span.start_time is not None and span.end_time is not None
    # From the stored record's duration, which keeps microseconds.
    assert abs(span.end_time - span.start_time - step.duration_ms * 1_000_000) <= 1_000
    attributes = dict(span.attributes or {})
    assert attributes[sc.TOOL_ARTIFACTS_COUNT] == 2
    assert attributes[sc.TOOL_ARTIFACT_TYPES] == ("table", "text")
    assert attributes[sc.TOOL_TYPE] == "function"
    assert span.status.status_code is StatusCode.UNSET


def test_content_and_call_ids_only_from_the_content_levels(memory: Memory) -> None:
    for level in ("metadata", "full"):
        loop = ToolLoop(
            ScriptedProvider([calls("lookup", lookup={"q": "x"}), "done"]),
            host(Lookup()),
            privacy=level,
            telemetry=memory.telemetry(),
        )
        loop.run("hi")
    metadata, full = (dict(s.attributes or {}) for s in memory.named("execute_tool"))
    assert metadata[sc.TOOL_CALL_ID] == call_reference("c0")
    assert sc.TOOL_CALL_ARGUMENTS not in metadata and sc.TOOL_CALL_RESULT not in metadata
    assert full[sc.TOOL_CALL_ID] == "c0"
    assert full[sc.TOOL_CALL_ARGUMENTS] == '{"q":"x"}'
    assert str(full[sc.TOOL_CALL_RESULT]).startswith("benignresultcanary")


def test_the_spans_never_show_more_than_telemetry_allows(memory: Memory) -> None:
    """The stricter of the loop's level and the telemetry's own wins."""
    loop = ToolLoop(
        ScriptedProvider([calls("lookup"), "done"]),
        host(Lookup()),
        privacy="full",
        telemetry=memory.telemetry(privacy="none"),
    )
    loop.run("hi")
    run = one(memory.named("invoke_agent"))
    assert dict(run.attributes or {})[sc.PRIVACY_LEVEL] == "none"
    tool = one(memory.named("execute_tool"))
    assert tool.name == "execute_tool"
    assert set(tool.attributes or {}) == {
        sc.CONVERSATION_ID,
        sc.ROUND,
        sc.OPERATION_NAME,
        sc.TOOL_TYPE,
    }


class Failing:
    trust_zone = "local"

    def complete(self, messages: Any, tools: Any) -> Completion:
        from nr_llm_core.errors import ProviderError

        raise ProviderError(f"it broke: {NEVER['provider_text']}")


@pytest.mark.parametrize(("level", "code"), [("metadata", "provider_error"), ("none", "_OTHER")])
def test_a_failed_run_ends_both_spans_with_an_error_code(
    memory: Memory, level: str, code: str
) -> None:
    loop = ToolLoop(Failing(), host(), privacy=level, telemetry=memory.telemetry())
    assert loop.run("hi").termination_reason is TerminationReason.FAILED
    chat, run = memory.spans()
    for span in (chat, run):
        assert span.status.status_code is StatusCode.ERROR
        assert span.status.description == code
        assert dict(span.attributes or {})[sc.ERROR_TYPE] == code
    assert dict(run.attributes or {})[sc.RUN_STATUS] == "failed"
    assert NEVER["provider_text"] not in repr([s.to_json() for s in memory.spans()])


class Stop(BaseException):
    """Stands for a KeyboardInterrupt in the middle of a request."""


class Interrupted:
    trust_zone = "local"

    def complete(self, messages: Any, tools: Any) -> Completion:
        raise Stop("interruptedcanary")


def test_an_interrupted_run_still_ends_its_spans_and_restores_the_context(
    memory: Memory,
) -> None:
    before = trace.get_current_span()
    loop = ToolLoop(Interrupted(), host(), telemetry=memory.telemetry())
    with pytest.raises(Stop):
        loop.run("hi")
    assert trace.get_current_span() is before
    assert _http.retry_observer.get() is None
    chat, run = memory.spans()
    assert chat.status.description == "_OTHER"
    assert run.status.status_code is StatusCode.ERROR
    assert run.status.description == "interrupted"
    assert "interruptedcanary" not in repr([s.to_json() for s in memory.spans()])


def test_a_suspended_run_ends_its_span_and_the_resumption_continues_its_trace(
    memory: Memory,
) -> None:
    loop = ToolLoop(
        ScriptedProvider([calls("write_note", write_note={"text": "x"}), "done"]),
        host(WriteNote()),
        telemetry=memory.telemetry(),
    )
    waiting = loop.run("hi")
    assert waiting.suspended is not None
    suspended = one(memory.named("invoke_agent"))
    attributes = dict(suspended.attributes or {})
    assert attributes[sc.RUN_STATUS] == "suspended"
    assert attributes[sc.TERMINATION_REASON] == "awaiting_approval"
    assert suspended.status.status_code is StatusCode.UNSET
    (event,) = suspended.events
    assert event.name == sc.EVENT_SUSPENDED
    assert dict(event.attributes or {}) == {
        sc.PENDING_COUNT: 1,
        sc.NEEDING_COUNT: 1,
        sc.APPROVAL_DIGEST: waiting.suspended.digest,
    }
    done = loop.resume(waiting.suspended, approved=True)
    assert done.termination_reason is TerminationReason.COMPLETED
    resumed = memory.named("invoke_agent")[1]
    assert dict(resumed.attributes or {})[sc.RUN_RESUMED] is True
    assert resumed.context.trace_id == suspended.context.trace_id
    assert resumed.parent is not None and resumed.parent.span_id == suspended.context.span_id
    (link,) = resumed.links
    assert link.context.span_id == suspended.context.span_id
    assert dict(link.attributes or {}) == {sc.LINK_TYPE: "resumes"}
    (approval,) = resumed.events
    assert approval.name == sc.EVENT_APPROVAL
    assert dict(approval.attributes or {})[sc.APPROVED_COUNT] == 1
    assert dict(approval.attributes or {})[sc.APPROVAL_DIGEST] == waiting.suspended.digest
    tool = one(memory.named("execute_tool"))
    assert tool.parent is not None and tool.parent.span_id == resumed.context.span_id


def test_a_resumption_in_another_process_links_through_the_store(
    memory: Memory, tmp_path: Any
) -> None:
    """A new telemetry object (as in `nr-llm runs approve`) finds the run's trace in the
    ``traceparent`` stored with the run."""
    script = [calls("write_note", write_note={"text": "x"}), "done"]
    with AgentRunPersister(tmp_path / "audit.db") as store:
        loop = ToolLoop(
            ScriptedProvider(script),
            host(WriteNote()),
            persister=store,
            telemetry=memory.telemetry(),
        )
        waiting = loop.run("hi")
        record = store.get_run(waiting.run_id)
        assert record is not None
        stored = parse_traceparent(record["meta"])
        first = one(memory.named("invoke_agent"))
        context = first.context
        assert stored == (
            f"{context.trace_id:032x}",
            f"{context.span_id:016x}",
            int(context.trace_flags),
        )
        provider_ = ScriptedProvider(script)
        provider_.position = 1
        again = ToolLoop(
            provider_, host(WriteNote()), persister=store, telemetry=memory.telemetry()
        )
        again.resume(waiting.run_id, approved=True)
    resumed = memory.named("invoke_agent")[1]
    assert resumed.context.trace_id == first.context.trace_id
    assert [link.context.span_id for link in resumed.links] == [first.context.span_id]


def test_retries_are_events_of_their_chat_span(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_http, "_sleep", lambda seconds: None)
    with WireServer([Reply(503), Reply(429, headers={"retry-after": "2"}), text("ok")]) as server:
        loop = ToolLoop(provider(server.url), host(), telemetry=memory.telemetry())
        assert loop.run("hi").termination_reason is TerminationReason.COMPLETED
    chat = one(memory.named("chat"))
    events = [(e.name, dict(e.attributes or {})) for e in chat.events]
    assert [e[0] for e in events] == [sc.EVENT_RETRY, sc.EVENT_RETRY]
    assert [(e[1][sc.RETRY_ATTEMPT], e[1][sc.ERROR_TYPE]) for e in events] == [
        (1, "503"),
        (2, "429"),
    ]
    assert events[1][1][sc.RETRY_DELAY] == 2.0
    assert dict(chat.attributes or {})[sc.RETRIES] == 2
    assert chat.status.status_code is StatusCode.UNSET


def test_a_connection_that_cannot_be_opened_is_named_by_the_clients_exception(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_http, "_sleep", lambda seconds: None)
    loop = ToolLoop(provider(refused_url(), max_retries=1), host(), telemetry=memory.telemetry())
    assert loop.run("hi").termination_reason is TerminationReason.FAILED
    chat = one(memory.named("chat"))
    assert [dict(e.attributes or {})[sc.ERROR_TYPE] for e in chat.events] == ["ConnectError"]
    assert chat.status.description == "provider_error"


def test_the_duration_histogram_has_a_series_per_tool(memory: Memory) -> None:
    loop = ToolLoop(
        ScriptedProvider([calls("lookup", "explode", "lookup"), "done"]),
        host(Lookup(), Explode()),
        telemetry=memory.telemetry(),
    )
    loop.run("hi")
    points = memory.points(sc.OPERATION_DURATION)
    tools = {
        (p.attributes.get(sc.TOOL_NAME), p.attributes.get(sc.ERROR_TYPE)): p.count
        for p in points
        if p.attributes.get(sc.OPERATION_NAME) == "execute_tool"
    }
    assert tools == {("lookup", None): 2, ("explode", "failed"): 1}
    chats = [p for p in points if p.attributes.get(sc.OPERATION_NAME) == "chat"]
    assert sum(p.count for p in chats) == 2
    assert list(points[0].explicit_bounds) == list(sc.DURATION_BUCKETS)
    tokens = {p.attributes[sc.TOKEN_TYPE] for p in memory.points(sc.TOKEN_USAGE)}
    assert tokens == {"input", "output"}


class Watching:
    """A provider that records the span current while it answers."""

    trust_zone = "local"

    def __init__(self) -> None:
        self.seen: list[trace.SpanContext] = []

    def complete(self, messages: Any, tools: Any) -> Completion:
        self.seen.append(trace.get_current_span().get_span_context())
        return Completion(content="done")


def test_the_run_span_is_current_for_tools_and_the_chat_span_for_the_provider(
    memory: Memory,
) -> None:
    seer = Seer()
    tracer = memory.tracer_provider.get_tracer("the caller")
    with tracer.start_as_current_span("caller") as caller:
        ToolLoop(
            ScriptedProvider([calls("seer"), "done"]), host(seer), telemetry=memory.telemetry()
        ).run("hi")
        watching = Watching()
        ToolLoop(watching, host(), telemetry=memory.telemetry()).run("hi")
        assert trace.get_current_span() is caller
    runs = memory.named("invoke_agent")
    assert all(r.parent is not None and r.parent.span_id == caller.context.span_id for r in runs)
    assert seer.seen == [runs[0].context]
    assert watching.seen == [memory.named("chat")[-1].context]


class BrokenTelemetry:
    """A telemetry whose every part raises."""

    def __init__(self, part: str) -> None:
        self.part = part

    def watch(self, **kwargs: Any) -> Any:
        if self.part == "watch":
            raise RuntimeError("watch")
        return self

    def meta(self) -> Any:
        raise RuntimeError("meta")

    def __call__(self, trace: Any, step: Any) -> None:
        if self.part == "step":
            raise RuntimeError("step")

    def end(self, run_id: str, result: Any) -> None:
        if self.part == "end":
            raise RuntimeError("end")


@pytest.mark.parametrize("part", ["watch", "step", "end"])
def test_telemetry_that_fails_never_stops_a_run(part: str, tmp_path: Any) -> None:
    with AgentRunPersister(tmp_path / "audit.db") as store:
        loop = ToolLoop(
            ScriptedProvider([calls("lookup"), "done"]),
            host(Lookup()),
            persister=store,
            telemetry=BrokenTelemetry(part),
        )
        result = loop.run([ChatMessage.user("hi")])
        assert result.termination_reason is TerminationReason.COMPLETED
        kinds = [s["kind"] for s in store.steps(result.run_id)]
        assert kinds == ["request", "llm", "tool", "request", "llm"]
