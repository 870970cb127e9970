"""Recording 10,000 tool steps: ``record_step`` against a bare INSERT of the same payload.

``record_step`` filters the step (METADATA, the default level), encodes it with the shared
encoder and stores it in its own ``BEGIN IMMEDIATE`` transaction that allocates the sequence
number. The baseline inserts the already filtered and encoded payload, one autocommit
transaction per row, on a file opened with the same pragmas. Both run in this process in
alternating batches. Target: ratio <= 1.5.

    python benchmarks/bench_audit.py [--steps N] [--batch B] [--level LEVEL]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from nr_llm_core import _audit_schema
from nr_llm_core.audit import AgentRunPersister
from nr_llm_core.encoding import encode_json_str
from nr_llm_core.privacy import PrivacyLevel, RunStepPrivacyFilter
from nr_llm_core.results import Artifact, ToolResult
from nr_llm_core.trace import RunStep, ToolInvocation


def make_steps(count: int) -> list[RunStep]:
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


def prepare_bare(
    directory: Path, steps: list[RunStep], level: PrivacyLevel
) -> tuple[Any, list[Any]]:
    """A connection with the persister's pragmas, and each step's row already encoded."""
    filter_ = RunStepPrivacyFilter(level)
    rows = []
    for seq, step in enumerate(steps, 1):
        record = filter_.filter(step.to_dict())
        payload = encode_json_str(record)
        rows.append((seq, record["kind"], record["round"], record["duration_ms"], payload))
    conn = _audit_schema.connect(directory / "bare.db", busy_timeout_ms=30_000)
    conn.execute(
        "INSERT INTO runs (id, status, started_at, privacy_level) "
        "VALUES ('bare', 'running', '2026-01-01T00:00:00.000000Z', 'metadata')"
    )
    return conn, rows


_BARE_INSERT = (
    "INSERT INTO events (run_id, seq, kind, round, duration_ms, recorded_at, payload) "
    "VALUES ('bare', ?, ?, ?, ?, '2026-01-01T00:00:00.000000Z', ?)"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=250, help="steps per alternating batch")
    parser.add_argument("--level", default="metadata", choices=[lv.value for lv in PrivacyLevel])
    args = parser.parse_args()
    level = PrivacyLevel(args.level)
    steps = make_steps(args.steps)
    record_times: list[float] = []
    bare_times: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        conn, rows = prepare_bare(Path(tmp), steps, level)
        store = AgentRunPersister(Path(tmp) / "record.db", privacy=level)
        run = store.begin()
        # Alternate short batches so that load from other processes on the machine falls on
        # both sides alike; compare the sums and the median of the per-batch ratios.
        for start in range(0, args.steps, args.batch):
            t0 = time.perf_counter()
            for row in rows[start : start + args.batch]:
                conn.execute(_BARE_INSERT, row)  # autocommit: one transaction per row
            t1 = time.perf_counter()
            for step in steps[start : start + args.batch]:
                if not store.record_step(run, step):
                    raise SystemExit("record_step failed")
            t2 = time.perf_counter()
            bare_times.append(t1 - t0)
            record_times.append(t2 - t1)
        stored = len(store.steps(run))
        store.close()
        conn.close()
    if stored != args.steps:
        raise SystemExit(f"stored {stored} of {args.steps} steps")
    record, bare = sum(record_times), sum(bare_times)
    ratios = sorted(r / b for r, b in zip(record_times, bare_times, strict=True))
    per = 1e6 / args.steps
    print(f"steps: {args.steps}, level: {level.value}, {len(ratios)} alternating batches")
    print(f"record_step (filter + encode + insert): {record:.3f} s  ({record * per:.1f} µs/step)")
    print(f"bare INSERT of the encoded payload:     {bare:.3f} s  ({bare * per:.1f} µs/step)")
    print(
        f"ratio (totals): {record / bare:.2f}x, median per batch: {statistics.median(ratios):.2f}x"
    )
    print("target: <= 1.5x")


if __name__ == "__main__":
    main()
