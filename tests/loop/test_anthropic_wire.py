"""AnthropicProvider on the real Messages API wire, against a loopback server."""

from __future__ import annotations

from typing import Any

import pytest

from nr_llm_core import AnthropicProvider, ChatMessage, ToolLoop
from nr_llm_core.errors import ProviderAuthError
from nr_llm_core.loop import TerminationReason
from nr_llm_core.providers import _http

from ._tools import CANARIES, LOOKUP_CONTENT, make_host
from ._wire import Reply, WireServer, refused_url

KEY = "sk-ant-api03-TESTKEY-9d8c7b6a"


def message_reply(*blocks: dict[str, Any], stop: str = "end_turn") -> Reply:
    """A recorded shape of a Messages API response."""
    return Reply(
        body={
            "id": "msg_01Aq9w938a90dw8q",
            "type": "message",
            "role": "assistant",
            "model": "claude-3-5-sonnet-20241022",
            "content": list(blocks),
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 472, "output_tokens": 91},
        }
    )


def tool_use(id: str, name: str, input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": input}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def run(url: str, *, allowed: Any = None, **kw: Any) -> Any:
    kw.setdefault("max_retries", 0)
    kw.setdefault("timeout", 5.0)
    provider = AnthropicProvider("claude-3-5-sonnet-latest", KEY, base_url=url, **kw)
    return ToolLoop(provider, make_host()).run(
        [ChatMessage.system("You help."), ChatMessage.user("who is customer 42?")], allowed=allowed
    )


def test_a_tool_round_on_the_wire() -> None:
    replies = [
        message_reply(
            text("I'll look that up."),
            tool_use("toolu_01A09q90qw90lq917835lq9", "lookup", {"id": 42}),
            tool_use("toolu_01B", "explode", {}),
            stop="tool_use",
        ),
        message_reply(text("Customer 42 is Ada Lovelace.")),
    ]
    with WireServer(replies) as server:
        result = run(server.url, max_tokens=256)
    assert result.termination_reason is TerminationReason.COMPLETED
    assert result.content == "Customer 42 is Ada Lovelace."
    assert result.usage.input_tokens == 944
    first, second = server.requests
    assert first.path == "/v1/messages"
    assert first.headers["x-api-key"] == KEY
    assert first.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in first.headers
    body = first.json()
    assert body["system"] == "You help."
    assert body["max_tokens"] == 256
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "who is customer 42?"}]}
    ]
    for tool in body["tools"]:
        assert set(tool) == {"name", "description", "input_schema"}
    msgs = second.json()["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    assert msgs[1]["content"] == [
        text("I'll look that up."),
        tool_use("toolu_01A09q90qw90lq917835lq9", "lookup", {"id": 42}),
        tool_use("toolu_01B", "explode", {}),
    ]
    # Both tool results merged into one user turn, ids round-tripped.
    assert msgs[2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_01A09q90qw90lq917835lq9",
            "content": LOOKUP_CONTENT,
        },
        {
            "type": "tool_result",
            "tool_use_id": "toolu_01B",
            "content": 'Error: tool "explode" failed.',
        },
    ]
    wire = server.all_bytes()
    for canary in CANARIES:
        assert canary.encode() not in wire, canary


def test_an_empty_offer_sends_no_tools_key() -> None:
    with WireServer([message_reply(text("plain"))]) as server:
        result = run(server.url, allowed=[])
    assert result.content == "plain"
    assert b'"tools"' not in server.all_bytes()


def test_overloaded_then_success(monkeypatch: pytest.MonkeyPatch) -> None:
    waited: list[float] = []
    monkeypatch.setattr(_http, "_sleep", waited.append)
    overloaded = Reply(
        529, {"type": "error", "error": {"type": "overloaded_error", "message": "x"}}
    )
    with WireServer([overloaded, message_reply(text("ok"))]) as server:
        result = run(server.url, max_retries=1)
    assert result.content == "ok"
    assert len(waited) == 1
    assert len(server.requests) == 2


def test_connection_refused_fails_the_run() -> None:
    url = refused_url()
    result = run(url)
    assert result.termination_reason is TerminationReason.FAILED
    assert result.error == (
        f"provider error: could not reach the Anthropic provider at {url}/v1/messages "
        "(ConnectError) (1 attempt)"
    )


@pytest.mark.parametrize(
    "reply",
    [
        Reply(body=b"not json"),
        Reply(body={"type": "message", "content": "a string"}),
        Reply(body={"type": "message"}),
    ],
)
def test_malformed_responses_fail_the_run_cleanly(reply: Reply) -> None:
    with WireServer([reply]) as server:
        result = run(server.url)
    assert result.termination_reason is TerminationReason.FAILED
    assert (result.error or "").startswith("provider error: the Anthropic provider sent")


def test_malformed_tool_use_blocks_are_handled() -> None:
    odd = message_reply(
        tool_use("toolu_ok", "lookup", {"id": 42}),
        tool_use("toolu_str", "lookup", "not an object"),
        {"type": "tool_use", "id": "toolu_noname", "input": {}},
        {"type": "tool_use", "name": "lookup", "input": {"id": 1}},
        "not a block",
        {"type": "mystery"},
        stop="tool_use",
    )
    with WireServer([odd, message_reply(text("done"))]) as server:
        result = run(server.url)
    assert result.termination_reason is TerminationReason.COMPLETED
    contents = {i.call_id: i.result.content for i in result.invocations}
    assert contents == {
        "toolu_ok": LOOKUP_CONTENT,
        "toolu_str": 'Error: invalid arguments for tool "lookup": arguments are not valid JSON',
        "nrllm_call_3": "no such customer",
    }
    results = server.requests[1].json()["messages"][2]["content"]
    assert [b["tool_use_id"] for b in results] == ["toolu_ok", "toolu_str", "nrllm_call_3"]


def test_auth_error_never_shows_the_key() -> None:
    body = {"type": "error", "error": {"type": "authentication_error", "message": f"bad {KEY}"}}
    with WireServer([Reply(401, body)]) as server:
        provider = AnthropicProvider("m", KEY, base_url=server.url, max_retries=0)
        with pytest.raises(ProviderAuthError) as info:
            provider.complete([ChatMessage.user("x")], [])
    assert str(info.value) == (
        "the Anthropic provider refused the credentials: HTTP 401 (authentication_error)"
    )
    assert KEY not in repr(provider)


def test_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    with WireServer([message_reply(text("hi"))]) as server:
        AnthropicProvider("m", base_url=server.url, max_retries=0).complete(
            [ChatMessage.user("x")], []
        )
    assert server.requests[0].headers["x-api-key"] == "sk-ant-env"
