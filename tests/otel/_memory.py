"""An SDK tracer and meter provider that keep every span and measurement in memory."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from nr_llm_core.otel import OtelTelemetry


class Memory:
    """``telemetry()`` builds an :class:`OtelTelemetry` on this memory; ``spans()`` and
    ``points()`` read what it exported."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def telemetry(self, **kwargs: Any) -> OtelTelemetry:
        return OtelTelemetry(
            tracer_provider=self.tracer_provider, meter_provider=self.meter_provider, **kwargs
        )

    def spans(self) -> list[ReadableSpan]:
        """Every finished span, in the order they ended."""
        return list(self.exporter.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name.split(" ")[0] == prefix]

    def points(self, metric: str) -> list[Any]:
        """The data points of ``metric`` (all of them, cumulative)."""
        data = self.reader.get_metrics_data()
        found = []
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for m in scope.metrics:
                    if m.name == metric:
                        found.extend(m.data.data_points)
        return found

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()
