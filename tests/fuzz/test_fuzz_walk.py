"""The walk under fuzzing: Hypothesis drives the byte-level builders briefly in the suite.

Longer runs by hand (coverage-guided with atheris where it is installed, else Hypothesis):

    scripts/fuzz walk --seconds 600
    NR_LLM_FUZZ_EXAMPLES=100000 .venv/bin/pytest -q tests/fuzz
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .targets import check_walk

#: Hypothesis examples per target: ``NR_LLM_FUZZ_EXAMPLES``, else the profile's number (read
#: at import: the autouse fixture strips NR_LLM_* from each test's environment).
EXAMPLES = int(os.environ.get("NR_LLM_FUZZ_EXAMPLES", settings.default.max_examples))
ROOT = Path(__file__).resolve().parents[2]

FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    # Random bytes make large, slow-to-build values on purpose.
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@FUZZ_SETTINGS
@given(st.binary(max_size=600))
def test_walk_invariants(data: bytes) -> None:
    check_walk(data)


@pytest.mark.parametrize(
    "seed",
    [
        b"",
        bytes([17, 0, 3, 1, 12]),  # a cycle in an artifact
        bytes([17, 0, 3, 1, 0, 11, 255]),  # nesting past the depth limit
        bytes([17, 0, 3, 1, 0, 9, 16]),  # 10**5000
        bytes(range(256)),
        # Found by atheris: lists nested to level 64 exactly (an oracle off-by-one, since fixed).
        bytes.fromhex("0000e0ffffffffffff253301ffd6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6")
        + bytes.fromhex("00006cff333333333333d6d6d6d6333733 32d6".replace(" ", "")),
        bytes([255] * 64),
    ],
)
def test_walk_seeds(seed: bytes) -> None:
    check_walk(seed)


def _harness(*args: str, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(pythonpath), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "fuzz"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=env,
        check=False,
    )


def test_the_coverage_guided_harness_runs() -> None:
    # Where atheris has no wheel (Python >= 3.13, not x86_64) the fallback test below is the
    # harness's test.
    pytest.importorskip("atheris")
    proc = _harness("walk", "--runs", "300")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert "Done 300 runs" in proc.stderr  # libFuzzer's own closing line: atheris ran
    assert "unavailable" not in proc.stderr


@pytest.mark.parametrize("target", ["walk", "redactor"])
def test_without_atheris_the_harness_says_so_in_one_line_and_runs_hypothesis(
    tmp_path: Path, target: str
) -> None:
    """atheris made unimportable (a package of that name that raises ImportError, first on
    the path), as on a platform without its wheel: one line on stderr says so and why, then
    the Hypothesis fallback runs the same target."""
    shadow = tmp_path / "atheris"
    shadow.mkdir()
    (shadow / "__init__.py").write_text('raise ImportError("simulated: no wheel here")\n')
    proc = _harness(target, "--runs", "40", pythonpath=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert proc.stderr.splitlines() == [
        "scripts/fuzz: atheris is unavailable (ImportError: simulated: no wheel here; it needs "
        "Linux x86_64 and Python < 3.13): fuzzing with Hypothesis instead, without coverage "
        "guidance"
    ]
    assert proc.stdout.splitlines() == ["hypothesis: 40 examples, no finding"]
