"""A run suspended and resumed several times, each segment in a process of its own, read from
the real SDK's in-memory exporter of each process (tests/otel/_segment.py).

Every segment is one ``invoke_agent`` span in the run's one trace; each resumption is a child
of the segment it resumed, and links to it (``nr_llm.link.type = resumes``), so a trace viewer
walks the chain from the last segment to the first. Before, a resumption in another process
found only the ``traceparent`` stored when the run began, and every later segment hung off
(and linked to) the first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nr_llm_core.otel import semconv as sc
from nr_llm_core.stores import open_store
from nr_llm_core.traceparent import parse_traceparent

from ._memory import Memory

ROOT = Path(__file__).resolve().parents[2]


def segment(target: str, tmp_path: Path, run: str, position: int, level: str) -> dict[str, Any]:
    """Run one segment in a new Python process; what its exporter kept."""
    out = tmp_path / f"segment-{position}.json"
    # Nothing from the outside; the host secret the shared store signs states with, kept.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OTEL_", "NR_LLM_")) or k == "NR_LLM_SECRET"
    }
    done = subprocess.run(
        [sys.executable, "-m", "tests.otel._segment", target, str(out), run, str(position),
         level],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    kept: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return kept


def agent_span(kept: dict[str, Any]) -> dict[str, Any]:
    (span,) = [s for s in kept["spans"] if s["name"] == sc.INVOKE_AGENT]
    return span


def stored_traceparent(target: str, run_id: str) -> tuple[str, str, int] | None:
    with open_store(target) as store:
        record = store.get_run(run_id)
    assert record is not None
    return parse_traceparent(record["meta"])


@pytest.mark.parametrize("level", ["none", "full"])
def test_each_resumption_continues_the_segment_it_resumed(
    store_target: str, tmp_path: Path, level: str
) -> None:
    """start (suspends) -> resume in another process (suspends again) -> resume in a third
    process (completes), on SQLite and on PostgreSQL. At ``none`` as at ``full``: the links
    are ids and a host word."""
    first = segment(store_target, tmp_path, "-", 0, level)
    assert first["status"] == "awaiting_approval"
    run_id = first["run_id"]
    one = agent_span(first)
    assert stored_traceparent(store_target, run_id) == (
        one["trace_id"],
        one["span_id"],
        one["flags"],
    )

    second = segment(store_target, tmp_path, run_id, 1, level)
    assert second["status"] == "awaiting_approval"
    two = agent_span(second)
    assert stored_traceparent(store_target, run_id) == (
        two["trace_id"],
        two["span_id"],
        two["flags"],
    )

    third = segment(store_target, tmp_path, run_id, 2, level)
    assert third["status"] == "completed"
    three = agent_span(third)

    resumes = {sc.LINK_TYPE: sc.LINK_RESUMES}
    assert one["trace_id"] == two["trace_id"] == three["trace_id"]
    assert one["parent"] is None and one["links"] == []
    assert two["parent"] == one["span_id"]
    assert two["links"] == [
        {"trace_id": one["trace_id"], "span_id": one["span_id"], "attributes": resumes}
    ]
    assert three["parent"] == two["span_id"]
    assert three["links"] == [
        {"trace_id": two["trace_id"], "span_id": two["span_id"], "attributes": resumes}
    ]
    # The chain walks back from the last segment to the first, and each segment's own spans
    # (its chat and tool spans) hang off its own invoke_agent span.
    by_id = {s["span_id"]: s for kept in (first, second, third) for s in kept["spans"]}
    walked, span = [], three
    while span is not None:
        walked.append(span["span_id"])
        span = by_id.get(span["links"][0]["span_id"]) if span["links"] else None
    assert walked == [three["span_id"], two["span_id"], one["span_id"]]
    for kept, agent in ((first, one), (second, two), (third, three)):
        for span in kept["spans"]:
            if span is not agent:
                assert span["parent"] == agent["span_id"], span["name"]
    assert stored_traceparent(store_target, run_id) == (
        three["trace_id"],
        three["span_id"],
        three["flags"],
    )


def worker(url: str, tmp_path: Path, action: str, run: str, n: int = 0) -> dict[str, Any]:
    """One step of tests/otel/_worker_segment.py in a new Python process."""
    out = tmp_path / f"worker-{n}.json"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OTEL_", "NR_LLM_")) or k == "NR_LLM_SECRET"
    }
    env["NR_LLM_OTEL"] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "tests.otel._worker_segment", url, str(out), action, run],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(out.read_text(encoding="utf-8")) if action == "execute" else {}


def test_workers_continue_the_segment_another_worker_ran(pg_store_url: str, tmp_path: Path) -> None:
    """A queued run on PostgreSQL: a worker process starts it (it waits), an approver queues it
    again, a second worker process resumes it (it waits again), a third finishes it. The first
    segment's trace context is stored although a worker's run already exists, and each
    resumption is a child of, and links to, the segment before it."""
    worker(pg_store_url, tmp_path, "enqueue", "queued-run")
    segments = []
    for n in range(3):
        if n:
            worker(pg_store_url, tmp_path, "approve", "queued-run")
        kept = worker(pg_store_url, tmp_path, "execute", "queued-run", n)
        assert kept["status"] == ("completed" if n == 2 else "awaiting_approval")
        segments.append(agent_span(kept))
        assert stored_traceparent(pg_store_url, "queued-run") == (
            segments[-1]["trace_id"],
            segments[-1]["span_id"],
            segments[-1]["flags"],
        )
    one, two, three = segments
    resumes = {sc.LINK_TYPE: sc.LINK_RESUMES}
    assert one["trace_id"] == two["trace_id"] == three["trace_id"]
    assert (two["parent"], three["parent"]) == (one["span_id"], two["span_id"])
    assert two["links"] == [
        {"trace_id": one["trace_id"], "span_id": one["span_id"], "attributes": resumes}
    ]
    assert three["links"] == [
        {"trace_id": two["trace_id"], "span_id": two["span_id"], "attributes": resumes}
    ]


def test_what_a_process_remembers_does_not_outrank_the_store(
    memory: Memory, tmp_path: Path
) -> None:
    """Two long-lived processes on one store (two playgrounds, say), each with its telemetry:
    the first starts a run and remembers its span; the second resumes it, and it waits again;
    when the first resumes it, it continues the second's segment, which the store names, not
    the span it remembered from before."""
    from nr_llm_core import AgentRunPersister, ScriptedProvider, ToolHost, ToolLoop

    from ._runs import WriteNote
    from ._segment import SCRIPT

    def loop(store: AgentRunPersister, telemetry: Any, position: int) -> ToolLoop:
        provider = ScriptedProvider(SCRIPT)
        provider.position = position
        host = ToolHost()
        host.register(WriteNote())
        return ToolLoop(provider, host, persister=store, telemetry=telemetry)

    here, there = memory.telemetry(), memory.telemetry()
    with AgentRunPersister(tmp_path / "audit.db") as store:
        run_id = loop(store, here, 0).run("hi").run_id
        loop(store, there, 1).resume(run_id, approved=True)
        loop(store, here, 2).resume(run_id, approved=True)
    one, two, three = memory.named("invoke_agent")
    assert three.parent is not None and three.parent.span_id == two.context.span_id
    assert [link.context.span_id for link in three.links] == [two.context.span_id]
    assert [link.context.span_id for link in two.links] == [one.context.span_id]
