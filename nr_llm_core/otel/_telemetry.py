"""``OtelTelemetry``: the tracer and meter, each run's level, the links between a run's parts."""

from __future__ import annotations

import importlib.metadata
import logging
import threading
from collections import OrderedDict
from collections.abc import Collection
from typing import Any, Final, final

from opentelemetry import metrics, trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import SpanContext, TraceFlags, TracerProvider

from nr_llm_core.otel import semconv as sc
from nr_llm_core.otel._provider import describe_provider
from nr_llm_core.otel._spans import RunSpans
from nr_llm_core.privacy import PrivacyLevel, effective_level, resolve_privacy_level
from nr_llm_core.run_result import RunRecorder
from nr_llm_core.traceparent import TRACEPARENT, TraceparentRecorder, parse_traceparent

__all__ = ["OtelTelemetry"]

logger = logging.getLogger("nr_llm.telemetry")

#: Suspended runs whose span context is remembered in memory for their resumption.
MAX_REMEMBERED: Final = 1024


def _version() -> str:
    # From the distribution's metadata: the package's __init__ would close an import circle.
    try:
        return importlib.metadata.version("nr-llm")
    except importlib.metadata.PackageNotFoundError:  # a source tree without metadata
        return ""


@final
class OtelTelemetry:
    """OpenTelemetry GenAI spans and metrics for the runs of a :class:`~nr_llm_core.ToolLoop`.

    Pass it as ``ToolLoop(..., telemetry=OtelTelemetry(tracer_provider=..., meter_provider=...))``;
    ``None`` for either uses the global provider (a no-op until the application installs the
    SDK). ``privacy`` is the most these spans may show: each run is shown at the stricter of
    it, the level the loop asks for, its audit store's level and ``NR_LLM_PRIVACY_LEVEL``
    (:func:`~nr_llm_core.privacy.effective_level`); ``None`` asks for nothing stricter.
    What each level shows is in docs/telemetry.md.
    """

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        privacy: PrivacyLevel | str | None = None,
    ) -> None:
        #: The level asked for here, ``None`` when none was named.
        self.privacy = None if privacy is None else resolve_privacy_level(privacy)
        version = _version()
        self._tracer = trace.get_tracer(
            sc.SCOPE, version, tracer_provider=tracer_provider, schema_url=sc.SCHEMA_URL
        )
        meter = metrics.get_meter(
            sc.SCOPE, version, meter_provider=meter_provider, schema_url=sc.SCHEMA_URL
        )
        self._durations = meter.create_histogram(
            sc.OPERATION_DURATION,
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=sc.DURATION_BUCKETS,
        )
        self._tokens = meter.create_histogram(
            sc.TOKEN_USAGE,
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=sc.TOKEN_BUCKETS,
        )
        self._suspended: OrderedDict[str, SpanContext] = OrderedDict()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        level = "-" if self.privacy is None else self.privacy.value
        return f"OtelTelemetry(privacy={level!r})"

    def watch(
        self,
        *,
        provider: object,
        tools: Collection[str],
        persister: RunRecorder | None,
        privacy: PrivacyLevel | None,
        resumed: str | None,
    ) -> RunSpans:
        """The spans of one run (see :class:`~nr_llm_core.telemetry.RunTelemetry`)."""
        record = _stored_run(persister, resumed)
        recorded = record.get("privacy_level") if record else None
        level = effective_level(privacy, self.privacy, _store_level(persister), recorded)
        # A store that records each segment's trace context knows the run's latest segment,
        # whichever process ran it; what this object remembers is only what it saw.
        recorder = persister if isinstance(persister, TraceparentRecorder) else None
        spans = RunSpans(
            self._tracer,
            self._durations,
            self._tokens,
            level=level,
            provider=describe_provider(provider),
            tools=tools,
            resumed=resumed,
            resumes=self._resumes(resumed, record, stored_is_current=recorder is not None),
            on_suspend=self._remember,
        )
        if resumed is not None and recorder is not None:
            _record_segment(recorder, resumed, spans)
        return spans

    def _remember(self, run_id: str, span_context: SpanContext) -> None:
        if not span_context.is_valid:
            return
        with self._lock:
            self._suspended[run_id] = span_context
            self._suspended.move_to_end(run_id)
            while len(self._suspended) > MAX_REMEMBERED:
                self._suspended.popitem(last=False)

    def _resumes(
        self, resumed: str | None, record: dict[str, Any] | None, *, stored_is_current: bool
    ) -> SpanContext | None:
        """The span a resumption continues: the span of the segment it resumes.

        The ``traceparent`` stored with the run names it when the store records every
        segment's (``stored_is_current``); else the span this object saw suspend, else the
        stored one (the run's first span, or the latest whose telemetry could record it)."""
        if resumed is None:
            return None
        with self._lock:
            remembered = self._suspended.pop(resumed, None)
        stored = _stored_context(record)
        if stored_is_current and stored is not None:
            return stored
        return remembered if remembered is not None else stored


def _stored_context(record: dict[str, Any] | None) -> SpanContext | None:
    """The span context named by the ``traceparent`` stored with a run, if a valid one is."""
    found = parse_traceparent(record.get("meta") if record else None)
    if found is None:
        return None
    trace_id, span_id, flags = found
    return SpanContext(
        trace_id=int(trace_id, 16),
        span_id=int(span_id, 16),
        is_remote=True,
        trace_flags=TraceFlags(flags),
    )


def _record_segment(persister: TraceparentRecorder, run_id: str, spans: RunSpans) -> None:
    """Store the resumption's own span as the run's latest segment: the next resumption, in
    whichever process, continues it. A store that cannot is logged; the spans go on."""
    traceparent = spans.meta().get(TRACEPARENT)
    if traceparent is None:  # no SDK installed: nothing is recorded, nothing to continue
        return
    try:
        persister.record_traceparent(run_id, traceparent)
    except Exception as exc:
        logger.warning(
            "could not store the trace context of run %s (%s)", run_id, type(exc).__name__
        )


def _store_level(persister: object) -> PrivacyLevel | None:
    # AgentRunPersister's level for runs that ask for nothing stricter; another recorder may
    # have none (then the loop's and this telemetry's levels decide).
    try:
        level = getattr(persister, "privacy", None)
    except Exception:
        return None
    return level if isinstance(level, PrivacyLevel) else None


def _stored_run(persister: object, run_id: str | None) -> dict[str, Any] | None:
    """The store's record of run ``run_id`` (its level and meta), when the store can tell."""
    if run_id is None:
        return None
    try:
        get_run = getattr(persister, "get_run", None)
        record = get_run(run_id) if callable(get_run) else None
    except Exception:
        return None
    return dict(record) if isinstance(record, dict) else None
