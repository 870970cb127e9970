"""A loopback OTLP/HTTP receiver: keeps every request's bytes and decodes the protobuf payload.

It answers ``POST /v1/traces`` and ``POST /v1/metrics`` as a collector does (200 with an empty
``Export…ServiceResponse``); a gzip or deflate body is inflated before it is kept, so a sweep of
:meth:`OtlpReceiver.all_bytes` sees what went over the wire, whatever the exporter chose.
:func:`exporting` builds an SDK tracer and meter provider that export to it over HTTP.
"""

from __future__ import annotations

import gzip
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import requests
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor


def value_of(value: AnyValue) -> Any:
    """A decoded OTLP ``AnyValue`` as a Python value."""
    which = value.WhichOneof("value")
    if which == "array_value":
        return tuple(value_of(v) for v in value.array_value.values)
    if which == "kvlist_value":
        return {kv.key: value_of(kv.value) for kv in value.kvlist_value.values}
    return None if which is None else getattr(value, which)


class OtlpReceiver:
    """Receives OTLP/HTTP on 127.0.0.1; ``traces``/``metrics`` hold the decoded requests."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.traces: list[ExportTraceServiceRequest] = []
        self.metrics: list[ExportMetricsServiceRequest] = []
        self.encodings: set[str] = set()
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # the stdlib's name
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                encoding = (self.headers.get("content-encoding") or "").lower()
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                reply: bytes
                with receiver._lock:
                    receiver.encodings.add(encoding)
                    receiver.bodies.append(self.raw_requestline + bytes(self.headers) + body)
                    if self.path == "/v1/traces":
                        receiver.traces.append(ExportTraceServiceRequest.FromString(body))
                        reply = ExportTraceServiceResponse().SerializeToString()
                    elif self.path == "/v1/metrics":
                        receiver.metrics.append(ExportMetricsServiceRequest.FromString(body))
                        reply = ExportMetricsServiceResponse().SerializeToString()
                    else:
                        self.send_error(404)
                        return
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def all_bytes(self) -> bytes:
        """Every request received: request line, headers and (inflated) body."""
        with self._lock:
            return b"\n".join(self.bodies)

    def spans(self) -> list[dict[str, Any]]:
        """Every span received, decoded: name, kind, status, attributes, events and links."""
        found = []
        with self._lock:
            requests_ = list(self.traces)
        for request in requests_:
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    for span in scope.spans:
                        found.append(
                            {
                                "name": span.name,
                                "kind": span.kind,
                                "trace_id": span.trace_id.hex(),
                                "span_id": span.span_id.hex(),
                                "parent_span_id": span.parent_span_id.hex(),
                                "status": (span.status.code, span.status.message),
                                "attributes": {a.key: value_of(a.value) for a in span.attributes},
                                "events": [
                                    (e.name, {a.key: value_of(a.value) for a in e.attributes})
                                    for e in span.events
                                ],
                                "links": [
                                    (
                                        link.trace_id.hex(),
                                        link.span_id.hex(),
                                        {a.key: value_of(a.value) for a in link.attributes},
                                    )
                                    for link in span.links
                                ],
                                "scope": (scope.scope.name, scope.schema_url),
                            }
                        )
        return found

    def metric_points(self, name: str) -> list[dict[str, Any]]:
        """The attributes of every data point of histogram ``name`` received."""
        found = []
        with self._lock:
            requests_ = list(self.metrics)
        for request in requests_:
            for resource in request.resource_metrics:
                for scope in resource.scope_metrics:
                    for metric in scope.metrics:
                        if metric.name == name:
                            found.extend(
                                {a.key: value_of(a.value) for a in point.attributes}
                                for point in metric.histogram.data_points
                            )
        return found

    def __enter__(self) -> OtlpReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@contextmanager
def exporting(receiver: OtlpReceiver) -> Iterator[tuple[TracerProvider, MeterProvider]]:
    """An SDK tracer and meter provider exporting to ``receiver`` over OTLP/HTTP, as a host
    configures them (a batch span processor, a periodic metric reader); flushed and shut down
    on exit, so everything is received by then."""
    session = requests.Session()
    session.trust_env = False  # loopback only: no proxy from the environment
    spans = OTLPSpanExporter(
        endpoint=f"{receiver.url}/v1/traces", compression=Compression.NoCompression, session=session
    )
    metrics = OTLPMetricExporter(
        endpoint=f"{receiver.url}/v1/metrics",
        compression=Compression.NoCompression,
        session=session,
    )
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(spans))
    reader = PeriodicExportingMetricReader(metrics, export_interval_millis=3_600_000)
    meter_provider = MeterProvider(metric_readers=[reader])
    try:
        yield tracer_provider, meter_provider
    finally:
        tracer_provider.force_flush()
        meter_provider.force_flush()
        tracer_provider.shutdown()
        meter_provider.shutdown()
        session.close()
