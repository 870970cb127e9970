"""Memory stays flat over many invocations, whatever their number: the growth of the Python
heap between two tracemalloc snapshots, and the growth of the process's resident memory, are
each bounded in bytes.

tracemalloc sees every Python allocation, exactly, but nothing else; the resident set size
sees everything (memory a C extension or SQLite keeps, thread stacks, the allocator's own
fragmentation), but only in pages and arenas. A leak hides from at most one of them.
"""

from __future__ import annotations

import gc
import sys
import tracemalloc
from pathlib import Path

import pytest

from nr_llm_core import ToolHost

from ._tools import SOAK_INVOCATIONS, soak_host

#: Allowed growth between the snapshots: interpreter caches and free lists, not per-call leaks
#: (a leak of one 8-byte pointer per call would be 400 KB at the default 50,000 calls).
MAX_GROWTH_BYTES = 256 * 1024

#: Allowed growth of the resident set over the same calls. CPython takes memory from the system
#: in 1 MiB arenas, and glibc's heap (blocks over 512 bytes, such as the 60,000-byte oversized
#: text) is not always handed back: a few arenas of slack, whatever the number of calls. A
#: per-call leak is not: this bound catches 84 bytes per call at the default 50,000 calls, 4 at
#: the full soak's 1,000,000. Measured on this code: no growth; with every result kept (a
#: list in the test), 32 MiB.
MAX_RSS_GROWTH_BYTES = 4 * 1024 * 1024

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


def _resident_bytes() -> int:
    """This process's resident set size now (``VmRSS``), in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024  # reported in kB
    raise AssertionError("no VmRSS line in /proc/self/status")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_resident_memory_is_flat_over_many_invocations() -> None:
    host = soak_host()
    _run(host, 7_000)  # warm up as above, without tracemalloc (its tables are resident too)
    gc.collect()
    before = _resident_bytes()
    _run(host, SOAK_INVOCATIONS)
    gc.collect()
    growth = _resident_bytes() - before
    assert growth < MAX_RSS_GROWTH_BYTES, (
        f"the resident set grew {growth} bytes over {SOAK_INVOCATIONS} calls"
    )
