"""A queued run on a shared PostgreSQL store, driven by a worker's ``RunExecutor`` in a
process of its own, with OpenTelemetry on (``NR_LLM_OTEL``) over the SDK's in-memory exporter.

``python -m tests.otel._worker_segment URL OUT ACTION RUN``: ``enqueue`` records run ``RUN``
to start with the prompt ``hi``; ``execute`` takes it as a worker does and drives it until it
ends or waits (what the exporter kept goes to ``OUT``); ``approve`` approves its pending call
for a worker, as ``nr-llm runs approve`` on a shared store does. The script is the one of
tests/otel/_segment.py: two calls that need approval, then an answer.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from nr_llm_core import ChatMessage, ScriptedProvider, ToolHost
from nr_llm_core.approval import SuspendedRunState
from nr_llm_core.providers import Usage
from nr_llm_core.providers.base import TrustZone
from nr_llm_core.stores import open_store
from nr_llm_core.stores._runner import RunExecutor
from nr_llm_core.stores.postgres import PostgresStore
from tests.otel._runs import WriteNote
from tests.otel._segment import SCRIPT, _span


def _provider_for(state: SuspendedRunState) -> ScriptedProvider:
    # The turns the run has used up are its assistant messages.
    provider = ScriptedProvider(SCRIPT)
    provider.position = sum(1 for m in state.messages if m.role == "assistant")
    return provider


def main(url: str, out: str, action: str, run: str) -> None:
    with open_store(url) as store:
        assert isinstance(store, PostgresStore)
        if action == "enqueue":
            state = SuspendedRunState.create(
                run_id=run,
                messages=(ChatMessage.user("hi"),),
                pending=(),
                needs_approval=(),
                iterations=0,
                tool_rounds=0,
                usage=Usage(),
                allowed=None,
            )
            store.enqueue(state.to_dict(), privacy="metadata")
            return
        if action == "approve":
            waiting = store.load_suspended(run)
            assert waiting is not None
            decisions = dict.fromkeys(waiting["needs_approval"], True)
            store.approve_queued(run, digest=waiting["digest"], decisions=decisions)
            return
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        assert os.environ.get("NR_LLM_OTEL") == "1"
        host = ToolHost()
        host.register(WriteNote())
        executor = RunExecutor(
            store, host, _provider_for, name=f"worker-{os.getpid()}", zone=TrustZone.LOCAL
        )
        status = executor.execute(run)
    provider.shutdown()
    spans = [_span(s) for s in exporter.get_finished_spans()]
    Path(out).write_text(json.dumps({"status": status, "spans": spans}), encoding="utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:5])
