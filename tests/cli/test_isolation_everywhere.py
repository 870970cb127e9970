"""A tool isolated in the config file alone runs in a worker on every path that runs tools.

Each test starts real ``nr-llm`` processes. The probe's tools report the process they ran in,
and each CLI process writes the modules it imported when it exits. A tool configured for
isolation must never be imported into, nor run in, the CLI process, whichever command loads
it or resumes its run.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import httpx
import pytest

from ._probe import (
    PROBE_MODULE,
    cli_env,
    imported,
    in_a_worker_of,
    nr_llm,
    run_nr_llm,
    where,
    write_probe_site,
    write_user_config,
)

ISOLATE_PROBE = '[isolation]\ndistributions = ["nr-llm-probe"]\n'


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return write_probe_site(tmp_path / "site")


@pytest.fixture
def env(site: Path) -> dict[str, str]:
    write_user_config(ISOLATE_PROBE)  # no flag, no variable: only the user's config file
    return cli_env(site)


def test_tools_run_honours_the_config_file_and_without_it_runs_in_process(
    site: Path, env: dict[str, str]
) -> None:
    """`tools run` in a worker when the file isolates the tool; the control without the file
    shows that the probe tells the CLI process apart."""
    ran = run_nr_llm("tools", "run", "probe", "--json", env=env)
    assert ran.code == 0, ran.err
    assert in_a_worker_of(ran.pid, json.loads(ran.out)["content"])
    assert PROBE_MODULE not in ran.modules

    control = run_nr_llm(
        "tools", "run", "probe", "--json", env={**env, "NR_LLM_CONFIG": "/dev/null"}
    )
    assert control.code == 0, control.err
    ((pid, _, main),) = where(json.loads(control.out)["content"])
    assert (pid, main) == (control.pid, "nr_llm_core.__main__")
    assert PROBE_MODULE in control.modules


def test_a_run_and_its_approval_in_a_new_process_both_use_workers(
    env: dict[str, str], tmp_path: Path
) -> None:
    """`nr-llm run` suspends on a gated tool; `nr-llm runs approve` in another process runs
    it, in a worker of that process: the resume reads the same configuration."""
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                {"content": "probing", "tool_calls": [{"name": "probe", "arguments": {}}]},
                {"content": "gated", "tool_calls": [{"name": "probe_gated", "arguments": {}}]},
                "done",
            ]
        )
    )
    common = ["--script", str(script), "--db", str(tmp_path / "audit.db")]
    ran = run_nr_llm("run", "go", *common, env=env)
    assert ran.code == 0, ran.err
    assert "awaiting_approval" in ran.out
    assert in_a_worker_of(ran.pid, ran.out)  # the ungated probe ran during the run
    assert PROBE_MODULE not in ran.modules
    match = re.search(r"nr-llm runs approve\|deny (\w+) --digest (\w+)", ran.out)
    assert match, ran.out
    run_id, digest = match.groups()

    approved = run_nr_llm("runs", "approve", run_id, "--digest", digest, *common, env=env)
    assert approved.code == 0, approved.err
    assert "done" in approved.out and "completed" in approved.out
    (line,) = [x for x in approved.out.splitlines() if "probe_gated" in x and "pid=" in x]
    assert in_a_worker_of(approved.pid, line)
    assert PROBE_MODULE not in approved.modules


def test_doctor_loads_the_isolated_tools_in_workers(env: dict[str, str]) -> None:
    """`doctor` only loads: the probe's module is imported in a worker, never in the CLI."""
    ran = run_nr_llm("doctor", env=env)
    assert ran.code == 0, ran.err
    assert "6 tool(s) loaded (6 in worker processes)." in ran.out
    assert PROBE_MODULE not in ran.modules


def test_the_demo_runs_the_builtin_tools_in_workers_when_configured(tmp_path: Path) -> None:
    """The demo's tools (the builtin ones, distribution nr-llm) isolated by the file: their
    modules are never imported in the CLI process, and the demo still completes."""
    write_user_config('[isolation]\ndistributions = ["nr-llm"]\n')
    env = cli_env(tmp_path, COLUMNS="100")
    del env["NR_LLM_DISABLE_PLUGIN_AUTOLOAD"], env["NR_LLM_PLUGINS"]
    tool_modules = {"nr_llm_builtins.records", "nr_llm_builtins.utility"}
    ran = run_nr_llm("demo", env=env, cwd=tmp_path, timeout=300)
    assert ran.code == 0, ran.err
    assert "19 * 23 + 4 = 441" in ran.out
    # The core never imports the builtins (ADR 0017): the records tool builds the demo
    # database in its worker.
    assert not {m for m in ran.modules if m.startswith("nr_llm_builtins")}
    assert (tmp_path / ".nr-llm" / "demo.db").is_file()

    control = run_nr_llm("demo", env={**env, "NR_LLM_CONFIG": "/dev/null"}, cwd=tmp_path)
    assert control.code == 0, control.err
    assert tool_modules <= control.modules


def test_the_playground_tool_runner_uses_a_worker(env: dict[str, str], tmp_path: Path) -> None:
    """The playground's tool runner calls the isolated probe in a worker of the server."""
    modules = tmp_path / "modules"
    command = ["playground", "--no-open", "--db", str(tmp_path / "audit.db")]
    with nr_llm(
        *command, env=env, modules=modules, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            match = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)$", line.strip())
            assert match, line
            origin, token = match.groups()
            reply = httpx.post(
                f"{origin}/api/tools/probe/invoke",
                json={"arguments": {}},
                headers={"X-NR-LLM-Token": token},
                timeout=60,
            ).json()
            assert in_a_worker_of(proc.pid, reply["content"])
        finally:
            proc.terminate()
            proc.wait(30)
    assert PROBE_MODULE not in imported(modules)
