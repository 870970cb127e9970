"""Token usage with prompt caching: Anthropic's input tokens leave out the cached ones, and the
host counts all of them (budgets, audit totals) while keeping the parts visible."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from nr_llm_core import AgentRunPersister, AnthropicProvider, OpenAIChatProvider, ToolLoop
from nr_llm_core.approval import SuspendedRunState, resigned
from nr_llm_core.loop import TerminationReason
from nr_llm_core.providers import Usage

from ._tools import make_host
from ._wire import WireServer
from .test_anthropic_wire import message_reply, text, tool_use
from .test_openai_wire import text_reply

KEY = "sk-ant-api03-usage-31c9"
CACHED = {
    "input_tokens": 12,
    "cache_read_input_tokens": 3000,
    "cache_creation_input_tokens": 500,
    "output_tokens": 40,
}


def cached(reply: Any) -> Any:
    reply.body["usage"] = dict(CACHED)
    return reply


def provider(url: str) -> AnthropicProvider:
    return AnthropicProvider("m", KEY, base_url=url, max_retries=0, timeout=5.0)


def test_cached_input_tokens_are_counted_and_kept_as_parts(tmp_path: Path) -> None:
    with (
        WireServer([cached(message_reply(text("hi")))]) as server,
        AgentRunPersister(tmp_path / "audit.db") as store,
    ):
        result = ToolLoop(provider(server.url), make_host(), persister=store).run("go")
        record = store.get_run(result.run_id)
        steps = store.steps(result.run_id)
    assert result.usage == Usage(
        input_tokens=3512,
        output_tokens=40,
        cache_read_input_tokens=3000,
        cache_creation_input_tokens=500,
    )
    assert record is not None
    assert (record["tokens_in"], record["tokens_out"]) == (3512, 40)
    # The llm step keeps the parts, at the default METADATA level too.
    llm = next(json.loads(s["payload"]) for s in steps if s["kind"] == "llm")
    assert llm["usage"] == {
        "input_tokens": 3512,
        "output_tokens": 40,
        "cache_read_input_tokens": 3000,
        "cache_creation_input_tokens": 500,
    }


def test_the_token_budget_counts_cached_input() -> None:
    """12 uncached input tokens would leave a 1,000-token budget almost whole; 3,512 tokens
    were read, and the budget is spent."""
    reply = cached(message_reply(tool_use("toolu_1", "lookup", {"id": 42}), stop="tool_use"))
    with WireServer([reply, message_reply(text("never"))]) as server:
        result = ToolLoop(provider(server.url), make_host(), token_budget=1000).run("who?")
    assert result.termination_reason is TerminationReason.BUDGET_EXHAUSTED
    assert result.invocations == ()
    assert len(server.requests) == 1


def test_openai_cached_tokens_are_a_part_not_an_addition() -> None:
    """OpenAI's ``prompt_tokens`` already counts the cached ones."""
    reply = text_reply("hi")
    reply.body["usage"] = {
        "prompt_tokens": 2000,
        "completion_tokens": 9,
        "prompt_tokens_details": {"cached_tokens": 1920},
    }
    with WireServer([reply]) as server:
        loop = ToolLoop(OpenAIChatProvider(f"{server.url}/v1", "m", max_retries=0), make_host())
        result = loop.run("go", allowed=[])
    assert result.usage == Usage(input_tokens=2000, output_tokens=9, cache_read_input_tokens=1920)


def test_usage_without_caching_keeps_its_shape() -> None:
    assert Usage(input_tokens=3, output_tokens=4).to_dict() == {
        "input_tokens": 3,
        "output_tokens": 4,
    }


#: A state saved by the version before the cache parts existed (its digest included).
SAVED_BEFORE = (
    '{"run_id":"r1","messages":[{"role":"user","content":"hi"},{"role":"assistant",'
    '"content":null,"tool_calls":[{"id":"call_1","name":"lookup","arguments":{"id":42}}]}],'
    '"pending":[{"id":"call_1","name":"lookup","arguments":{"id":42}}],'
    '"needs_approval":["call_1"],"iterations":1,"tool_rounds":0,'
    '"usage":{"input_tokens":120,"output_tokens":7},"allowed":null,'
    '"digest":"c7c33e39163eb8db3a4053dc5c5a2bf6f2e6c29c6af9b100a019d5d0ce785e51","version":1}'
)


def test_a_state_saved_before_the_cache_parts_keeps_its_digest() -> None:
    """A run suspended by an earlier version keeps its digest: the new fields, at 0, do not
    change it, so the store's upgrade can re-sign it (version 1 is the keyless digest, which
    is no longer accepted as it is: see tests/stores/test_resign.py)."""
    state = SuspendedRunState.from_json(SAVED_BEFORE)
    assert state.compute_digest() == state.digest
    assert state.to_json() == SAVED_BEFORE
    again = SuspendedRunState.from_dict(resigned(state.to_dict()) or {})
    again.verify()
    assert again.usage == state.usage


def test_a_state_keeps_its_cache_parts() -> None:
    state = SuspendedRunState.from_dict(
        resigned(SuspendedRunState.from_json(SAVED_BEFORE).to_dict()) or {}
    )
    usage = Usage(input_tokens=3512, output_tokens=40, cache_read_input_tokens=3000)
    grown = SuspendedRunState.create(
        **{k: v for k, v in attrs.asdict(state, recurse=False).items() if k != "digest"}
        | {"usage": usage}
    )
    again = SuspendedRunState.from_json(grown.to_json())
    again.verify()
    assert again.usage == usage
