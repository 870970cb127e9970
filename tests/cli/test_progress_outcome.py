"""The progress line says how a run ended: ``done`` only for a completed one. A failed run is
returned by the loop, not raised, so the line has to be told: ``run``, ``runs approve`` and
``demo`` end it with ``failed`` (and ``waiting for approval`` for a run that waits), on a pipe
and on a real pseudo-terminal."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from nr_llm_core.cli import main
from nr_llm_core.providers import ScriptedProvider
from tests.loop.test_cli_status import screen

from ._probe import cli_env, run_nr_llm, write_probe_site

RUNNING = "Running the tool loop (ScriptedProvider) …"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return cli_env(write_probe_site(tmp_path / "site"), NR_LLM_DB=str(tmp_path / "audit.db"))


def script(tmp_path: Path, turns: list[object]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(turns))
    return str(path)


def progress(stderr: str, message: str) -> list[str]:
    """The progress lines of ``message`` on the screen ``stderr`` leaves."""
    return [line for line in screen(stderr) if line.startswith(message)]


def test_a_failed_run_never_says_done_on_a_pipe(tmp_path: Path, env: dict[str, str]) -> None:
    """The script has no turn: the provider fails at once, the run ends as failed."""
    ran = run_nr_llm("run", "hi", "--script", script(tmp_path, []), env=env)
    assert ran.code == 1, ran.err
    assert progress(ran.err, RUNNING) == [f"{RUNNING} failed"]
    assert "done" not in ran.err
    assert "failed: the provider failed (the error above says why); no completion" in ran.out
    assert ran.out.count("provider error:") == 1 and "error:" not in ran.err


def test_a_completed_run_says_done_and_a_waiting_one_says_so(
    tmp_path: Path, env: dict[str, str]
) -> None:
    ran = run_nr_llm("run", "hi", "--script", script(tmp_path, ["fine"]), env=env)
    assert ran.code == 0, ran.err
    assert progress(ran.err, RUNNING) == [f"{RUNNING} done"]
    gated = [{"tool_calls": [{"name": "probe_gated", "arguments": {}}]}]
    ran = run_nr_llm("run", "hi", "--script", script(tmp_path, gated), env=env)
    assert ran.code == 0, ran.err
    assert progress(ran.err, RUNNING) == [f"{RUNNING} waiting for approval"]


def test_a_resumed_run_that_fails_never_says_done(tmp_path: Path, env: dict[str, str]) -> None:
    """Approved, the gated call runs, then the script has no turn left: the resume fails."""
    turns = [{"tool_calls": [{"name": "probe_gated", "arguments": {}}]}]
    path = script(tmp_path, turns)
    ran = run_nr_llm("run", "hi", "--script", path, env=env)
    match = re.search(r"nr-llm runs approve\|deny (\w+)", ran.out)
    assert match, ran.out
    resumed = run_nr_llm("runs", "approve", match.group(1), "--script", path, "--yes", env=env)
    assert resumed.code == 1, resumed.err
    assert progress(resumed.err, "Resuming the run") == ["Resuming the run … failed"]
    assert "done" not in resumed.err


def test_denying_runs_into_the_same_words(tmp_path: Path, env: dict[str, str]) -> None:
    turns = [{"tool_calls": [{"name": "probe_gated", "arguments": {}}]}, "understood"]
    path = script(tmp_path, turns)
    ran = run_nr_llm("run", "hi", "--script", path, env=env)
    match = re.search(r"nr-llm runs approve\|deny (\w+)", ran.out)
    assert match, ran.out
    denied = run_nr_llm("runs", "deny", match.group(1), "--script", path, env=env)
    assert denied.code == 0, denied.err
    assert progress(denied.err, "Resuming the run") == ["Resuming the run … done"]
    # The scripted provider's note, once per command.
    assert denied.err.count("the scripted provider plays a fixed script") == 1


def test_a_failed_demo_never_says_done(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NR_LLM_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setattr(ScriptedProvider, "demo", classmethod(lambda cls: cls([])))
    out = CliRunner().invoke(main, ["demo"])
    assert out.exit_code == 1, out.output
    assert "Running the scripted demo through the tool loop … failed" in out.stderr
    assert "through the tool loop … done" not in out.stderr


def test_a_failed_run_never_says_done_on_a_terminal(tmp_path: Path, env: dict[str, str]) -> None:
    """stderr on a pseudo-terminal: the spinner runs, and its last line says failed."""
    master, slave = pty.openpty()
    seen = bytearray()

    def read() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # the terminal closed with the process
                return
            if not data:
                return
            seen.extend(data)

    reader = threading.Thread(target=read, daemon=True)
    args = [sys.executable, "-m", "nr_llm_core", "run", "hi", "--script", script(tmp_path, [])]
    try:
        proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=slave)
        os.close(slave)
        slave = -1
        reader.start()
        proc.communicate(timeout=120)
        reader.join(timeout=10)
    finally:
        if slave != -1:
            os.close(slave)
        os.close(master)
    assert proc.returncode == 1
    shown = progress(seen.decode(), RUNNING)
    assert shown[-1] == f"{RUNNING} failed", shown
    assert f"{RUNNING} done" not in shown


@pytest.mark.parametrize(
    "turn",
    [
        {"tool_call": [{"name": "probe_gated"}]},  # "tool_calls" misspelt
        {"tool_calls": [{"name": "probe_gated", "args": {"x": 1}}]},  # "arguments" misspelt
    ],
)
def test_a_script_turn_with_a_key_the_provider_does_not_read_is_refused(
    tmp_path: Path, env: dict[str, str], turn: dict[str, object]
) -> None:
    """A misspelt key in a --script turn would be ignored: the turn would play as an empty
    answer, or a call without its arguments, and the run would end as if nothing were wrong.
    The command refuses the script before it runs, as it refuses a flag it has no use for."""
    ran = run_nr_llm("run", "hi", "--script", script(tmp_path, [turn, "fine"]), env=env)
    assert ran.code == 2, ran.out
    assert "--script" in ran.err and "a script is a JSON list" in ran.err
    assert RUNNING not in ran.err
