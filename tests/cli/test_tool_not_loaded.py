"""`nr-llm tools run|show NAME` for a tool that is not loaded: the common case when a package
grows a second `@tool` without its entry point. The command says what makes a tool loaded
(an entry point, then the package installed again) and names the loaded tools close to the
name, with a real distribution on ``sys.path``."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from nr_llm_core.cli import main

from ..loading.distributions import add_distribution

MODULE = """
from nr_llm_core import tool

@tool(data_class="public")
def shout(text: str) -> str:
    '''Repeat a text in capital letters.'''
    return text.upper()

@tool(data_class="public")
def whisper(text: str) -> str:
    '''Repeat a text in small letters.'''
    return text.lower()
"""

HINT = (
    "a tool is loaded from an entry point in its package's pyproject.toml "
    '([project.entry-points."nr_llm.tool"] NAME = "module:object"); after adding one, '
    "install the package again (`pip install -e .`). `nr-llm tools list` shows what is "
    "loaded, `nr-llm doctor` what failed to load"
)


@pytest.fixture(autouse=True)
def _only_shout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real distribution whose module has two tools and an entry point for one."""
    site = tmp_path / "site"
    add_distribution(
        site, "t-grown-tools", {"shout": "t_grown_tools:shout"}, {"t_grown_tools": MODULE}
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("NR_LLM_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("NR_LLM_PLUGINS", "shout")


@pytest.mark.parametrize(
    "command",
    [["tools", "run", "whisper", "--args", '{"text": "Hi"}'], ["tools", "show", "whisper"]],
    ids=["run", "show"],
)
def test_a_tool_without_an_entry_point_is_named_with_what_loads_one(command: list[str]) -> None:
    out = CliRunner().invoke(main, command)
    assert out.exit_code == 1, out.output
    assert f"Error: no tool named 'whisper' is loaded: {HINT}" in out.output


def test_a_near_name_is_suggested() -> None:
    out = CliRunner().invoke(main, ["tools", "run", "shoutt", "--args", '{"text": "hi"}'])
    assert out.exit_code == 1, out.output
    assert f"Error: no tool named 'shoutt' is loaded (did you mean shout?): {HINT}" in out.output


def test_the_loaded_tool_still_runs() -> None:
    out = CliRunner().invoke(main, ["tools", "run", "shout", "--args", '{"text": "hi"}'])
    assert out.exit_code == 0, out.output
    assert "HI" in out.output
