"""``nr-llm run``: the scripted demo offline, and the OpenAI wire on loopback."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from nr_llm_core.cli import main
from nr_llm_core.cli._report import report as _report

from ._tools import Writer
from ._wire import Reply, WireServer
from .test_openai_wire import text_reply


@pytest.fixture(autouse=True)
def _no_installed_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    # Only what a test names loads; the outcome does not depend on what is installed.
    monkeypatch.setenv("NR_LLM_DISABLE_PLUGIN_AUTOLOAD", "1")


def test_run_without_a_provider_plays_the_demo() -> None:
    out = CliRunner().invoke(main, ["run", "show me the customers"])
    assert out.exit_code == 0, out.output
    # No tool is installed here, so nothing is offered: the demo's first turn is one plain
    # completion (with the builtin tools installed it goes on to call them).
    assert "Let me see which tables exist." in out.output
    assert "completed after 1 completion(s)" in out.output


def test_run_on_the_openai_wire_escapes_model_bytes() -> None:
    replies = [text_reply("red \x1b[31mALERT\x1b[0m \u202eevil")]
    with WireServer(replies) as server:
        out = CliRunner().invoke(
            main,
            [
                "run",
                "hi",
                "--provider",
                "openai",
                "--base-url",
                f"{server.url}/v1",
                "--model",
                "llama3",
                "--max-rounds",
                "2",
            ],
            env={"OPENAI_API_KEY": "sk-cli"},
        )
    assert out.exit_code == 0, out.output
    assert "\x1b" not in out.output
    assert "\u202e" not in out.output
    assert "red \\x1b[31mALERT\\x1b[0m \\u202eevil" in out.output
    assert server.requests[0].json()["model"] == "llama3"
    assert "tools" not in server.requests[0].json()  # nothing installed: empty offer


def test_a_failed_run_exits_non_zero_with_a_reason() -> None:
    with WireServer([Reply(401, {"error": {"code": "invalid_api_key"}})]) as server:
        out = CliRunner().invoke(
            main,
            ["run", "hi", "--provider", "openai", "--base-url", server.url],
            env={"OPENAI_API_KEY": "sk-cli-secret"},
        )
    assert out.exit_code == 1
    assert "failed: the provider refused the credentials; no completion arrived" in out.output
    assert "HTTP 401 (invalid_api_key)" in out.output
    assert "sk-cli-secret" not in out.output


def test_run_is_listed() -> None:
    out = CliRunner().invoke(main, ["--help"])
    assert "run" in out.output


def test_a_script_file_drives_the_scripted_provider(tmp_path: Path) -> None:
    script = tmp_path / "turns.json"
    script.write_text(
        json.dumps(
            [
                {"content": "checking", "tool_calls": [{"name": "nope", "id": "c1"}]},
                "final \x1b[2J answer",
            ]
        )
    )
    out = CliRunner().invoke(main, ["run", "go", "--script", str(script)])
    assert out.exit_code == 0, out.output
    # No tool is installed, so nothing is offered and the first turn is the answer.
    assert "checking" in out.output
    assert "\x1b" not in out.output


@pytest.mark.parametrize(
    "content", ["{not json", '{"turns": []}', "[1]", '[{"tool_calls": [{"arguments": {}}]}]']
)
def test_a_bad_script_is_a_usage_error(tmp_path: Path, content: str) -> None:
    script = tmp_path / "turns.json"
    script.write_text(content)
    out = CliRunner().invoke(main, ["run", "go", "--script", str(script)])
    assert out.exit_code == 2
    assert "Traceback" not in out.output


def test_a_suspended_run_is_reported_with_its_digest_and_pending_calls() -> None:
    from nr_llm_core import ScriptedProvider, ToolHost, ToolLoop

    host = ToolHost()
    host.register(Writer())
    turn = {"tool_calls": [{"name": "write_note", "arguments": {"text": "\x1b[31m"}, "id": "w"}]}
    result = ToolLoop(ScriptedProvider([turn]), host).run("go")

    @click.command()
    def show() -> None:
        _report(result, privacy_level="metadata")

    out = CliRunner().invoke(show)
    assert f"awaiting approval (digest {result.suspended.digest}):" in out.output
    assert "w  write_note" in out.output
    assert "[needs approval]" in out.output
    assert "\x1b" not in out.output
