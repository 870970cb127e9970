"""The speed targets of issue 18, measured against same-run baselines, with a verdict per row.

    python benchmarks/run.py            # the verdict: exit 1 when a target is missed
    python benchmarks/run.py --quick    # checks that every row runs (CI); its timings mean nothing
    python benchmarks/run.py --rows invoke,tool --processes 3

Rows (candidate / its same-run baseline, target):

- ``invoke``: ``invoke()`` of a plugin-class tool (one validated int, builds its own result) /
  one bare ``pm.hook.execute()`` with one implementation; <= 1.0
- ``tool``: the same tool written with ``@tool`` / the same bare hook call; <= 1.2
- ``bounding``: ``bound_result`` of a ~42 KB table of ints, floats, bools and nested objects /
  C ``json.dumps`` of it; <= 1.5
- ``record_step_metadata``, ``record_step_full``: ``record_step`` of a tool step at that level /
  a bare sqlite3 INSERT of the same bytes with the same PRAGMAs; <= 1.5
- ``loop_openai``, ``loop_anthropic``: one loop round at round 20 / round 1 of the same run;
  <= 1.2

Each worker process measures every row (see ``_timing``: CPU time, interleaved rounds, the
minimum per candidate) and prints its ratios as JSON; the verdict is the median ratio over the
worker processes, run one after the other.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Final

HERE: Final = Path(__file__).resolve().parent

#: Row -> (target ratio, what it compares).
TARGETS: Final[dict[str, tuple[float, str]]] = {
    "invoke": (1.0, "invoke() of a plugin-class tool / one bare pm.hook.execute()"),
    "tool": (1.2, "invoke() of the same tool written with @tool / the same hook call"),
    "bounding": (1.5, "bound_result of a ~42 KB mixed-type table / C json.dumps of it"),
    "record_step_metadata": (1.5, "record_step at METADATA / a bare INSERT of the same bytes"),
    "record_step_full": (1.5, "record_step at FULL / a bare INSERT of the same bytes"),
    "loop_openai": (1.2, "loop round 20 / round 1, OpenAI-compatible adapter"),
    "loop_anthropic": (1.2, "loop round 20 / round 1, Anthropic adapter"),
}
GROUPS: Final = ("invoke", "bounding", "audit", "loop")

#: (rounds, calls per round) for each group, full and quick.
_EFFORT: Final[dict[str, dict[str, tuple[int, int]]]] = {
    "full": {"invoke": (25, 4000), "bounding": (20, 10), "audit": (15, 200), "loop": (100, 0)},
    "quick": {"invoke": (2, 50), "bounding": (2, 2), "audit": (2, 10), "loop": (2, 0)},
}


def measure(groups: list[str], effort: str) -> list[dict[str, Any]]:
    """Every row of ``groups`` in this process."""
    sys.path.insert(0, str(HERE))
    from rows_audit import audit_rows
    from rows_loop import loop_rows
    from rows_seam import bounding_row, invoke_rows

    plan = _EFFORT[effort]
    rows: list[dict[str, Any]] = []
    if "invoke" in groups:
        rounds, number = plan["invoke"]
        rows.extend(invoke_rows(number, rounds))
    if "bounding" in groups:
        rounds, number = plan["bounding"]
        rows.append(bounding_row(number, rounds))
    if "audit" in groups:
        rounds, number = plan["audit"]
        rows.extend(audit_rows(number, rounds))
    if "loop" in groups:
        rows.extend(loop_rows(plan["loop"][0]))
    return rows


def _worker(groups: list[str], effort: str) -> list[dict[str, Any]]:
    out = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--worker",
            "--effort",
            effort,
            "--rows",
            ",".join(groups),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        sys.stderr.write(out.stderr)
        raise SystemExit(f"a worker process failed (exit {out.returncode})")
    rows: list[dict[str, Any]] = json.loads(out.stdout)
    return rows


def report(per_process: list[list[dict[str, Any]]], *, quick: bool) -> bool:
    """Print each row's median ratio and verdict; whether every target was met."""
    by_row: dict[str, list[dict[str, Any]]] = {}
    for rows in per_process:
        for row in rows:
            by_row.setdefault(row["row"], []).append(row)
    met_all = True
    print(f"{'row':<22} {'candidate':>11} {'baseline':>11} {'ratio':>7} {'target':>7}  verdict")
    for name, samples in by_row.items():
        target, what = TARGETS[name]
        ratios = [s["ratio"] for s in samples]
        ratio = statistics.median(ratios)
        # The figures of the process whose ratio is the median (the lower middle for an even
        # count), so that candidate / baseline shows the ratio the verdict is on.
        shown = sorted(samples, key=lambda s: s["ratio"])[(len(samples) - 1) // 2]
        met = ratio <= target
        met_all &= met
        verdict = "met" if met else "missed"
        print(
            f"{name:<22} {shown['candidate'] * 1e6:>9.2f}us {shown['baseline'] * 1e6:>9.2f}us "
            f"{ratio:>6.2f}x {target:>6.2f}x  {verdict}"
        )
        spread = ", ".join(f"{r:.2f}" for r in sorted(ratios))
        print(f"    {what}; ratios per process: {spread}")
        if "note" in shown:
            print(f"    {shown['note']}")
    if quick:
        print("quick mode: the rows ran; their timings are not a verdict")
    return met_all


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one short process: does it run")
    parser.add_argument("--processes", type=int, default=5, help="worker processes (median)")
    parser.add_argument("--rows", default=",".join(GROUPS), help=f"of {', '.join(GROUPS)}")
    parser.add_argument("--json", action="store_true", help="print every sample as JSON too")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--effort", default="full", choices=sorted(_EFFORT), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    groups = [g for g in args.rows.split(",") if g]
    unknown = set(groups) - set(GROUPS)
    if unknown:
        parser.error(f"unknown rows: {', '.join(sorted(unknown))}")
    if args.worker:
        print(json.dumps(measure(groups, args.effort)))
        return 0
    started = time.monotonic()
    effort = "quick" if args.quick else "full"
    processes = 1 if args.quick else max(1, args.processes)
    print(f"nr-llm speed targets (Python {sys.version.split()[0]}, {processes} process(es))")
    samples = [_worker(groups, effort) for _ in range(processes)]
    met = report(samples, quick=args.quick)
    if args.json:
        print(json.dumps(samples))
    print(f"{time.monotonic() - started:.0f} s")
    if args.quick:
        return 0
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
