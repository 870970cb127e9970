"""``nr-llm run``: the scripted demo offline, and the OpenAI wire on loopback."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from nr_llm_core.cli import main

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
    assert "failed after 1 completion(s)" in out.output
    assert "HTTP 401 (invalid_api_key)" in out.output
    assert "sk-cli-secret" not in out.output


def test_run_is_listed() -> None:
    out = CliRunner().invoke(main, ["--help"])
    assert "run" in out.output
