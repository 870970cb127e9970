"""A run's cost is linear in its rounds (issue 18, ADR 0027): over a 20-round run on the real
wire, each message is read by the zone's view once, turned into a step record once and encoded
by the adapter once, however many requests carry it; and what went on the wire is what the
whole-history view says, request by request."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from nr_llm_core import AnthropicProvider, ChatMessage, OpenAIChatProvider, ToolLoop
from nr_llm_core.exposure import ZoneConversation, zone_view
from nr_llm_core.loop import TerminationReason
from nr_llm_core.providers import TrustZone, anthropic, openai
from nr_llm_core.providers._http import encode_request

from ._tools import make_host
from ._wire import Reply, WireServer

ROUNDS = 20


def openai_round(k: int) -> Reply:
    if k > ROUNDS:
        message: dict[str, Any] = {"role": "assistant", "content": "All looked up."}
    else:
        call = {
            "id": f"call_{k}",
            "type": "function",
            "function": {"name": "lookup", "arguments": json.dumps({"id": k})},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return Reply(body={"choices": [{"message": message}], "usage": {}})


def anthropic_round(k: int) -> Reply:
    if k > ROUNDS:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": "All looked up."}]
    else:
        blocks = [
            {"type": "text", "text": f"Looking {k} up."},
            {"type": "tool_use", "id": f"toolu_{k}", "name": "lookup", "input": {"id": k}},
        ]
    return Reply(body={"type": "message", "content": blocks, "usage": {}})


ADAPTERS: dict[str, tuple[Callable[[str], Any], Callable[[int], Reply], Any]] = {
    "openai": (
        lambda url: OpenAIChatProvider(f"{url}/v1", "gpt-4o-mini", "k", max_retries=0),
        openai_round,
        openai,
    ),
    "anthropic": (
        lambda url: AnthropicProvider("claude", "k", base_url=url, max_retries=0),
        anthropic_round,
        anthropic,
    ),
}


@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
def test_each_message_is_viewed_recorded_and_encoded_once(
    adapter: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_provider, reply, module = ADAPTERS[adapter]
    counts = {"viewed": 0, "recorded": 0, "encoded": 0}

    def counted(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return function(*args, **kwargs)

        return call

    monkeypatch.setattr(ZoneConversation, "_add", counted("viewed", ZoneConversation._add))
    monkeypatch.setattr(ChatMessage, "to_dict", counted("recorded", ChatMessage.to_dict))
    one_message = "openai_message" if adapter == "openai" else "anthropic_blocks"
    monkeypatch.setattr(module, one_message, counted("encoded", getattr(module, one_message)))
    history = [ChatMessage.system("You help."), ChatMessage.user("Look up 1 to 20.")]
    with WireServer([reply(k) for k in range(1, ROUNDS + 2)]) as server:
        provider = make_provider(server.url)
        result = ToolLoop(provider, make_host(), max_iterations=ROUNDS).run(history)
    assert result.termination_reason is TerminationReason.MAX_ITERATIONS
    assert len(server.requests) == ROUNDS + 1
    # Sent: the two first messages and, per round, the model's call and its answer. Read on
    # every request, they would be 2 + 4 + ... + 42 = 462.
    sent = 2 + 2 * ROUNDS
    system = 1 if adapter == "anthropic" else 0  # hoisted, not a block
    assert counts == {"viewed": sent, "recorded": sent, "encoded": sent - system}
    # Each request carried exactly what the whole-history view gives (the lookup tool is
    # public, the zone external: nothing withheld), encoded as one body would be.
    monkeypatch.undo()
    final = list(result.messages)
    for k, captured in enumerate(server.requests):
        shown = final[: 2 + 2 * k]
        view = zone_view(shown, TrustZone.EXTERNAL, lambda name: make_host().spec(name).data_class)
        tools = () if k == ROUNDS else tuple(make_host().specs())
        assert captured.body == encode_request(provider.request_body(view.messages, tools))
