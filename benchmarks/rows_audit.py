"""The audit row: ``record_step`` against a bare sqlite3 INSERT of the same bytes.

``record_step`` filters a tool step (at METADATA, the default, and at FULL), encodes it and
stores it in its own committed transaction. The baseline inserts the payload that
``record_step`` writes for the same step, already filtered and encoded, one autocommit
transaction per row, into a file opened by the store's own ``connect`` (the same PRAGMAs: WAL,
``synchronous = NORMAL``, ``secure_delete``, foreign keys) and the same schema. Both write to
files in one temporary directory, alternately, a batch at a time.
"""

from __future__ import annotations

import itertools
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from _timing import interleaved

from nr_llm_core import Artifact, ToolResult
from nr_llm_core.audit import AgentRunPersister
from nr_llm_core.encoding import encode_json_str
from nr_llm_core.privacy import PrivacyLevel, RunStepPrivacyFilter
from nr_llm_core.trace import RunStep, ToolInvocation

__all__ = ["audit_rows", "tool_steps"]

_BARE_INSERT = (
    "INSERT INTO events (run_id, seq, kind, round, duration_ms, recorded_at, payload) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_RECORDED_AT = "2026-01-01T00:00:00.000000Z"


def tool_steps(count: int) -> list[RunStep]:
    """Tool steps shaped like real ones: a paragraph of content and a small table."""
    steps = []
    for i in range(count):
        result = ToolResult.text(
            f"Found {i % 7} matching rows for the query; see the table for details. " * 3,
            Artifact.table(
                "Matches", ["id", "name", "score"], [[str(j), f"item {j}", "0.5"] for j in range(5)]
            ),
        )
        invocation = ToolInvocation(
            name="search", arguments={"query": f"q{i}", "limit": 5}, result=result, call_id=f"c{i}"
        )
        steps.append(RunStep.tool(round=i % 5, duration_ms=1.25, invocation=invocation))
    return steps


def _connect(path: Path) -> sqlite3.Connection:
    """A connection opened exactly as the store opens its own (its schema, its PRAGMAs)."""
    from nr_llm_core import _audit_schema

    return _audit_schema.connect(path, busy_timeout_ms=30_000)


def audit_rows(number: int, rounds: int) -> list[dict[str, Any]]:
    """The record_step row at METADATA and at FULL."""
    steps = tool_steps(64)
    out = []
    for level in (PrivacyLevel.METADATA, PrivacyLevel.FULL):
        with tempfile.TemporaryDirectory() as tmp:
            out.append(_one_level(Path(tmp), steps, level, number, rounds))
    return out


def _one_level(
    tmp: Path, steps: list[RunStep], level: PrivacyLevel, number: int, rounds: int
) -> dict[str, Any]:
    filter_ = RunStepPrivacyFilter(level)
    payloads = []
    for step in steps:
        record = filter_.filter(step.to_dict())
        payloads.append(
            (record["kind"], record["round"], record["duration_ms"], encode_json_str(record))
        )
    conn = _connect(tmp / "bare.db")
    conn.execute(
        "INSERT INTO runs (id, status, started_at, privacy_level) VALUES ('bare', 'running', ?, ?)",
        (_RECORDED_AT, level.value),
    )
    store = AgentRunPersister(tmp / "record.db", privacy=level)
    run = store.begin()
    seq = itertools.count(1)
    next_payload = itertools.cycle(payloads).__next__
    next_step = itertools.cycle(steps).__next__
    record_step = store.record_step

    def bare() -> None:
        kind, round_no, duration, payload = next_payload()
        conn.execute(
            _BARE_INSERT, ("bare", next(seq), kind, round_no, duration, _RECORDED_AT, payload)
        )

    def recorded() -> None:
        if not record_step(run, next_step()):
            raise SystemExit("record_step failed")

    next_prepared = itertools.cycle(steps).__next__
    floor_store, floored = _floor(tmp, steps, filter_, level)

    def prepared() -> None:
        # What any store must do first (filter and encode the step), then the bare INSERT:
        # shown beside the row, not its verdict.
        record = filter_.filter(next_prepared().to_dict())
        payload = encode_json_str(record)
        conn.execute(
            _BARE_INSERT,
            (
                "bare",
                next(seq),
                record["kind"],
                record["round"],
                record["duration_ms"],
                _RECORDED_AT,
                payload,
            ),
        )

    try:
        best = interleaved(
            {"bare": bare, "record": recorded, "prepared": prepared, "floor": floored},
            number=number,
            rounds=rounds,
        )
        stored = store.steps(run)
        # The same bytes: what record_step stored is what the baseline inserts.
        shown = min(len(stored), len(payloads))
        assert [s["payload"] for s in stored[:shown]] == [p[3] for p in payloads[:shown]]
    finally:
        store.close()
        floor_store.close()
        conn.close()
    return {
        "row": f"record_step_{level.value}",
        "candidate": best["record"],
        "baseline": best["bare"],
        "ratio": best["record"] / best["bare"],
        "payload_bytes": len(payloads[0][3].encode()),
        "note": f"against filter + encode + the bare INSERT: "
        f"{best['record'] / best['prepared']:.2f}x ({best['prepared'] * 1e6:.1f} us); "
        f"the floor, record_step with its filter and encoder taking no time: "
        f"{best['floor'] / best['bare']:.2f}x",
    }


def _floor(
    tmp: Path, steps: list[RunStep], filter_: RunStepPrivacyFilter, level: PrivacyLevel
) -> tuple[AgentRunPersister, Any]:
    """``record_step`` with its filter and encoder replaced by lookups of their results for
    these steps: what it costs when filtering and encoding take no time (its bookkeeping,
    the open-run check, the clock, the INSERT). No target: it shows what a faster filter or
    encoder could at best reach (ADR 0027)."""
    import nr_llm_core.audit as audit

    records = {id(step): filter_.record(step) for step in steps}
    texts = {id(record): encode_json_str(record) for record in records.values()}

    class Recorded:
        def record(self, step: RunStep) -> dict[str, Any]:
            return records[id(step)]

    def looked_up(record: dict[str, Any]) -> str:
        return texts[id(record)]

    store = AgentRunPersister(tmp / "floor.db", privacy=level)
    store._filters = {level: Recorded()}  # type: ignore[dict-item]
    run = store.begin()
    next_step = itertools.cycle(steps).__next__
    encoder = audit.encode_json_str

    def floored() -> None:
        audit.encode_json_str = looked_up
        try:
            if not store.record_step(run, next_step()):
                raise SystemExit("record_step failed")
        finally:
            audit.encode_json_str = encoder

    return store, floored
