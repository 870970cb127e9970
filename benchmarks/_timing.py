"""Timing on a noisy shared machine: CPU time, interleaved rounds, the minimum per candidate.

Every figure the harness reports is a ratio of two candidates measured in the same process, in
alternation, so that a burst of load from other processes falls on both alike. Each candidate is
timed with the thread's CPU clock (``CLOCK_THREAD_CPUTIME_ID``): time the process spent waiting
for a core does not count. Of the rounds, the fastest counts: noise only ever adds time.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Mapping
from typing import Final

__all__ = ["CPU", "Figure", "interleaved", "per_call"]

#: The clock every figure is taken with: CPU time of the calling thread, 1 ns resolution.
CPU: Final = time.thread_time


class Figure(dict[str, float]):
    """Seconds per call of each candidate (the best round), by candidate name."""


def per_call(fn: Callable[[], object], number: int) -> float:
    """CPU seconds per call of ``fn`` over ``number`` calls in a row."""
    clock = CPU
    start = clock()
    for _ in range(number):
        fn()
    return (clock() - start) / number


def interleaved(
    candidates: Mapping[str, Callable[[], object]], *, number: int, rounds: int
) -> Figure:
    """The best CPU seconds per call of each candidate over ``rounds`` rounds; every round
    times each candidate once (``number`` calls), in turn, with the collector paused (a
    collection would land on whichever candidate happened to be running)."""
    best = Figure({name: float("inf") for name in candidates})
    items = list(candidates.items())
    for fn in candidates.values():  # warm caches, specialise the bytecode
        for _ in range(min(number, 50)):
            fn()
    enabled = gc.isenabled()
    gc.disable()
    try:
        for round_no in range(rounds):
            # Alternate the order too: the second candidate of a pair is not always the one
            # that runs right after the other's allocations.
            ordered = items if round_no % 2 == 0 else items[::-1]
            for name, fn in ordered:
                best[name] = min(best[name], per_call(fn, number))
            gc.collect()
    finally:
        if enabled:
            gc.enable()
    return best
