"""An option of a group's subcommand written before it says where it goes.

``nr-llm tools --tool-timeout 5 run …`` answered a bare "No such option": ``--tool-timeout``
belongs to ``tools run``, not to ``tools``. It now gets the words ``--config`` before a
command gets: whose option it is, and the command line with it after the command.
"""

from __future__ import annotations

from click.testing import CliRunner

from nr_llm_core.cli import main


def test_tool_timeout_before_tools_run_says_put_it_after_run() -> None:
    """Refused (exit 2) naming ``nr-llm tools run --tool-timeout``; after ``run`` it works."""
    args = ["calculate", "--args", '{"expression": "2 + 2"}']
    out = CliRunner().invoke(main, ["tools", "--tool-timeout", "5", "run", *args])
    assert out.exit_code == 2, out.output
    message = " ".join(out.output.split())
    assert "--tool-timeout is an option of the command, not of nr-llm tools itself" in message
    assert "put it after the command: nr-llm tools run --tool-timeout …" in message
    after = CliRunner().invoke(main, ["tools", "run", "--tool-timeout", "5", *args])
    assert after.exit_code == 0, after.output
    assert "4" in after.output


def test_an_unknown_option_of_a_group_is_still_click_s_error() -> None:
    """An option no subcommand takes keeps click's own "No such option"."""
    out = CliRunner().invoke(main, ["tools", "--no-such-thing", "list"])
    assert out.exit_code == 2 and "No such option '--no-such-thing'" in out.output
