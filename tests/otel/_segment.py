"""One segment of a run, in a process of its own: start it or resume it, and write what the
SDK's in-memory exporter kept to a JSON file.

``python -m tests.otel._segment STORE OUT RUN POSITION LEVEL``: ``STORE`` is a SQLite file or a
PostgreSQL URL (``open_store``); ``RUN`` is ``-`` to start a run (else the id of the run to
resume, approving its pending call); ``POSITION`` is where the scripted provider's turns start
(what the earlier segments used up); ``LEVEL`` the store's privacy level. The script calls
``write_note`` (which needs approval) twice, then answers, so a run suspends, is resumed and
suspends again, and is resumed to its end.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from nr_llm_core import ScriptedProvider, ToolHost, ToolLoop
from nr_llm_core.otel import OtelTelemetry
from nr_llm_core.stores import open_store
from tests.otel._runs import WriteNote

SCRIPT = [
    {"content": "", "tool_calls": [{"id": "a", "name": "write_note", "arguments": {"text": "1"}}]},
    {"content": "", "tool_calls": [{"id": "b", "name": "write_note", "arguments": {"text": "2"}}]},
    "done",
]


def _span(span: ReadableSpan) -> dict[str, Any]:
    context = span.context
    assert context is not None
    return {
        "name": span.name,
        "trace_id": f"{context.trace_id:032x}",
        "span_id": f"{context.span_id:016x}",
        "flags": int(context.trace_flags),
        "parent": None if span.parent is None else f"{span.parent.span_id:016x}",
        "links": [
            {
                "trace_id": f"{link.context.trace_id:032x}",
                "span_id": f"{link.context.span_id:016x}",
                "attributes": dict(link.attributes or {}),
            }
            for link in span.links
        ],
        "attributes": dict(span.attributes or {}),
    }


def main(target: str, out: str, run: str, position: int, level: str) -> None:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    provider = ScriptedProvider(SCRIPT)
    provider.position = position
    host = ToolHost()
    host.register(WriteNote())
    with open_store(target, privacy=level) as store:
        loop = ToolLoop(
            provider,
            host,
            persister=store,
            telemetry=OtelTelemetry(tracer_provider=tracer_provider),
        )
        result = loop.run("hi") if run == "-" else loop.resume(run, approved=True)
    tracer_provider.shutdown()
    spans = [_span(s) for s in exporter.get_finished_spans()]
    Path(out).write_text(
        json.dumps(
            {"run_id": result.run_id, "status": result.termination_reason.value, "spans": spans}
        ),
        encoding="utf-8",
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
