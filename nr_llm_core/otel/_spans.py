"""One run's spans and measurements, built from its step stream as the steps are recorded.

``invoke_agent`` spans the run (or one resumption of it) and is the current span meanwhile;
``chat {model}`` opens at each request step and closes at the llm or error step that answers
it (current meanwhile, so the provider's retries, which the HTTP layer reports through
:data:`~nr_llm_core.providers._http.retry_observer`, become its events); ``execute_tool
{name}`` is written when its tool step is recorded, dated back by the step's duration. Every
attribute taken from a step comes from :func:`~nr_llm_core.otel.attributes.step_attributes`
on the privacy-filtered record; the rest is the host's own vocabulary (the provider's settings,
the run's termination reason, counts). A status description is always a host word.
"""

from __future__ import annotations

import contextvars
import re
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any, Final

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.metrics import Histogram
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode

from nr_llm_core.otel import semconv as sc
from nr_llm_core.otel.attributes import Attributes, step_attributes
from nr_llm_core.privacy import PrivacyLevel, RunStepPrivacyFilter
from nr_llm_core.providers._http import retry_observer
from nr_llm_core.run_result import TerminationReason, ToolLoopResult
from nr_llm_core.trace import RunStep, RunTrace
from nr_llm_core.traceparent import TRACEPARENT, format_traceparent

__all__ = ["RunSpans"]

#: The host word a span's status says when the run ended by an exception.
INTERRUPTED: Final = "interrupted"
_FAILURE: Final = re.compile(r"[0-9]{3}|[A-Za-z][A-Za-z0-9_]{0,63}")
_DIGEST: Final = re.compile(r"(?:[a-z0-9]{1,16}:)?[0-9a-f]{16,128}")
_METRIC_KEYS: Final = (sc.PROVIDER_NAME, sc.REQUEST_MODEL, sc.SERVER_ADDRESS, sc.SERVER_PORT)
_TOKEN_TYPES: Final = ((sc.USAGE_INPUT_TOKENS, "input"), (sc.USAGE_OUTPUT_TOKENS, "output"))


