"""Core benchmarks: the seam's overhead, bounding cost, and refusal cost, as ratios.

Run: ``python benchmarks/bench_core.py``. Every figure is a ratio against a baseline measured
in the same run, so a noisy machine moves both sides together. Each timing is the best of
several repeats.
"""

from __future__ import annotations

import json
import sys
import timeit
from collections.abc import Callable
from typing import Any

import pluggy

from nr_llm_core import Artifact, ToolHost, ToolResult, ToolSpec, hookimpl
from nr_llm_core.bounding import bound_result
from nr_llm_core.hooks import PROJECT_NAME, ToolHookSpec

RESULT = ToolResult.text("ok")


class Trivial:
    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(
            "trivial",
            "Returns a constant.",
            {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return RESULT


def best(fn: Callable[[], object], number: int, repeat: int = 7) -> float:
    """Seconds per call, the best of ``repeat`` runs of ``number`` calls."""
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def interleaved(fns: list[Callable[[], object]], number: int, rounds: int = 15) -> list[float]:
    """Best seconds per call of each function, measured in alternation so that a burst of load
    on a noisy machine falls on every candidate alike."""
    timers = [timeit.Timer(fn) for fn in fns]
    bests = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, timer in enumerate(timers):
            bests[i] = min(bests[i], timer.timeit(number) / number)
    return bests


def row(label: str, seconds: float) -> None:
    print(f"  {label:<58} {seconds * 1e6:>10.2f} µs")


def verdict(name: str, ratio: float, target: float) -> bool:
    ok = ratio <= target
    print(f"  => {name}: {ratio:.2f}x (target <= {target:g}x) {'PASS' if ok else 'MISS'}")
    return ok


def bench_invoke() -> bool:
    print("invoke() of a trivial tool, argument validation on")
    tool = Trivial()
    host = ToolHost()
    host.register(tool)
    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(ToolHookSpec)
    pm.register(Trivial())
    args = {"text": "hello"}
    direct, hook, seam = interleaved(
        [
            lambda: tool.execute(args),
            lambda: pm.hook.execute(arguments=args, context=None),
            lambda: host.invoke("trivial", args),
        ],
        number=20_000,
    )
    row("execute() called directly", direct)
    row("one bare pm.hook.execute() call", hook)
    row("ToolHost.invoke()", seam)
    overhead = seam - direct
    row("invoke() overhead over the direct call", overhead)
    return verdict("invoke() overhead / bare hook call", overhead / hook, 1.0)


def table(target_bytes: int) -> Artifact:
    columns = [f"column_{i}" for i in range(8)]
    rows: list[list[str]] = []
    size = len(json.dumps(Artifact.table("bench", columns, rows).to_dict()))
    while size < target_bytes:
        n = len(rows)
        new = [f"r{n}c{i} value" for i in range(8)]
        rows.append(new)
        size += len(json.dumps(new)) + 1
    return Artifact.table("bench", columns, rows)


def bench_bounding() -> bool:
    artifact = table(48_000)
    listed = [artifact.to_dict()]
    result = ToolResult.text("x", artifact)
    size = len(json.dumps(listed, ensure_ascii=False, separators=(",", ":")))
    print(f"\nbounding a {size:,}-byte table ({len(artifact.data['rows'])} rows x 8 columns)")
    n = 100
    dumps, bounded = interleaved(
        [lambda: json.dumps(listed, allow_nan=False), lambda: bound_result(result)], n
    )
    row("one json.dumps(..., allow_nan=False) (C encoder)", dumps)
    try:
        import orjson
    except ImportError:
        print("  (orjson not installed: pip install orjson to compare)")
    else:
        row(
            f"one orjson.dumps() (orjson {orjson.__version__}, reported only)",
            best(lambda: orjson.dumps(listed), n),
        )
    row("bound_result(): walk + exact size + size check", bounded)
    assert bound_result(result).artifacts[0].label == "bench"  # type: ignore[union-attr]
    return verdict("bounding / json.dumps", bounded / dumps, 2.0)


def bench_refusal() -> bool:
    print("\nrefusing an oversized artifact")
    small = ToolResult.text("x", Artifact.text("small", "x" * 100_000))
    large = ToolResult.text("x", Artifact.text("large", "x" * 100_000_000))
    t_small, t_large = interleaved(
        [lambda: bound_result(small), lambda: bound_result(large)], 5_000
    )
    row("refuse a 100 KB artifact", t_small)
    row("refuse a 100 MB artifact", t_large)
    return verdict("100 MB refusal / 100 KB refusal", t_large / t_small, 2.0)


def main() -> int:
    print(f"nr-llm core benchmarks (Python {sys.version.split()[0]})\n")
    results = [bench_invoke(), bench_bounding(), bench_refusal()]
    print(f"\n{sum(results)}/{len(results)} targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
