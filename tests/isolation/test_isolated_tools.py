"""Isolated tools work end to end: listed, run through ``ToolHost.invoke``, the CLI and the
loop, with the same errors and the same bounding as in-process tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nr_llm_core import MAX_CONTENT_BYTES, ScriptedProvider, ToolContext, ToolHost, ToolLoop
from nr_llm_core.bounding import ARTIFACTS_OMITTED_LABEL, TRUNCATION_MARKER
from nr_llm_core.isolation import ENV_ISOLATE, IsolationPolicy
from nr_llm_core.loop import TerminationReason

from .conftest import isolated_host


def test_isolated_tools_are_listed_with_their_distribution(host: ToolHost) -> None:
    for name in ("iso_echo", "iso_env", "loud", "hang"):
        assert name in host.names()
        assert host.is_isolated(name)
    assert host.distribution("iso_echo") == "iso-good"
    assert host.spec("iso_echo").parameters["required"] == ["text"]


def test_the_host_never_imports_an_isolated_plugin(
    on_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another test may have loaded these distributions in-process: forget their modules
    # (restored after the test) before this host is built, so only this host is judged.
    for name in ("iso_good_mod", "iso_hostile_mod"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with isolated_host() as host:
        assert "iso_good_mod" not in sys.modules
        assert "iso_hostile_mod" not in sys.modules
        assert host.invoke("iso_pid", {}).content != str(os.getpid())
        assert "iso_good_mod" not in sys.modules


def test_a_broken_isolated_plugin_is_a_load_error(
    on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "imported-by"
    # Passed to the worker on purpose (IsolationPolicy.env): the plugin writes its pid there.
    with isolated_host(env={"NR_LLM_TEST_MARKER": str(marker)}) as host:
        errors = {e.entry_point: e for e in host.load_errors}
    error = errors["iso_broken"]
    assert error.distribution == "iso-broken"
    assert error.reason == "in its worker: could not be imported: RuntimeError"
    assert "CANARY" not in error.reason
    assert int(marker.read_text().split()[0]) != os.getpid()


def test_invoke_runs_the_call_in_a_worker_and_bounds_both_channels(host: ToolHost) -> None:
    context = ToolContext(run_id="run-7", call_id="c1", round=1)
    result = host.invoke("iso_echo", {"text": "hi"}, context=context)
    assert not result.is_error
    assert result.content == "echo: hi"  # what the tool printed did not get in the way
    table, text = result.artifacts
    assert table.data == {"columns": ["text", "i"], "rows": [["hi", "0"], ["hi", "1"], ["hi", "2"]]}
    assert text.data == {"text": "'run-7'"}

    huge = host.invoke("iso_huge", {})
    assert len(huge.content.encode()) == MAX_CONTENT_BYTES
    assert huge.content.endswith(TRUNCATION_MARKER)
    assert [a.label for a in huge.artifacts] == [ARTIFACTS_OMITTED_LABEL]


def test_the_seam_errors_are_the_in_process_ones(host: ToolHost) -> None:
    worker = host.invoke("iso_pid", {}).content
    assert host.invoke("iso_raises", {}).content == 'Error: tool "iso_raises" failed.'
    assert (
        host.invoke("iso_invalid", {}).content
        == 'Error: tool "iso_invalid" returned an invalid result.'
    )
    # The tool's faults, not its worker's: the same worker answered all three calls.
    assert host.invoke("iso_pid", {}).content == worker
    bad = host.invoke("iso_echo", {"text": 3})
    assert bad.is_error and bad.content.startswith('Error: invalid arguments for tool "iso_echo"')
    assert host.invoke("iso_echo", {"text": "x"}, allowed=[]).content == (
        'Error: tool "iso_echo" not permitted'
    )


def test_one_worker_per_distribution_started_lazily_and_kept(host: ToolHost) -> None:
    worker = host._table["iso_pid"].remote.worker  # type: ignore[union-attr]
    assert worker.pid is None  # loading did not leave a process behind
    first = host.invoke("iso_pid", {}).content
    assert host.invoke("iso_pid", {}).content == first
    assert host.invoke("iso_env", {}).content  # same distribution, same worker
    assert host.invoke("iso_pid", {}).content == first
    host.close()
    assert worker.pid is None
    assert host.invoke("iso_pid", {}).content != first  # started again


def test_the_worker_environment_holds_no_provider_keys(
    on_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-CANARY-openai")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-CANARY")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-CANARY")
    monkeypatch.setenv("DB_SECRET_X", "CANARY")
    monkeypatch.setenv("UNRELATED_HOST_VAR", "not on the allow-list")
    with isolated_host(env={"EXPLICIT_FOR_TOOL": "1"}) as host:
        assert host.invoke("iso_env", {}).content == "EXPLICIT_FOR_TOOL,PATH"
    # A secret-shaped name stays out even when someone adds it to the allow-list.
    with isolated_host(env_allow={"OPENAI_API_KEY", "UNRELATED_HOST_VAR"}) as host:
        assert host.invoke("iso_env", {}).content == "PATH,UNRELATED_HOST_VAR"


def test_isolation_by_tool_name_and_by_environment_variable(
    on_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ToolHost.discover(isolate=["iso_pid"]) as host:
        assert host.is_isolated("iso_pid")
        assert not host.is_isolated("iso_env")  # same distribution, not named
    assert "iso_good_mod" in sys.modules  # iso_env was loaded in-process
    monkeypatch.setenv(ENV_ISOLATE, "iso-good, hang")
    with ToolHost.discover() as host:
        assert host.is_isolated("iso_env") and host.is_isolated("hang")
        assert not host.is_isolated("loud")


def test_policy_argument_forms() -> None:
    policy = IsolationPolicy(distributions=["My_Dist"])
    assert policy.covers("t", "my-dist") and not policy.covers("t", None)
    assert IsolationPolicy().with_names(["*"]).covers("anything", None)
    with pytest.raises(TypeError):
        IsolationPolicy(tools="a,b")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        IsolationPolicy(timeout=0)


def test_a_loop_run_with_an_isolated_tool(host: ToolHost) -> None:
    provider = ScriptedProvider(
        [
            {"content": "", "tool_calls": [{"name": "iso_echo", "arguments": {"text": "loop"}}]},
            "done",
        ]
    )
    result = ToolLoop(provider, host).run("go")
    assert result.termination_reason is TerminationReason.COMPLETED
    (invocation,) = result.invocations
    assert invocation.result.content == "echo: loop"
    assert len(invocation.result.artifacts) == 2
    # Only the content went back to the provider.
    sent = json.dumps([m.to_dict() for m in provider.requests[-1][0]])
    assert "echo: loop" in sent and "rows" not in sent


def test_the_cli_runs_an_isolated_tool(iso_site: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NR_LLM_")}
    env["PYTHONPATH"] = os.pathsep.join([str(iso_site), env.get("PYTHONPATH", "")])
    base = [sys.executable, "-m", "nr_llm_core", "tools", "--isolate", "iso-good"]
    run = subprocess.run(
        [*base, "run", "iso_echo", "--args", '{"text": "cli"}', "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["content"] == "echo: cli"
    assert out["artifacts"][0]["data"]["rows"][0] == ["cli", "0"]
    listed = subprocess.run(
        [*base, "list", "--json"], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows["iso_echo"]["isolated"] is True
    assert rows["iso_echo"]["distribution"] == "iso-good"
    env[ENV_ISOLATE] = "iso-hostile"
    hung = subprocess.run(
        [sys.executable, "-m", "nr_llm_core", "tools", "run", "hang", "--timeout", "1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert hung.returncode == 1
    assert 'Error: tool "hang" timed out.' in hung.stdout


def test_a_worker_that_cannot_start_is_a_load_error(
    on_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    with isolated_host() as host:
        errors = {e.entry_point: e.reason for e in host.load_errors}
    assert errors["iso_echo"] == "its worker failed while loading it"
    assert "iso_echo" not in host.names()


def test_a_dropped_host_stops_its_workers(on_path: Path) -> None:
    import gc

    host = isolated_host()
    pid = int(host.invoke("iso_pid", {}).content)
    del host
    gc.collect()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_every_load_failure_of_the_loading_tests_is_a_load_error_when_isolated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.loading.distributions import add_distribution, good_tool
    from tests.loading.test_entry_points import REGISTERS_THROUGH_HOST, SECRET, WRAPPER

    site = tmp_path / "site"
    dists = {
        "x-import-error": ("x_import_error", "import nr_llm_no_such_module\n"),
        "x-raises": ("x_raises", f"raise RuntimeError({SECRET!r})\n"),
        "x-exits": ("x_exits", "import sys\nsys.exit(3)\n"),
        "x-wrong-object": ("x_wrong", "NUMBER = 42\nTool = NUMBER\n"),
        "x-mismatch": ("x_mismatch", good_tool("real_name")),
        "x-wrapper": ("x_wrapper", WRAPPER.replace("wrapper_tool", "x_wrapper")),
        "x-sneaky": ("x_sneaky", REGISTERS_THROUGH_HOST.format(tool=good_tool("x_sneaky"))),
        "x-good": ("x_good", good_tool("x_good")),
    }
    for dist, (module, source) in dists.items():
        add_distribution(site, dist, {module: f"{module}:Tool"}, {module: source})
    monkeypatch.syspath_prepend(str(site))
    with ToolHost.discover(isolate={"distributions": list(dists)}) as host:
        errors = {e.entry_point: e.reason for e in host.load_errors if e.distribution in dists}
        assert host.invoke("x_good", {}).content == "x_good ran"
    assert errors == {
        "x_import_error": "in its worker: could not be imported: ModuleNotFoundError: "
        "No module named 'nr_llm_no_such_module'",
        "x_raises": "in its worker: could not be imported: RuntimeError",
        "x_exits": "in its worker: could not be imported: SystemExit",
        "x_wrong": "in its worker: no tool_spec or execute hookimpl: name a @tool function, or a "
        "class whose tool_spec and execute carry @hookimpl",
        "x_mismatch": "in its worker: entry point name 'x_mismatch' differs from "
        "tool_spec().name 'real_name'",
        "x_wrapper": "in its worker: hookimpl 'execute' declares wrapper, which tools may not use",
        "x_sneaky": "in its worker: registered further plugins while being imported",
    }
    assert not any(m in sys.modules for m in ("x_raises", "x_good", "x_sneaky"))


def test_nr_llm_run_with_an_isolated_tool(iso_site: Path, tmp_path: Path) -> None:
    script = tmp_path / "turns.json"
    script.write_text(
        json.dumps(
            [
                {"content": "", "tool_calls": [{"name": "iso_echo", "arguments": {"text": "r"}}]},
                "done",
            ]
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("NR_LLM_")}
    env["PYTHONPATH"] = os.pathsep.join([str(iso_site), env.get("PYTHONPATH", "")])
    command = [sys.executable, "-m", "nr_llm_core", "run", "go", "--script", str(script)]
    proc = subprocess.run(
        [*command, "--isolate", "iso-good", "--no-record"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "iso_echo: echo: r" in proc.stdout
    assert "completed after 2 completion(s)" in proc.stdout
