"""Scale figures beyond one call (issue 18, point 4): no targets, reported in docs/performance.md.

- ``invoke()`` throughput from 1, 2 and 8 threads sharing one host (calls per second, wall
  time: the GIL is the point of measuring threads at all);
- ``record_step`` throughput from 1, 4 and 16 threads on one SQLite file in WAL mode, each
  thread with its own persister (its own connection) and its own run, one committed
  transaction per step;
- memory per stored step (database and WAL bytes on disk, and Python heap the persister keeps)
  and per suspended run (the suspended state held in memory by the host, and its state file).

    python benchmarks/scale.py [--quick]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from rows_audit import tool_steps  # noqa: E402
from rows_loop import Lookup, _provider  # noqa: E402
from rows_seam import Square  # noqa: E402

from nr_llm_core import ToolHost, ToolLoop, ToolResult, ToolSpec, hookimpl  # noqa: E402
from nr_llm_core.audit import AgentRunPersister  # noqa: E402
from nr_llm_core.privacy import PrivacyLevel  # noqa: E402


def _threads(count: int, work: Callable[[int], None]) -> tuple[float, float]:
    """Wall seconds and process CPU seconds for ``count`` threads to each run
    ``work(index)``, started together."""
    gate = threading.Barrier(count + 1)

    def body(index: int) -> None:
        gate.wait()
        work(index)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    gate.wait()
    wall, cpu = time.perf_counter(), time.process_time()
    for t in threads:
        t.join()
    return time.perf_counter() - wall, time.process_time() - cpu


#: Each thread count is measured this many times, in turn; the best figure counts (a shared
#: machine only ever makes a figure worse).
REPEATS = 3


def _best_rates(
    total: int, counts: tuple[int, ...], measure: Callable[[int], tuple[float, float]]
) -> dict[str, dict[int, int]]:
    """Per thread count: operations per wall second and per CPU second (all threads), the best
    of :data:`REPEATS` turns."""
    wall: dict[int, float] = dict.fromkeys(counts, 0.0)
    cpu: dict[int, float] = dict.fromkeys(counts, 0.0)
    for _ in range(REPEATS):
        for count in counts:
            w, c = measure(count)
            wall[count] = max(wall[count], total / w)
            cpu[count] = max(cpu[count], total / max(c, 1e-9))
    return {
        "per_s": {k: round(v) for k, v in wall.items()},
        "per_cpu_s": {k: round(v) for k, v in cpu.items()},
    }


def invoke_throughput(total: int) -> dict[str, dict[int, int]]:
    """``invoke()`` of the plugin-class tool of the invoke row, ``total`` calls shared by 1, 2
    and 8 threads."""
    host = ToolHost()
    host.register(Square())
    args = {"n": 7}

    def measure(count: int) -> tuple[float, float]:
        def work(_: int, per: int = total // count) -> None:
            invoke = host.invoke
            for _ in range(per):
                invoke("square", args)

        return _threads(count, work)

    return _best_rates(total, (1, 2, 8), measure)


def record_throughput(total: int, level: PrivacyLevel) -> dict[str, dict[int, int]]:
    """``record_step``, ``total`` steps shared by 1, 4 and 16 threads, each with its own
    persister and run on one WAL file."""
    steps = tool_steps(64)

    def measure(count: int) -> tuple[float, float]:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "audit.db"
            stores = [AgentRunPersister(path, privacy=level) for _ in range(count)]
            runs = [store.begin() for store in stores]

            def work(index: int, per: int = total // count) -> None:
                record = stores[index].record_step
                run = runs[index]
                for i in range(per):
                    if not record(run, steps[i % 64]):
                        raise SystemExit("record_step failed")

            try:
                return _threads(count, work)
            finally:
                for store in stores:
                    store.close()

    return _best_rates(total, (1, 4, 16), measure)


def memory_per_step(count: int, level: PrivacyLevel) -> dict[str, float]:
    """Bytes on disk (database + WAL, after a checkpoint) and Python heap kept, per stored
    step."""
    steps = tool_steps(64)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "audit.db"
        store = AgentRunPersister(path, privacy=level)
        run = store.begin()
        store.record_step(run, steps[0])
        store.close()
        before = _disk(path)
        store = AgentRunPersister(path, privacy=level)
        gc.collect()
        tracemalloc.start()
        heap_before = tracemalloc.get_traced_memory()[0]
        for i in range(count):
            store.record_step(run, steps[i % 64])
        gc.collect()
        heap = tracemalloc.get_traced_memory()[0] - heap_before
        tracemalloc.stop()
        store.close()  # the checkpoint folds the WAL in
        return {"disk_bytes": (_disk(path) - before) / count, "heap_bytes": heap / count}


def _disk(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())


class Send:
    """A public tool that needs approval: the run suspends when the model calls it."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(
            "send",
            "Send the numbers.",
            {"type": "object", "properties": {"n": {"type": "integer"}}},
            requires_approval=True,
            data_class="public",
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.text("sent")


