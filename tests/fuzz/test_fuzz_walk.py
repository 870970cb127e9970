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

#: Hypothesis examples per target (read at import: the autouse fixture strips NR_LLM_*).
EXAMPLES = int(os.environ.get("NR_LLM_FUZZ_EXAMPLES", "300"))
ROOT = Path(__file__).resolve().parents[2]

FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
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


def test_the_coverage_guided_harness_runs() -> None:
    pytest.importorskip("atheris")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "fuzz"), "walk", "--runs", "300"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
