"""A default per-call limit for in-process tools on the command line: a hung tool ends its call
with a timeout result and the run goes on; isolated tools keep their policy's limit."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from nr_llm_core import ToolHost
from nr_llm_core.cli import main
from nr_llm_core.isolation import IsolationPolicy

from ._probe import cli_env, run_nr_llm, write_probe_site, write_user_config

TIMED_OUT = 'probe_hang (error): Error: tool "probe_hang" timed out.'


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return write_probe_site(tmp_path / "site")


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    turns = [{"content": "", "tool_calls": [{"name": "probe_hang", "arguments": {}}]}, "finished"]
    path.write_text(json.dumps(turns))
    return path


@pytest.mark.parametrize("given_by", ["flag", "environment", "config file"])
def test_a_hung_in_process_tool_ends_with_a_timeout_and_the_run_completes(
    given_by: str, site: Path, script: Path, tmp_path: Path
) -> None:
    """A real `nr-llm run` process: the tool never returns, the step says `timed out.`, the
    model gets the next turn and the run completes (the hung thread is abandoned)."""
    env = cli_env(site)
    args = ["run", "go", "--script", str(script), "--db", str(tmp_path / "audit.db")]
    if given_by == "flag":
        args += ["--tool-timeout", "1"]
    elif given_by == "environment":
        env["NR_LLM_TOOL_TIMEOUT"] = "1"
    else:
        write_user_config("[tools]\ntimeout = 1\n")
    ran = run_nr_llm(*args, env=env, timeout=90)
    assert ran.code == 0, ran.err
    assert TIMED_OUT in ran.out
    assert "finished" in ran.out
    assert "completed after 2 completion(s)" in ran.out


def test_tools_run_takes_the_same_limit(site: Path) -> None:
    ran = run_nr_llm("tools", "run", "probe_hang", "--tool-timeout", "1", env=cli_env(site))
    assert ran.code == 1
    assert 'Error: tool "probe_hang" timed out.' in ran.out


@pytest.mark.parametrize(
    "command",
    [
        ["run"],
        ["runs", "approve"],
        ["runs", "deny"],
        ["tools", "run"],
        ["playground"],
    ],
)
def test_the_option_and_its_default_are_in_the_help(command: list[str]) -> None:
    out = CliRunner().invoke(main, [*command, "--help"], terminal_width=200)
    assert out.exit_code == 0
    text = " ".join(out.output.split())
    assert "--tool-timeout" in text and "SECONDS" in text
    assert (
        "[default: $NR_LLM_TOOL_TIMEOUT, else the config file's [tools] timeout, else 30]" in text
    )


def test_an_isolated_tool_keeps_its_policy_limit_under_the_host_default(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host's timeout is for in-process tools (their thread can only be abandoned); an
    isolated tool's default is its policy's (its worker is killed); a call's own wins."""
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("NR_LLM_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("NR_LLM_PLUGINS", "probe_nap,probe")
    policy = IsolationPolicy(tools=["probe_nap"], timeout=60)
    with ToolHost.discover(isolate=policy, timeout=0.5) as host:
        assert host.is_isolated("probe_nap")
        assert host.invoke("probe_nap", {"seconds": 1.5}).content == "rested"
        short = host.invoke("probe_nap", {"seconds": 30}, timeout=0.5)
        assert short.content == 'Error: tool "probe_nap" timed out.'
    with ToolHost.discover(timeout=0.5) as host:  # the same tool in-process
        assert not host.is_isolated("probe_nap")
        assert host.invoke("probe_nap", {"seconds": 1.5}).content == (
            'Error: tool "probe_nap" timed out.'
        )
        assert f"pid={os.getpid()} " in host.invoke("probe", {}).content