class RunSpans:
    """The spans of one run (a :class:`~nr_llm_core.telemetry.RunWatch`).

    ``level`` is the level the run's steps are filtered at; ``provider`` the provider's
    attributes (:func:`~nr_llm_core.otel._provider.describe_provider`); ``tools`` the names
    a tool span may show (others read ``[unknown-tool]``); ``resumes`` the span context of
    the span this run continues (a resumption: that span is its parent and its link);
    ``on_suspend`` is told the span context of a run that ends waiting for approval.
    """

    def __init__(
        self,
        tracer: otel_trace.Tracer,
        durations: Histogram,
        tokens: Histogram,
        *,
        level: PrivacyLevel,
        provider: Attributes,
        tools: Collection[str],
        resumed: str | None,
        resumes: SpanContext | None,
        on_suspend: Callable[[str, SpanContext], None],
    ) -> None:
        self._tracer = tracer
        self._durations = durations
        self._tokens = tokens
        self._level = level
        self._provider = provider
        self._tools = frozenset(tools)
        self._filter = RunStepPrivacyFilter(level, known_tools=self._tools)
        self._on_suspend = on_suspend
        self._run_id = resumed
        attributes: Attributes = {
            sc.OPERATION_NAME: sc.INVOKE_AGENT,
            **provider,
            sc.PRIVACY_LEVEL: level.value,
            sc.RUN_RESUMED: resumed is not None,
        }
        if resumed is not None:
            attributes[sc.CONVERSATION_ID] = attributes[sc.RUN_ID] = resumed
        parent = None
        links: list[Link] = []
        if resumes is not None:
            # The resumed part is a child of the part that waited: one run, one trace.
            parent = otel_trace.set_span_in_context(otel_trace.NonRecordingSpan(resumes))
            links.append(Link(resumes, {sc.LINK_TYPE: sc.LINK_RESUMES}))
        self._span = tracer.start_span(
            sc.INVOKE_AGENT,
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            links=links,
        )
        self._context = otel_trace.set_span_in_context(self._span)
        self._token = otel_context.attach(self._context)
        self._chat: Span | None = None
        self._chat_token: contextvars.Token[otel_context.Context] | None = None
        self._chat_started = 0.0
        self._retries = 0
        self._retry_token: contextvars.Token[Any] | None = None
        # The error.type of the last provider failure, from its record: a failed run's own.
        self._failure = sc.ERROR_OTHER

    # -- the RunWatch protocol -----------------------------------------------------------------

    def meta(self) -> Mapping[str, str]:
        """The run span's ``traceparent``, to be stored with the run (when it is recorded)."""
        span_context = self._span.get_span_context()
        if not span_context.is_valid:
            return {}
        flags = int(span_context.trace_flags)
        return {TRACEPARENT: format_traceparent(span_context.trace_id, span_context.span_id, flags)}

    def __call__(self, trace: RunTrace, step: RunStep) -> None:
        """Turn one recorded step into span data, through its privacy-filtered record."""
        self._name(trace.run_id)
        record = self._filter.filter(step.to_dict())
        attributes = step_attributes(record, self._level, known_tools=self._tools)
        kind = record.get("kind")
        if kind == "request":
            self._open_chat(attributes)
        elif kind == "llm":
            self._close_chat(attributes, None)
        elif kind == "error":
            error = attributes.get(sc.ERROR_TYPE)
            self._failure = error if type(error) is str else sc.ERROR_OTHER
            self._close_chat(attributes, self._failure)
        elif kind == "tool":
            duration = record.get("duration_ms")
            self._tool(attributes, duration if isinstance(duration, int | float) else 0.0)
        elif kind == "approval":
            self._span.add_event(sc.EVENT_APPROVAL, attributes)

    def end(self, run_id: str, result: ToolLoopResult | None) -> None:
        """End the run's span with its outcome, in host words."""
        self._name(run_id)
        if self._chat is not None:  # the run raised while a request was out
            self._close_chat(None, sc.ERROR_OTHER)
        span = self._span
        try:
            if result is None:
                span.set_attribute(sc.ERROR_TYPE, sc.ERROR_OTHER)
                span.set_status(Status(StatusCode.ERROR, INTERRUPTED))
            else:
                self._outcome(result)
        finally:
            span.end()
            otel_context.detach(self._token)

    # -- parts ---------------------------------------------------------------------------------

    def _name(self, run_id: str) -> None:
        if self._run_id is None:
            self._run_id = run_id
            self._span.set_attributes({sc.CONVERSATION_ID: run_id, sc.RUN_ID: run_id})

    def _outcome(self, result: ToolLoopResult) -> None:
        span = self._span
        reason = result.termination_reason
        usage = result.usage
        attributes: Attributes = {
            sc.TERMINATION_REASON: reason.value,
            sc.ITERATIONS: result.iterations,
            sc.TRUNCATED: result.truncated,
            sc.USAGE_INPUT_TOKENS: usage.input_tokens,
            sc.USAGE_OUTPUT_TOKENS: usage.output_tokens,
        }
        if usage.cache_read_input_tokens:
            attributes[sc.USAGE_CACHE_READ_INPUT_TOKENS] = usage.cache_read_input_tokens
        if usage.cache_creation_input_tokens:
            attributes[sc.USAGE_CACHE_CREATION_INPUT_TOKENS] = usage.cache_creation_input_tokens
        if reason is TerminationReason.FAILED:
            # What failed, as the failure's record says it (at NONE that is nothing: _OTHER).
            attributes[sc.RUN_STATUS] = "failed"
            attributes[sc.ERROR_TYPE] = self._failure
            span.set_status(Status(StatusCode.ERROR, self._failure))
        elif reason is TerminationReason.AWAITING_APPROVAL:
            attributes[sc.RUN_STATUS] = "suspended"
            state = result.suspended
            if state is not None:
                event: Attributes = {
                    sc.PENDING_COUNT: len(state.pending),
                    sc.NEEDING_COUNT: len(state.needs_approval),
                }
                if type(state.digest) is str and _DIGEST.fullmatch(state.digest):
                    event[sc.APPROVAL_DIGEST] = state.digest
                span.add_event(sc.EVENT_SUSPENDED, event)
            self._on_suspend(result.run_id, span.get_span_context())
        else:
            attributes[sc.RUN_STATUS] = "completed"
        span.set_attributes(attributes)

    def _open_chat(self, attributes: Attributes) -> None:
        if self._chat is not None:  # a request that was never answered (not expected)
            self._close_chat(None, sc.ERROR_OTHER)
        model = self._provider.get(sc.REQUEST_MODEL)
        name = f"{sc.CHAT} {model}" if type(model) is str else sc.CHAT
        span_attributes: Attributes = {sc.OPERATION_NAME: sc.CHAT, **self._provider}
        if self._run_id is not None:
            span_attributes[sc.CONVERSATION_ID] = self._run_id
        span_attributes.update(attributes)
        self._chat = self._tracer.start_span(
            name, context=self._context, kind=SpanKind.CLIENT, attributes=span_attributes
        )
        self._chat_started = time.monotonic()
        self._retries = 0
        self._chat_token = otel_context.attach(otel_trace.set_span_in_context(self._chat))
        self._retry_token = retry_observer.set(self._retry)

    def _retry(self, attempt: int, failure: str, delay: float) -> None:
        chat = self._chat
        if chat is None:
            return
        self._retries += 1
        word = failure if type(failure) is str and _FAILURE.fullmatch(failure) else sc.ERROR_OTHER
        chat.add_event(
            sc.EVENT_RETRY,
            {sc.RETRY_ATTEMPT: int(attempt), sc.ERROR_TYPE: word, sc.RETRY_DELAY: float(delay)},
        )

    def _close_chat(self, attributes: Attributes | None, error: str | None) -> None:
        chat = self._chat
        if chat is None:
            return
        self._chat = None
        if self._retry_token is not None:
            retry_observer.reset(self._retry_token)
            self._retry_token = None
        if self._chat_token is not None:
            otel_context.detach(self._chat_token)
            self._chat_token = None
        elapsed = time.monotonic() - self._chat_started
        if attributes:
            chat.set_attributes(attributes)
        if self._retries:
            chat.set_attribute(sc.RETRIES, self._retries)
        metric: Attributes = {sc.OPERATION_NAME: sc.CHAT}
        metric.update((k, v) for k, v in self._provider.items() if k in _METRIC_KEYS)
        if error is not None:
            chat.set_attribute(sc.ERROR_TYPE, error)
            chat.set_status(Status(StatusCode.ERROR, error))
            metric[sc.ERROR_TYPE] = error
        chat.end()
        self._durations.record(elapsed, metric)
        for key, token_type in (
            (sc.USAGE_INPUT_TOKENS, "input"),
            (sc.USAGE_OUTPUT_TOKENS, "output"),
        ):
            count = (attributes or {}).get(key)
            if type(count) is int:
                self._tokens.record(count, {**metric, sc.TOKEN_TYPE: token_type})

    def _tool(self, attributes: Attributes, duration_ms: float) -> None:
        ended = time.time_ns()
        started = ended - max(0, int(duration_ms * 1_000_000))
        name = attributes.get(sc.TOOL_NAME)
        span_attributes: Attributes = {}
        if self._run_id is not None:
            span_attributes[sc.CONVERSATION_ID] = self._run_id
        span_attributes.update(attributes)
        span = self._tracer.start_span(
            f"{sc.EXECUTE_TOOL} {name}" if type(name) is str else sc.EXECUTE_TOOL,
            context=self._context,
            kind=SpanKind.INTERNAL,
            attributes=span_attributes,
            start_time=started,
        )
        metric: Attributes = {
            sc.OPERATION_NAME: sc.EXECUTE_TOOL,
            sc.PROVIDER_NAME: self._provider[sc.PROVIDER_NAME],
        }
        if type(name) is str:
            metric[sc.TOOL_NAME] = name
        error = attributes.get(sc.ERROR_TYPE)
        if type(error) is str:
            span.set_status(Status(StatusCode.ERROR, error))
            metric[sc.ERROR_TYPE] = error
        span.end(end_time=ended)
        self._durations.record(max(0.0, duration_ms) / 1000, metric)
