"""Sixteen threads invoking tools through one host for a bounded time: no error, no lost step."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

from nr_llm_core import ToolHost
from nr_llm_core.trace import RunStep, RunTrace, ToolInvocation

from ._tools import SOAK_SECONDS, soak_host

THREADS = 16


def _soak(host: ToolHost, seconds: float, calls: list[tuple[str, dict[str, object], str]]) -> None:
    """Run ``calls`` round-robin on 16 threads; every result must be the expected content."""
    seen: Counter[tuple[int, int]] = Counter()
    lock = threading.Lock()

    def collect(trace: RunTrace, step: RunStep) -> None:
        with lock:  # a RunTrace-style collector, as the inspector and the persister are
            seen[(step.round, int(step.to_dict()["tool_arguments"]["seq"]))] += 1

    trace = RunTrace("soak", [collect])
    done = [0] * THREADS
    failures: list[str] = []
    stop = time.monotonic() + seconds
    start = threading.Barrier(THREADS)

    def work(index: int) -> None:
        start.wait()
        seq = 0
        while time.monotonic() < stop:
            name, arguments, expected = calls[(index + seq) % len(calls)]
            t0 = time.perf_counter()
            result = host.invoke(name, arguments)
            if result.content != expected:
                failures.append(f"{name}: {result.content[:200]}")
            recorded = {**arguments, "seq": seq}
            invocation = ToolInvocation(name=name, arguments=recorded, result=result)
            trace.record(
                RunStep.tool(
                    round=index, duration_ms=(time.perf_counter() - t0) * 1e3, invocation=invocation
                )
            )
            seq += 1
        done[index] = seq

    threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 60)
    assert not any(t.is_alive() for t in threads)
    assert failures == []
    assert all(done), done
    # No lost and no doubled step: each (thread, seq) recorded exactly once, in the trace and in
    # the listener.
    assert len(trace) == sum(done)
    assert set(seen.values()) == {1}
    assert set(seen) == {(i, s) for i in range(THREADS) for s in range(done[i])}


def test_sixteen_threads_in_process() -> None:
    host = soak_host()
    _soak(
        host,
        SOAK_SECONDS,
        [
            ("trivial", {"text": "x"}, "ok"),
            ("table", {"n": 3}, "table 3"),
            ("refuses", {}, "no"),
            ("nope", {}, 'Error: unknown tool "nope"'),
        ],
    )


def test_sixteen_threads_on_an_isolated_worker(on_path: Path) -> None:
    from tests.isolation.conftest import isolated_host

    with isolated_host() as host:
        _soak(
            host,
            SOAK_SECONDS,
            [
                ("iso_echo", {"text": "x"}, "echo: x"),
                ("calm", {}, host.invoke("calm", {}).content),  # one worker: one pid
            ],
        )
