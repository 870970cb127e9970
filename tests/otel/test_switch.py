"""Off by default and free when off; ``NR_LLM_OTEL`` turns it on, on the global providers, for
every loop (the command line's included); ``nr-llm runs show`` names the run's trace."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from nr_llm_core import AgentRunPersister, ScriptedProvider, ToolHost, ToolLoop
from nr_llm_core.cli import main
from nr_llm_core.otel import OtelTelemetry
from nr_llm_core.privacy import PrivacyLevel
from nr_llm_core.telemetry import telemetry_from_environment

from ._memory import Memory

ROOT = Path(__file__).resolve().parents[2]


def python(
    code: str, env: dict[str, str] | None = None, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("value", [None, "", "0", "false", "OFF", " no "])
def test_off_unless_asked(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    if value is not None:
        monkeypatch.setenv("NR_LLM_OTEL", value)
    assert telemetry_from_environment() is None
    assert ToolLoop(ScriptedProvider(["x"]), ToolHost()).telemetry is None


@pytest.mark.parametrize(
    ("value", "level"),
    [("1", None), ("true", None), (" On ", None), ("yes", None), ("metadata", "metadata")],
)
def test_the_switch_turns_it_on(
    monkeypatch: pytest.MonkeyPatch, value: str, level: str | None
) -> None:
    monkeypatch.setenv("NR_LLM_OTEL", value)
    telemetry = ToolLoop(ScriptedProvider(["x"]), ToolHost()).telemetry
    assert isinstance(telemetry, OtelTelemetry)
    assert telemetry.privacy == (None if level is None else PrivacyLevel(level))
    # One for the process: a resumption in another loop finds what this one remembered.
    assert ToolLoop(ScriptedProvider(["x"]), ToolHost()).telemetry is telemetry


def test_a_typo_keeps_it_off_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("NR_LLM_OTEL", "fulll")
    with caplog.at_level(logging.WARNING, logger="nr_llm.telemetry"):
        assert telemetry_from_environment() is None
    assert "OpenTelemetry stays off" in caplog.text


def test_a_loop_given_telemetry_ignores_the_switch(
    monkeypatch: pytest.MonkeyPatch, memory: Memory
) -> None:
    monkeypatch.setenv("NR_LLM_OTEL", "1")
    mine = memory.telemetry()
    assert ToolLoop(ScriptedProvider(["x"]), ToolHost(), telemetry=mine).telemetry is mine


def test_nothing_of_opentelemetry_is_imported_while_it_is_off() -> None:
    """``import nr_llm_core``, the loop module and a whole run with a store, telemetry off:
    no ``opentelemetry`` module and no ``nr_llm_core.otel`` module is ever imported."""
    ran = python(
        """
        import sys, tempfile, pathlib
        import nr_llm_core
        from nr_llm_core import AgentRunPersister, ScriptedProvider, ToolHost, ToolLoop
        import nr_llm_core.loop
        with AgentRunPersister(pathlib.Path(tempfile.mkdtemp()) / "a.db") as store:
            result = ToolLoop(ScriptedProvider(["done"]), ToolHost(), persister=store).run("hi")
        assert result.content == "done"
        print(sorted(m for m in sys.modules if m.startswith(("opentelemetry", "nr_llm_core.otel"))))
        """
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "[]"


def test_without_the_extra_the_switch_warns_and_the_run_goes_on() -> None:
    ran = python(
        """
        import sys
        sys.modules["opentelemetry"] = None  # as if the otel extra were not installed
        from nr_llm_core import ScriptedProvider, ToolHost, ToolLoop
        loop = ToolLoop(ScriptedProvider(["done"]), ToolHost())
        print(loop.telemetry, loop.run("hi").content)
        """,
        env={"NR_LLM_OTEL": "1"},
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "None done"
    assert "the otel extra is not installed" in ran.stderr


def test_the_switch_exports_the_command_lines_runs_on_the_global_providers(
    tmp_path: Path,
) -> None:
    """``NR_LLM_OTEL=1 nr-llm run``, with an SDK installed as the global tracer provider (what
    ``opentelemetry-instrument`` does): the run's spans are exported, its trace is stored with
    it, and ``nr-llm runs show`` prints that trace id."""
    db = tmp_path / "audit.db"
    ran = python(
        f"""
        import json
        from click.testing import CliRunner
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from nr_llm_core.cli import main

        kept = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(kept))
        trace.set_tracer_provider(provider)
        out = CliRunner().invoke(main, ["run", "hello", "--db", {str(db)!r}])
        assert out.exit_code == 0, out.output
        spans = kept.get_finished_spans()
        run = [s for s in spans if s.name == "invoke_agent"][0]
        print(json.dumps({{
            "names": sorted({{s.name.split(" ")[0] for s in spans}}),
            "trace_id": format(run.context.trace_id, "032x"),
            "run_id": run.attributes["nr_llm.run.id"],
        }}))
        """,
        env={"NR_LLM_OTEL": "1", "NR_LLM_DB": str(db)},
        cwd=tmp_path,  # the run calls the records tools, which build ./.nr-llm/demo.db
    )
    assert ran.returncode == 0, ran.stderr
    found = json.loads(ran.stdout.strip().splitlines()[-1])
    assert found["names"] == ["chat", "execute_tool", "invoke_agent"]
    shown = CliRunner().invoke(main, ["runs", "show", found["run_id"], "--db", str(db)])
    assert shown.exit_code == 0, shown.output
    assert f"trace_id: {found['trace_id']}" in shown.output
    as_json = CliRunner().invoke(main, ["runs", "show", found["run_id"], "--db", str(db), "--json"])
    assert json.loads(as_json.output)["run"]["trace_id"] == found["trace_id"]


def test_a_run_without_telemetry_shows_no_trace(tmp_path: Path) -> None:
    with AgentRunPersister(tmp_path / "audit.db") as store:
        run_id = ToolLoop(ScriptedProvider(["done"]), ToolHost(), persister=store).run("hi").run_id
    shown = CliRunner().invoke(main, ["runs", "show", run_id, "--db", str(tmp_path / "audit.db")])
    assert shown.exit_code == 0 and "trace_id" not in shown.output
    as_json = CliRunner().invoke(
        main, ["runs", "show", run_id, "--db", str(tmp_path / "audit.db"), "--json"]
    )
    assert json.loads(as_json.output)["run"]["trace_id"] is None
