"""Memory stays flat over many invocations: growth between two tracemalloc snapshots is
bounded in bytes, whatever the number of calls."""

from __future__ import annotations

import gc
import tracemalloc

from nr_llm_core import ToolHost

from ._tools import SOAK_INVOCATIONS, soak_host

#: Allowed growth between the snapshots: interpreter caches and free lists, not per-call leaks
#: (a leak of one 8-byte pointer per call would be 400 KB at the default 50,000 calls).
MAX_GROWTH_BYTES = 256 * 1024

CALLS = (
    ("trivial", {"text": "x"}),
    ("table", {"n": 7}),
    ("refuses", {}),
    ("oversized", {}),  # refused by the walk: the marker
    ("oversized", {"nan": True}),
    ("trivial", {"text": 3}),  # invalid arguments
    ("nope", {}),  # unknown tool
)


def _run(host: ToolHost, count: int) -> None:
    invoke = host.invoke
    calls = CALLS
    width = len(calls)
    for i in range(count):
        name, arguments = calls[i % width]
        invoke(name, arguments)


def test_memory_is_flat_over_many_invocations() -> None:
    host = soak_host()
    _run(host, 5_000)  # warm caches: schema validators, interned strings, free lists
    gc.collect()
    tracemalloc.start()
    try:
        _run(host, 2_000)
        gc.collect()
        before = tracemalloc.take_snapshot()
        _run(host, SOAK_INVOCATIONS)
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    diff = after.compare_to(before, "lineno")
    growth = sum(d.size_diff for d in diff)
    top = "\n".join(str(d) for d in diff[:5])
    assert growth < MAX_GROWTH_BYTES, f"grew {growth} bytes over {SOAK_INVOCATIONS} calls:\n{top}"
