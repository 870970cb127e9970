"""``nr-llm run --script`` names the option, the file and, for a wrong turn, where it is wrong.

A missing file said "Invalid value: cannot read the script (FileNotFoundError)", naming
neither ``--script`` nor the file; a call with a misspelt key said only what a script is.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from nr_llm_core.cli import main


def run_script(path: Path | str) -> Result:
    return CliRunner().invoke(main, ["run", "hello", "--script", str(path)])


def said(result: Result) -> str:
    return " ".join(result.output.split())


def test_a_missing_script_names_the_option_and_the_path(tmp_path: Path) -> None:
    """``--script nope.json``: a usage error (exit 2) naming ``--script``, the path as given
    and that it does not exist."""
    out = run_script(tmp_path / "nope.json")
    assert out.exit_code == 2, out.output
    text = said(out)
    assert "Invalid value for --script:" in text
    assert f"cannot read {str(tmp_path / 'nope.json')!r}" in text
    assert "no such file" in text


def test_a_path_with_control_characters_is_shown_escaped(tmp_path: Path) -> None:
    """The path is the user's own but may hold an escape: it is shown made visible."""
    out = run_script(tmp_path / "a\x1b[2Jb.json")
    assert out.exit_code == 2, out.output
    assert "\x1b" not in out.output
    assert "\\x1b" in out.output or "\\u001b" in out.output


def test_a_call_with_an_unknown_key_names_the_turn_the_call_and_the_key(tmp_path: Path) -> None:
    """A call written ``{"tool": …, "args": …}``: the refusal names turn 1, call 1, the
    unknown key and the key meant, instead of only restating what a script is."""
    script = tmp_path / "s.json"
    calls = [{"name": "calculate", "arguments": {}}, {"tool": "calculate", "args": {}}]
    script.write_text(json.dumps(["hi", {"content": "x", "tool_calls": calls}]))
    out = run_script(script)
    assert out.exit_code == 2, out.output
    text = said(out)
    assert "Invalid value for --script:" in text
    assert "turn 2, call 2" in text
    assert "unknown key 'args' (did you mean 'arguments'?)" in text


def test_a_turn_with_an_unknown_key_names_it(tmp_path: Path) -> None:
    """A turn written with ``tool_call`` (one letter short) names turn 1 and the key meant."""
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"content": "x", "tool_call": []}]))
    out = run_script(script)
    assert out.exit_code == 2, out.output
    assert "turn 1: unknown key 'tool_call' (did you mean 'tool_calls'?)" in said(out)
