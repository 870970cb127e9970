"""The answer's limit and the request's deadline: on the wire of both adapters, from the CLI,
and what a deadline does to retries (a request that timed out is never sent again)."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from nr_llm_core import AnthropicProvider, ChatMessage, OpenAIChatProvider, ToolLoop
from nr_llm_core.cli import main
from nr_llm_core.errors import ConfigurationError, ProviderTimeoutError
from nr_llm_core.loop import TerminationReason
from nr_llm_core.providers import _http

from ._tools import make_host
from ._wire import Reply, WireServer
from .test_anthropic_wire import message_reply, text
from .test_openai_wire import text_reply

KEY = "sk-test-KEY-limits-0c3d"


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    waited: list[float] = []
    monkeypatch.setattr(_http, "_sleep", waited.append)
    return waited


def ask(provider: Any) -> Any:
    return ToolLoop(provider, make_host()).run("hi", allowed=[])


# -- the answer's limit on the wire ------------------------------------------------------------


def test_openai_sends_a_limit_by_default() -> None:
    """A server without a limit of its own (llama.cpp's default is none) must be told one, or
    it generates until the deadline."""
    with WireServer([text_reply("a"), text_reply("b")]) as server:
        ask(OpenAIChatProvider(f"{server.url}/v1", "llama3", max_retries=0))
        ask(OpenAIChatProvider(f"{server.url}/v1", "llama3", max_retries=0, max_tokens=300))
    first, second = server.requests
    assert b'"max_tokens":4096' in first.raw
    assert second.json()["max_tokens"] == 300
    assert "max_completion_tokens" not in first.json()


def test_openai_itself_gets_max_completion_tokens() -> None:
    """OpenAI refuses ``max_tokens`` for its reasoning models and takes
    ``max_completion_tokens`` for all; other servers (Ollama) know only ``max_tokens``."""
    official = OpenAIChatProvider("https://api.openai.com/v1", "o3-mini", KEY, max_tokens=512)
    body = official.request_body([ChatMessage.user("x")], [])
    assert body["max_completion_tokens"] == 512
    assert "max_tokens" not in body
    official.close()
    with WireServer([text_reply("a")]) as server:
        chosen = OpenAIChatProvider(
            f"{server.url}/v1", "m", max_retries=0, max_tokens_field="max_completion_tokens"
        )
        ask(chosen)
    assert server.requests[0].json()["max_completion_tokens"] == 4096
    assert "max_tokens" not in server.requests[0].json()


def test_anthropic_sends_the_limit() -> None:
    with WireServer([message_reply(text("a")), message_reply(text("b"))]) as server:
        ask(AnthropicProvider("claude-3-5-sonnet-latest", KEY, base_url=server.url, max_retries=0))
        ask(AnthropicProvider("m", KEY, base_url=server.url, max_retries=0, max_tokens=77))
    assert b'"max_tokens":4096' in server.requests[0].raw
    assert server.requests[1].json()["max_tokens"] == 77


@pytest.mark.parametrize("field", ["max_tokens", "max_completion_tokens"])
def test_extra_body_cannot_set_the_limit(field: str) -> None:
    with pytest.raises(ValueError, match=f"{field}.*use max_tokens="):
        OpenAIChatProvider("http://127.0.0.1:1/v1", "m", extra_body={field: 10})


@pytest.mark.parametrize(
    "setting",
    [
        {"max_tokens": 0},
        {"max_tokens": 2.5},
        {"max_tokens": True},
        {"timeout": 0},
        {"timeout": -1.0},
        {"timeout": float("inf")},
        {"timeout": float("nan")},
    ],
)
def test_limits_that_cannot_work_are_refused(setting: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        OpenAIChatProvider("http://127.0.0.1:1/v1", "m", **setting)
    with pytest.raises(ConfigurationError):
        AnthropicProvider("m", KEY, base_url="http://127.0.0.1:1", **setting)


# -- the deadline, and what it does to retries -------------------------------------------------


def test_a_stalled_server_fails_the_run_once_and_is_not_asked_again(sleeps: list[float]) -> None:
    """The server accepted the request and generates past the deadline. Sending it again
    would start the whole generation over: with two retries allowed, it is asked once."""
    with WireServer([Reply(hang=True), text_reply("late"), text_reply("late")]) as server:
        result = ask(OpenAIChatProvider(f"{server.url}/v1", "m", timeout=0.3, max_retries=2))
    assert result.termination_reason is TerminationReason.FAILED
    assert result.error == (
        f"provider error: the OpenAI-compatible provider at {server.url}/v1/chat/completions "
        "did not answer within 0.3 s (1 attempt; a request that timed out is not sent again)"
    )
    assert len(server.requests) == 1
    assert sleeps == []


def test_a_trickling_answer_past_the_deadline_is_not_asked_again(sleeps: list[float]) -> None:
    slow = message_reply(text("slow " * 40))
    slow.trickle = 0.02
    with WireServer([slow, message_reply(text("x"))]) as server:
        provider = AnthropicProvider("m", KEY, base_url=server.url, timeout=0.2, max_retries=3)
        with pytest.raises(ProviderTimeoutError) as info:
            provider.complete([ChatMessage.user("x")], [])
    assert "did not answer within 0.2 s (1 attempt;" in str(info.value)
    assert len(server.requests) == 1


def test_retries_before_a_timeout_are_counted(sleeps: list[float]) -> None:
    replies = [Reply(503, b"busy", {"retry-after": "0"}), Reply(hang=True), text_reply("x")]
    with WireServer(replies) as server:
        result = ask(OpenAIChatProvider(f"{server.url}/v1", "m", timeout=0.3, max_retries=5))
    assert "did not answer within 0.3 s (2 attempts;" in (result.error or "")
    assert len(server.requests) == 2
    assert sleeps == [0.0]


# -- from the command line --------------------------------------------------------------------


@pytest.fixture
def _no_installed_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NR_LLM_DISABLE_PLUGIN_AUTOLOAD", "1")


@pytest.mark.parametrize("args", [["run"], ["runs", "approve"]], ids=" ".join)
def test_help_shows_both_options_with_their_defaults(args: list[str]) -> None:
    out = CliRunner().invoke(main, [*args, "--help"], terminal_width=200)
    assert out.exit_code == 0, out.output
    assert "--max-tokens N" in out.output
    assert "--timeout SECONDS" in out.output
    assert "[default: 4096" in out.output
    assert "[default: 60.0" in out.output


@pytest.mark.usefixtures("_no_installed_tools")
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_cli_options_reach_the_wire(provider: str) -> None:
    reply = text_reply("ok") if provider == "openai" else message_reply(text("ok"))
    base = "/v1" if provider == "openai" else ""
    with WireServer([reply]) as server:
        out = CliRunner().invoke(
            main,
            [
                "run",
                "hi",
                "--provider",
                provider,
                "--base-url",
                f"{server.url}{base}",
                "--max-tokens",
                "123",
                "--timeout",
                "9",
            ],
            env={"OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY},
        )
    assert out.exit_code == 0, out.output
    assert server.requests[0].json()["max_tokens"] == 123


@pytest.mark.usefixtures("_no_installed_tools")
def test_the_cli_timeout_is_the_requests_deadline() -> None:
    with WireServer([Reply(hang=True)]) as server:
        out = CliRunner().invoke(
            main,
            [
                "run",
                "hi",
                "--provider",
                "openai",
                "--base-url",
                f"{server.url}/v1",
                "--timeout",
                "0.3",
            ],
        )
    assert out.exit_code == 1, out.output
    assert "did not answer within 0.3 s (1 attempt;" in out.output
    assert len(server.requests) == 1


@pytest.mark.parametrize("bad", [["--max-tokens", "0"], ["--timeout", "0"], ["--timeout", "x"]])
def test_bad_limits_are_usage_errors(bad: list[str]) -> None:
    out = CliRunner().invoke(main, ["run", "hi", "--provider", "openai", *bad])
    assert out.exit_code == 2, out.output
    assert f"Invalid value for '{bad[0]}'" in out.output


def test_a_missing_key_is_named_before_any_request() -> None:
    out = CliRunner().invoke(main, ["run", "hi", "--provider", "anthropic"])
    assert out.exit_code == 2, out.output
    assert "no API key: set ANTHROPIC_API_KEY" in out.output


@pytest.mark.parametrize(("where", "hint"), [("flag", "'--base-url'"), ("env", "OPENAI_BASE_URL")])
def test_a_bad_base_url_is_a_usage_error_naming_its_source(where: str, hint: str) -> None:
    args = ["run", "hi", "--provider", "openai"]
    env = {"OPENAI_API_KEY": KEY}
    if where == "flag":
        args += ["--base-url", "localhost:8080"]
    else:
        env["OPENAI_BASE_URL"] = "localhost:8080"
    out = CliRunner().invoke(main, args, env=env)
    assert out.exit_code == 2, out.output
    assert hint in out.output
    assert "must start with http:// or https://" in out.output
