"""The speed benchmarks run in CI in their quick mode: every row is measured and printed, and
the verdict logic says "missed" and exits non-zero when a ratio is over its target. Their
timings are never asserted here (a shared CI machine decides nothing about speed)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"


def _run_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_run", BENCHMARKS / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_quick_mode_measures_and_prints_every_row() -> None:
    """``benchmarks/run.py --quick`` measures every row of issue 18 in one worker and exits 0."""
    run = _run_module()
    out = subprocess.run(
        [sys.executable, str(BENCHMARKS / "run.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    printed = {line.split()[0] for line in out.stdout.splitlines() if line and line[0] != " "}
    assert set(run.TARGETS) <= printed
    assert "quick mode: the rows ran" in out.stdout


def test_the_scale_figures_run() -> None:
    """``benchmarks/scale.py --quick`` measures the thread and memory figures and exits 0."""
    out = subprocess.run(
        [sys.executable, str(BENCHMARKS / "scale.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    for figure in ("invoke_calls_per_s", "record_step_full_steps_per_s", "per_suspended_run"):
        assert figure in out.stdout


def _sample(row: str, ratio: float) -> dict[str, Any]:
    return {"row": row, "candidate": ratio * 1e-6, "baseline": 1e-6, "ratio": ratio}


@pytest.mark.parametrize(("ratios", "met"), [((1.0, 1.4, 1.6), True), ((1.4, 1.6, 1.7), False)])
def test_the_verdict_is_the_median_over_processes(
    ratios: tuple[float, ...], met: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """A row's verdict is its median ratio over the worker processes against its target
    (bounding: 1.5): one slow process does not miss a target, a slow median does."""
    run = _run_module()
    assert run.report([[_sample("bounding", r)] for r in ratios], quick=False) is met
    assert ("missed" in capsys.readouterr().out) is not met


def test_a_missed_target_exits_non_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    """``main`` exits 1 when a row misses its target, 0 when every row meets it."""
    run = _run_module()
    for ratio, code in ((2.0, 1), (1.0, 0)):
        monkeypatch.setattr(run, "_worker", lambda *_, r=ratio: [_sample("invoke", r)])
        assert run.main(["--rows", "invoke", "--processes", "1"]) == code