def memory_per_suspended_run(runs: int, rounds: int) -> dict[str, float]:
    """A run of ``rounds`` lookups (a ~1 KB result each) that then asks for approval: the
    Python heap its suspended state takes while the host holds it (the heap with the states
    held, less the heap once they are dropped), and its state file."""
    host = ToolHost()
    host.register(Lookup())
    host.register(Send())
    answers = []
    for k in range(1, rounds + 2):
        name = "send" if k > rounds else "lookup"
        call = {"id": f"call_{k}", "type": "function"}
        call["function"] = {"name": name, "arguments": json.dumps({"n": k})}  # type: ignore[assignment]
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        body = {"choices": [{"message": message, "finish_reason": "tool_calls"}]}
        answers.append(json.dumps(body).encode())
    with tempfile.TemporaryDirectory() as tmp:
        store = AgentRunPersister(Path(tmp) / "audit.db", privacy=PrivacyLevel.METADATA)
        held = []
        gc.collect()
        tracemalloc.start()
        for _ in range(runs):
            stamps: list[float] = []
            loop = ToolLoop(_provider("openai", answers, stamps), host, max_iterations=rounds + 2)
            result = loop.run("Look the numbers up, then send them.")
            assert result.suspended is not None, result.termination_reason
            held.append(result.suspended)
            del loop, result
        gc.collect()
        with_states = tracemalloc.get_traced_memory()[0]
        kept = held[0]
        held.clear()  # what the states alone held: the heap with them, less without them
        gc.collect()
        heap = with_states - tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        held.append(kept)
        run = store.begin()
        store.suspend(run, held[0].to_dict())
        files = [p for p in (Path(tmp) / "audit.db-suspended").iterdir() if p.is_file()]
        state_file = sum(p.stat().st_size for p in files)
        store.close()
    return {"heap_bytes": heap / runs, "state_file_bytes": float(state_file), "rounds": rounds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny counts: does it run")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = parser.parse_args(argv)
    n = 1 if args.quick else 10
    figures: dict[str, Any] = {
        "invoke_calls_per_s": invoke_throughput(8_000 * n),
        "record_step_metadata_steps_per_s": record_throughput(160 * n, PrivacyLevel.METADATA),
        "record_step_full_steps_per_s": record_throughput(160 * n, PrivacyLevel.FULL),
        "per_step_metadata": memory_per_step(100 * n, PrivacyLevel.METADATA),
        "per_step_full": memory_per_step(100 * n, PrivacyLevel.FULL),
        "per_suspended_run": memory_per_suspended_run(2 * n + 1, 10),
    }
    for name, value in figures.items():
        shown = {k: round(v) if isinstance(v, float) else v for k, v in value.items()}
        print(f"{name:<34} {shown}")
    if args.json:
        print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
