"""The incremental conversation (ADR 0027) is the whole one, read again: whatever a history is and
however it grows, the zone's view read on from the last round is ``zone_view`` of the whole
history, and each adapter's request bytes, built from the bytes it kept of each message, are
the bytes the shared encoder writes for the whole request body."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from nr_llm_core import ChatMessage, ToolCall, ToolSpec
from nr_llm_core.exposure import ZoneConversation, zone_view
from nr_llm_core.providers import TrustZone
from nr_llm_core.providers._http import encode_request
from nr_llm_core.providers.anthropic import AnthropicProvider
from nr_llm_core.providers.openai import OpenAIChatProvider
from nr_llm_core.results import DataClass

# Few names and ids, so that calls share ids, answers find (or miss) their calls, and tools are
# installed, missing or of every class.
NAMES = ["weather", "report", "vault", "ghost"]
IDS = ["a", "b", "c"]
texts = st.one_of(
    st.sampled_from(
        ["", "ok", 'Error: tool "weather" not permitted', "Not run: the token budget is spent."]
    ),
    st.text(max_size=12),
    # a lone surrogate: the adapters then fall back to encoding the whole body
    st.just("half \ud83d pair"),
)
calls = st.builds(
    ToolCall,
    id=st.sampled_from(IDS),
    name=st.sampled_from(NAMES),
    arguments=st.dictionaries(
        st.sampled_from(["n", "q"]), st.one_of(st.integers(), texts), max_size=2
    ),
)
messages = st.one_of(
    st.builds(ChatMessage.system, texts),
    st.builds(ChatMessage.user, texts),
    st.builds(ChatMessage.assistant, texts),
    st.builds(
        ChatMessage.assistant_tool_calls,
        st.lists(calls, min_size=1, max_size=3),
        st.one_of(st.none(), texts),
    ),
    st.builds(ChatMessage.tool_result, st.sampled_from(IDS), texts),
)
classes = st.dictionaries(
    st.sampled_from(NAMES), st.sampled_from(list(DataClass)), max_size=len(NAMES)
)


@given(
    history=st.lists(messages, max_size=14),
    cuts=st.lists(st.integers(0, 14), max_size=5),
    zone=st.sampled_from(list(TrustZone)),
    written_here=st.one_of(st.none(), st.integers(0, 14)),
    first=classes,
    later=classes,
    change_at=st.integers(0, 5),
    rewrite=st.one_of(st.none(), st.tuples(st.integers(0, 13), messages)),
)
def test_the_zone_view_read_on_is_the_zone_view_of_the_whole_history(
    history: list[ChatMessage],
    cuts: list[int],
    zone: TrustZone,
    written_here: int | None,
    first: dict[str, DataClass],
    later: dict[str, DataClass],
    change_at: int,
    rewrite: tuple[int, ChatMessage] | None,
) -> None:
    """A history read in steps (which may shrink, be rewritten in place, or see a tool's data
    class change between steps) gives at every step exactly the view of the whole."""
    installed = dict(first)
    conversation = ZoneConversation(zone, installed.get, written_here=written_here)
    current = list(history)
    for step, cut in enumerate([*sorted(cuts), len(history)]):
        if step == change_at:  # a tool installed, removed, or its class changed
            installed.clear()
            installed.update(later)
        if rewrite is not None and step == 2 and rewrite[0] < len(current):
            current[rewrite[0]] = rewrite[1]  # the same length, another object
        shown = current[:cut]
        assert conversation.view(shown) == zone_view(
            shown, zone, installed.get, written_here=written_here
        )


SPECS = [
    ToolSpec(
        "weather", "The weather.", {"type": "object", "properties": {"city": {"type": "string"}}}
    ),
    ToolSpec("report", "A report \u00e9.", None),
]


def _providers() -> list[Any]:
    return [
        OpenAIChatProvider("http://127.0.0.1:9/v1", "m", extra_body={"temperature": 0.5}),
        OpenAIChatProvider("http://127.0.0.1:9/v1", "m"),
        AnthropicProvider("m", "k", base_url="http://127.0.0.1:9"),
    ]


@given(
    history=st.lists(messages, min_size=1, max_size=12),
    cuts=st.lists(st.integers(1, 12), max_size=4),
    other=st.lists(messages, min_size=1, max_size=4),
    offered=st.lists(st.sampled_from(SPECS), max_size=2),
)
def test_each_adapter_writes_the_bytes_the_encoder_writes_for_the_whole_body(
    history: list[ChatMessage],
    cuts: list[int],
    other: list[ChatMessage],
    offered: list[ToolSpec],
) -> None:
    """A conversation sent as it grows (with another conversation sent in between, and one
    that starts over from a shorter history) gives, request by request, byte for byte
    ``encode_request(request_body(...))``: the same JSON, keys in the same order, the same
    escapes, and the same ASCII-escaped fallback for a lone surrogate."""
    for provider in _providers():
        for cut in [*sorted(cuts), len(history), 1]:
            for sent in (history[:cut], other):
                expected = encode_request(provider.request_body(sent, offered))
                assert provider.request_bytes(sent, offered) == expected
