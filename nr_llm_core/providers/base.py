"""The provider protocol: what a model provider is to the tool loop.

A provider sees only :class:`~nr_llm_core.messages.ChatMessage` values and
:class:`~nr_llm_core.results.ToolSpec` values (of which it may send ``to_wire()`` only), and
answers with a :class:`Completion`. It declares a :class:`TrustZone`, which decides the most
sensitive tool data class the loop will offer it.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any, Final, Literal, Protocol, final, runtime_checkable

import attrs

from nr_llm_core.messages import ChatMessage, ToolCall
from nr_llm_core.results import DataClass, ToolSpec

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TIMEOUT",
    "STOP_REASONS",
    "Completion",
    "Provider",
    "StopReason",
    "TrustZone",
    "Usage",
    "zone_of",
]

#: The most tokens one answer may have unless the caller says otherwise: every HTTP adapter
#: sends a limit, so a server without one of its own cannot generate until the deadline.
DEFAULT_MAX_TOKENS: Final = 4096
#: Seconds one provider request may take unless the caller says otherwise.
DEFAULT_TIMEOUT: Final = 60.0

#: Why the model stopped, in host words: ``end`` (it finished its answer), ``tool_calls`` (it
#: asks for tools), ``length`` (the answer was cut at the token limit), ``other`` (anything
#: else a provider reports, such as a content filter).
StopReason = Literal["end", "tool_calls", "length", "other"]
STOP_REASONS: Final[frozenset[str]] = frozenset({"end", "tool_calls", "length", "other"})


class TrustZone(enum.StrEnum):
    """Where a provider runs, and so which tool output it may see.

    ============== ================================= ===============================
    zone           example                            most sensitive tool data class
    ============== ================================= ===============================
    local          ScriptedProvider, Ollama on this   secret-adjacent
                   machine
    private-hosted a vLLM server inside your network  internal
    external       OpenAI, Anthropic, any third party public
    ============== ================================= ===============================

    A provider that declares no zone, or a value that is not one of these, is ``external``.
    """

    LOCAL = "local"
    PRIVATE_HOSTED = "private-hosted"
    EXTERNAL = "external"

    @property
    def ceiling(self) -> DataClass:
        """The most sensitive data class a tool offered to this zone may declare."""
        return _CEILING[self]


_CEILING: Final = {
    TrustZone.LOCAL: DataClass.SECRET_ADJACENT,
    TrustZone.PRIVATE_HOSTED: DataClass.INTERNAL,
    TrustZone.EXTERNAL: DataClass.PUBLIC,
}


def zone_of(provider: object) -> TrustZone:
    """The provider's declared zone; anything missing or unrecognised is ``external``."""
    try:
        value = getattr(provider, "trust_zone", None)
    except Exception:  # a property that raises is no declaration
        return TrustZone.EXTERNAL
    if not isinstance(value, str):
        return TrustZone.EXTERNAL
    try:
        return TrustZone(str(value))
    except ValueError:
        return TrustZone.EXTERNAL


@final
@attrs.frozen(kw_only=True)
class Usage:
    """Tokens a completion consumed, as the provider reported them (0 when it did not).

    ``input_tokens`` is every token of input the model read, cached or not: budgets and the
    audit totals count it. Where a provider reports prompt caching, its parts are kept too:
    ``cache_read_input_tokens`` (read from the cache) and ``cache_creation_input_tokens``
    (written to it), both already counted in ``input_tokens``.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    @property
    def total(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
            cache_creation_input_tokens=(
                self.cache_creation_input_tokens + other.cache_creation_input_tokens
            ),
        )

    def to_dict(self) -> dict[str, int]:
        """``{"input_tokens": …, "output_tokens": …}``, and each cache part that is not 0
        (so a run without prompt caching has the shape it always had)."""
        out = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}
        if self.cache_read_input_tokens:
            out["cache_read_input_tokens"] = self.cache_read_input_tokens
        if self.cache_creation_input_tokens:
            out["cache_creation_input_tokens"] = self.cache_creation_input_tokens
        return out


@final
@attrs.frozen(kw_only=True)
class Completion:
    """One answer from a provider: text, the tool calls it asks for, token usage.

    ``dropped_tool_calls`` counts calls the provider sent that could not be kept (no usable
    name); ``raw`` is the provider's decoded answer when an adapter chooses to keep it;
    ``stop_reason`` is why the model stopped (:data:`StopReason`): ``length`` means the
    answer was cut at the token limit, and the loop ends the run as ``max_tokens``.
    """

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = attrs.field(factory=Usage)
    raw: Any = None
    dropped_tool_calls: int = 0
    stop_reason: StopReason = attrs.field(
        default="end", validator=attrs.validators.in_(STOP_REASONS)
    )


@runtime_checkable
class Provider(Protocol):
    """A model provider. ``complete`` raises :class:`~nr_llm_core.errors.ProviderError` (or a
    subclass) for every fault it knows of; the loop treats any other exception as a fault too.
    An empty ``tools`` sequence means no tools are offered (and none go on the wire)."""

    @property
    def trust_zone(self) -> TrustZone | str:
        """Where the provider runs (see :class:`TrustZone`); a provider without one, or with
        an unknown value, is treated as ``external``."""
        ...

    def complete(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> Completion:  # pragma: no cover - a protocol
        """Answer the conversation ``messages``, offering ``tools``."""
        ...
