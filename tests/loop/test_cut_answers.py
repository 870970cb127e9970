"""An answer cut at the token limit: its own termination reason on both wires, its tool calls
not run, recorded in the audit store and shown by ``nr-llm run``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nr_llm_core import (
    AgentRunPersister,
    AnthropicProvider,
    ChatMessage,
    OpenAIChatProvider,
    ToolLoop,
)
from nr_llm_core.cli import main
from nr_llm_core.loop import TerminationReason
from nr_llm_core.messages import ToolCall
from nr_llm_core.providers import Completion, ScriptedProvider

from ._tools import Lookup, make_host
from ._wire import WireServer
from .test_anthropic_wire import message_reply, text, tool_use
from .test_openai_wire import text_reply, tool_call_reply

KEY = "sk-test-KEY-cut-4e2f"


def cut_openai(content: str | None, *calls: tuple[str, str, str]) -> Any:
    reply = tool_call_reply(*calls, content=content) if calls else text_reply(content or "")
    reply.body["choices"][0]["finish_reason"] = "length"
    return reply


def openai(url: str) -> OpenAIChatProvider:
    return OpenAIChatProvider(f"{url}/v1", "llama3", max_retries=0, timeout=5.0, max_tokens=64)


def anthropic(url: str) -> AnthropicProvider:
    return AnthropicProvider("m", KEY, base_url=url, max_retries=0, timeout=5.0, max_tokens=64)


def test_openai_length_is_not_completed() -> None:
    """``finish_reason: "length"``: the answer stopped at the limit, not at its end."""
    with WireServer([cut_openai("The customers are: Ada, Gra")]) as server:
        result = ToolLoop(openai(server.url), make_host()).run("list them", allowed=[])
    assert result.termination_reason is TerminationReason.MAX_TOKENS
    assert result.termination_reason == "max_tokens"
    assert result.content == "The customers are: Ada, Gra"
    assert result.error is None
    assert result.messages[-1] == ChatMessage.assistant("The customers are: Ada, Gra")


def test_anthropic_max_tokens_is_not_completed() -> None:
    with WireServer([message_reply(text("Half an"), stop="max_tokens")]) as server:
        result = ToolLoop(anthropic(server.url), make_host()).run("go", allowed=[])
    assert result.termination_reason is TerminationReason.MAX_TOKENS
    assert result.content == "Half an"


@pytest.mark.parametrize(
    ("finish", "reason"),
    [("stop", "completed"), (None, "completed"), ("content_filter", "completed")],
)
def test_other_finish_reasons_still_complete(finish: str | None, reason: str) -> None:
    reply = text_reply("fine")
    reply.body["choices"][0]["finish_reason"] = finish
    with WireServer([reply]) as server:
        result = ToolLoop(openai(server.url), make_host()).run("go", allowed=[])
    assert result.termination_reason == reason


def test_tool_calls_in_a_cut_answer_are_not_run() -> None:
    """The cut may fall inside the arguments of a call (or before the calls the model meant
    to make): none of them runs; each is answered, and the run ends."""
    lookup = Lookup()
    reply = cut_openai(None, ("call_a", "lookup", '{"id": 42}'), ("call_b", "lookup", '{"id'))
    with WireServer([reply, text_reply("never asked")]) as server:
        result = ToolLoop(openai(server.url), make_host(lookup)).run("who is 42?")
    assert result.termination_reason is TerminationReason.MAX_TOKENS
    assert result.invocations == ()
    assert len(server.requests) == 1
    answers = [m for m in result.messages if m.role.value == "tool"]
    assert [(m.tool_call_id, m.content) for m in answers] == [
        ("call_a", "Not run: the answer was cut at the token limit."),
        ("call_b", "Not run: the answer was cut at the token limit."),
    ]


def test_anthropic_cut_tool_use_is_not_run() -> None:
    reply = message_reply(text("Looking"), tool_use("toolu_1", "lookup", {}), stop="max_tokens")
    with WireServer([reply]) as server:
        result = ToolLoop(anthropic(server.url), make_host()).run("who is 42?")
    assert result.termination_reason is TerminationReason.MAX_TOKENS
    assert result.invocations == ()


def test_a_cut_answer_is_recorded_as_max_tokens(tmp_path: Path) -> None:
    with (
        WireServer([cut_openai("cut her")]) as server,
        AgentRunPersister(tmp_path / "audit.db") as store,
    ):
        result = ToolLoop(openai(server.url), make_host(), persister=store).run("go")
        record = store.get_run(result.run_id)
    assert record is not None
    assert record["status"] == "completed"
    assert record["termination_reason"] == "max_tokens"


def test_a_scripted_completion_can_be_cut_too() -> None:
    cut = Completion(
        content="partial",
        tool_calls=(ToolCall(id="c", name="lookup", arguments={"id": 42}),),
        stop_reason="length",
    )
    result = ToolLoop(ScriptedProvider([cut]), make_host()).run("go")
    assert result.termination_reason is TerminationReason.MAX_TOKENS
    assert result.invocations == ()


def test_a_completion_with_an_unknown_stop_reason_is_refused() -> None:
    with pytest.raises(ValueError):
        Completion(content="x", stop_reason="cut")  # type: ignore[arg-type]


@pytest.fixture
def _no_installed_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NR_LLM_DISABLE_PLUGIN_AUTOLOAD", "1")


@pytest.mark.usefixtures("_no_installed_tools")
def test_nr_llm_run_says_the_answer_was_cut(tmp_path: Path) -> None:
    with WireServer([cut_openai("A long answer that st")]) as server:
        out = CliRunner().invoke(
            main,
            [
                "run",
                "hi",
                "--provider",
                "openai",
                "--base-url",
                f"{server.url}/v1",
                "--max-tokens",
                "16",
                "--db",
                str(tmp_path / "a.db"),
            ],
        )
    assert out.exit_code == 0, out.output
    assert "max_tokens after 1 completion(s)" in out.output
    assert "the answer was cut at the token limit (--max-tokens 16)" in out.output
    assert server.requests[0].json()["max_tokens"] == 16
    listed = CliRunner().invoke(main, ["runs", "list", "--db", str(tmp_path / "a.db")])
    assert listed.exit_code == 0, listed.output
    assert listed.output.splitlines()[-1].split()[-1] == "max_tokens"
