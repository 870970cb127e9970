"""A deterministic, offline provider that plays a list of turns: demos, docs and tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, final

from nr_llm_core.errors import ProviderError
from nr_llm_core.messages import ChatMessage, ToolCall
from nr_llm_core.providers.base import Completion, TrustZone, Usage
from nr_llm_core.results import ToolSpec

__all__ = ["DEMO_TURNS", "ScriptedProvider", "Turn"]

#: A turn is a final text, a mapping ``{"content": str, "tool_calls": [{"name", "arguments",
#: "id"?}]}``, or a ready :class:`Completion`.
Turn = str | Mapping[str, Any] | Completion

#: The built-in demo: it exercises three builtin tools, then answers. The first call's artifact
#: (``list_tables``' table of each table's columns) is one the model never sees: its content
#: names the tables only. The second's repeats its content, the third has none.
DEMO_TURNS: Final[tuple[Turn, ...]] = (
    {"content": "Let me see which tables exist.", "tool_calls": [{"name": "list_tables"}]},
    {
        "content": "Reading a few customers.",
        "tool_calls": [{"name": "read_records", "arguments": {"table": "customers", "limit": 3}}],
    },
    {
        "content": "And a quick calculation.",
        "tool_calls": [{"name": "calculate", "arguments": {"expression": "19 * 23 + 4"}}],
    },
    "I listed the tables, read three customers and computed 19 * 23 + 4. "
    "The tool results above show the details.",
)


def _estimate_tokens(text: str) -> int:
    # A rough, deterministic stand-in (4 characters per token) so budgets can be exercised.
    return (len(text) + 3) // 4


@final
class ScriptedProvider:
    """Plays ``turns`` in order, one per :meth:`complete` call; offline and deterministic.

    Tool-call ids are ``call_<turn>_<index>`` unless a turn gives its own. Usage is estimated
    at four characters per token. When the turns run out, :meth:`complete` raises
    :class:`~nr_llm_core.errors.ProviderError` (the loop ends the run as ``failed``). Every
    request is kept in :attr:`requests` as ``(messages, tool names)``. The zone is ``local``.
    """

    trust_zone: TrustZone

    def __init__(self, turns: Iterable[Turn], *, trust_zone: TrustZone | str = "local") -> None:
        self.turns: list[Turn] = list(turns)
        self.trust_zone = TrustZone(trust_zone)
        self.position = 0
        self.requests: list[tuple[tuple[ChatMessage, ...], tuple[str, ...]]] = []

    @classmethod
    def demo(cls) -> ScriptedProvider:
        """The built-in demo script (:data:`DEMO_TURNS`)."""
        return cls(DEMO_TURNS)

    def complete(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> Completion:
        """The next turn."""
        self.requests.append((tuple(messages), tuple(spec.name for spec in tools)))
        if self.position >= len(self.turns):
            raise ProviderError("the scripted provider has no more turns")
        index = self.position
        self.position += 1
        turn = self.turns[index]
        if isinstance(turn, Completion):
            return turn
        calls: tuple[ToolCall, ...] = ()
        if isinstance(turn, str):
            content = turn
        else:
            content = str(turn.get("content") or "")
            calls = tuple(
                ToolCall(
                    id=str(call.get("id") or f"call_{index}_{n}"),
                    name=call["name"],
                    arguments=dict(call.get("arguments") or {}),
                )
                for n, call in enumerate(turn.get("tool_calls") or ())
            )
        sent = sum(_estimate_tokens(m.content or "") for m in messages)
        return Completion(
            content=content,
            tool_calls=calls,
            usage=Usage(input_tokens=sent, output_tokens=_estimate_tokens(content)),
        )
