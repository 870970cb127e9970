"""``NR_LLM_LOG_LEVEL=DEBUG`` shows a tool's exception message on your own terminal.

A newcomer pass: a tool that raised showed only ``tool 'boom' raised: RuntimeError`` and its
frames; docs/operating.md said the message is logged "only at DEBUG", and nothing on the
command line reached DEBUG. Real distribution on ``PYTHONPATH``, the real CLI in a process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..loading.distributions import add_distribution

# Built when the tool runs: the traceback shows the source line, never the value.
MESSAGE = "the-disk-is-full-42"
BOOM = """
from nr_llm_core import ToolSpec, hookimpl

class Boom:
    @hookimpl
    def tool_spec(self):
        return ToolSpec("boom", "Fails.", data_class="public")

    @hookimpl
    def execute(self, arguments):
        raise RuntimeError("the-disk-is-full-" + str(6 * 7))
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("site")
    add_distribution(root, "nr-llm-boom", {"boom": "nr_llm_boom:Boom"}, {"nr_llm_boom": BOOM})
    return root


def _tools_run(site: Path, tmp_path: Path, level: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NR_LLM_")}
    env["PYTHONPATH"] = str(site)
    if level is not None:
        env["NR_LLM_LOG_LEVEL"] = level
    return subprocess.run(
        [sys.executable, "-m", "nr_llm_core", "tools", "run", "boom", "--args", "{}"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )


def test_debug_shows_the_exception_message(site: Path, tmp_path: Path) -> None:
    proc = _tools_run(site, tmp_path, "debug")
    assert f"tool 'boom' exception message: {MESSAGE}" in proc.stderr, proc.stderr
    assert "tool 'boom' raised: RuntimeError" in proc.stderr


@pytest.mark.parametrize("level", [None, "WARNING", "info"])
def test_above_debug_the_message_stays_out(site: Path, tmp_path: Path, level: str | None) -> None:
    proc = _tools_run(site, tmp_path, level)
    assert "tool 'boom' raised: RuntimeError" in proc.stderr, proc.stderr
    assert MESSAGE not in proc.stderr + proc.stdout


def test_error_hides_the_warning_lines_and_keeps_the_errors(site: Path, tmp_path: Path) -> None:
    proc = _tools_run(site, tmp_path, "ERROR")
    assert "tool 'boom' raised: RuntimeError" in proc.stderr  # logged at ERROR
    assert MESSAGE not in proc.stderr + proc.stdout


def test_a_level_that_is_none_is_refused(site: Path, tmp_path: Path) -> None:
    proc = _tools_run(site, tmp_path, "LOUD")
    assert proc.returncode == 2
    assert "NR_LLM_LOG_LEVEL must be one of DEBUG, INFO, WARNING or ERROR" in proc.stderr
