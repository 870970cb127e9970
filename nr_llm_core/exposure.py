"""What of a conversation a provider's trust zone may see: the view every request is built from.

:func:`zone_view` takes the whole history of a run and returns the messages one provider may be
sent. A tool message is traced to the tool that produced it (its ``tool_call_id`` → the call in
an earlier assistant turn → the tool's name → the installed spec → its data class); output of a
class above the zone's ceiling, or of an origin the host cannot establish (an unknown call id,
a tool no longer installed, an undeclared class), is replaced by a fixed host sentence. What a
model wrote after such output in the history it was given (assistant text, call ids and
arguments, and the answers to those calls) may quote it, and is replaced too. The history
itself is never changed: the trace, the audit store and the caller keep what happened. See
ADR 0010.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterator, Sequence
from typing import Final, final

import attrs

from nr_llm_core.messages import ChatMessage, Role, ToolCall
from nr_llm_core.providers.base import TrustZone
from nr_llm_core.results import DataClass

__all__ = ["DataClassOf", "ZoneConversation", "ZoneView", "zone_view"]

#: ``name -> data class`` of an installed tool (undeclared: the strictest); ``None`` when no
#: tool of that name is installed.
DataClassOf = Callable[[str], DataClass | None]

#: What output of an unknown origin counts as (the same rule as an undeclared data class).
_STRICTEST: Final = DataClass.SECRET_ADJACENT

#: A name for a call in a replaced turn whose tool is not installed: the model's own name for
#: it was written after withheld output, so it may quote it.
WITHHELD_TOOL_NAME: Final = "withheld_tool"


def _over_ceiling(name: str, data_class: DataClass, zone: TrustZone) -> str:
    # ``name`` is an installed tool's registered name (TOOL_NAME_RE), never model bytes.
    return (
        f'[withheld by the host: the output of tool "{name}" is {data_class.value} data, '
        f"which a provider in the {zone.value} trust zone may not see]"
    )


def _unattributed(zone: TrustZone) -> str:
    return (
        "[withheld by the host: the output of a tool call the host cannot attribute to an "
        f"installed tool, which a provider in the {zone.value} trust zone may not see]"
    )


def _derived_turn(zone: TrustZone) -> str:
    return (
        "[withheld by the host: written after tool output that a provider in the "
        f"{zone.value} trust zone may not see]"
    )


def _derived_output(zone: TrustZone) -> str:
    return (
        "[withheld by the host: the output of a call written after tool output that a "
        f"provider in the {zone.value} trust zone may not see]"
    )


def _says_not_run(content: str | None, name: str) -> bool:
    """Whether ``content`` is one of the host's answers to a call it did not run.

    Each is a function of the call's name alone, which the provider already reads in the
    assistant turn: showing it reveals nothing, and lets a model learn that its call was
    unknown, not offered, refused or not run. The texts are written in ``ToolHost.invoke`` and
    ``ToolLoop``; if their wording changes, such an answer is withheld (it fails closed).
    """
    return content in (
        f'Error: unknown tool "{name}"',
        f'Error: tool "{name}" not permitted',
        f'Error: the user did not approve the call to "{name}".',
        "Not run: the token budget is spent.",
    )


@attrs.define
class _Origin:
    """The call a tool message answers: its tool's name, whether the turn that made it was
    replaced, and the id the view gives the call."""

    name: str
    derived: bool
    wire_id: str


@final
@attrs.frozen(kw_only=True)
class ZoneView:
    """The messages a provider in ``zone`` may be sent, and what was withheld from them.

    ``withheld_outputs`` counts tool outputs above the zone's ceiling (or of unknown origin);
    ``derived`` counts messages replaced because a model wrote them, or a tool answered a call
    written, after such output.
    """

    zone: TrustZone
    messages: tuple[ChatMessage, ...]
    withheld_outputs: int = 0
    derived: int = 0

    def notes(self) -> list[str]:
        """One trace note in host words (counts only) when anything was withheld, else none."""
        if not self.withheld_outputs and not self.derived:
            return []
        return [
            f"trust zone {self.zone.value}: withheld {self.withheld_outputs} tool output(s) "
            f"above its ceiling and {self.derived} message(s) written after them"
        ]


def zone_view(
    messages: Sequence[ChatMessage],
    zone: TrustZone,
    data_class_of: DataClassOf,
    *,
    written_here: int | None = None,
) -> ZoneView:
    """The part of ``messages`` a provider in ``zone`` may see.

    ``data_class_of`` names an installed tool's data class. ``written_here`` is the index from
    which the messages were written while this provider drove the run: its own turns were
    written from this view, so they are never replaced for following withheld output
    (``None``: every message came from elsewhere, the strictest reading).
    """
    return ZoneConversation(zone, data_class_of, written_here=written_here).view(messages)


@final
class ZoneConversation:
    """:func:`zone_view` of a history that grows: each :meth:`view` reads only the messages
    appended since the last one, so a run's rounds cost what they add, not the whole history.

    ``view(messages)`` is always exactly ``zone_view(messages, zone, data_class_of,
    written_here=written_here)``: the messages already read must be the same objects, in the
    same order, at the start of ``messages``, and every tool's data class that decided a
    message must still be what ``data_class_of`` says; if either has changed, the view is
    read again from the first message. Messages are immutable values, so the objects being
    the same means their content is. Not for use by two threads at once (a run is driven by
    one).
    """

    def __init__(
        self, zone: TrustZone, data_class_of: DataClassOf, *, written_here: int | None = None
    ) -> None:
        self.zone = zone
        self._data_class_of = data_class_of
        # None: every message came from elsewhere, however many are appended later.
        self._own_from = written_here
        self._reset()

    def _reset(self) -> None:
        self._read: list[ChatMessage] = []
        self._view: list[ChatMessage] = []
        self._open_calls: dict[str, list[_Origin]] = {}
        self._replaced_ids: set[str] = set()  # the model's ids of calls in replaced turns
        self._host_ids = itertools.count(1)
        self._withheld = 0
        self._derived = 0
        # Every answer of data_class_of the view depends on, to check before reading on.
        self._asked: dict[str, DataClass | None] = {}

    def view(self, messages: Sequence[ChatMessage]) -> ZoneView:
        """The zone's view of ``messages`` (see the class)."""
        read = self._read
        if (
            len(messages) < len(read)
            or not all(map(operator.is_, messages, read))
            or any(self._data_class_of(name) != known for name, known in self._asked.items())
        ):
            self._reset()
            read = self._read
        for index in range(len(read), len(messages)):
            message = messages[index]
            self._add(index, message)
            read.append(message)
        return ZoneView(
            zone=self.zone,
            messages=tuple(self._view),
            withheld_outputs=self._withheld,
            derived=self._derived,
        )

    def _class_of(self, name: str) -> DataClass | None:
        data_class = self._asked[name] = self._data_class_of(name)
        return data_class

    def _add(self, index: int, message: ChatMessage) -> None:
        zone = self.zone
        view = self._view
        if message.role is Role.ASSISTANT:
            replace = self._withheld > 0 and (self._own_from is None or index < self._own_from)
            sent = (
                _replaced_turn(message, zone, self._class_of, self._host_ids)
                if replace
                else message
            )
            for model_call, sent_call in zip(message.tool_calls, sent.tool_calls, strict=True):
                entry = _Origin(model_call.name, replace, sent_call.id)
                self._open_calls.setdefault(model_call.id, []).append(entry)
                if replace:
                    self._replaced_ids.add(model_call.id)
            view.append(sent)
            self._derived += replace
            return
        if message.role is not Role.TOOL:
            view.append(message)  # system and user messages are the host's and the user's
            return
        call_id = message.tool_call_id or ""
        pending = self._open_calls.pop(call_id, [])
        if len(pending) > 1:  # two unanswered calls share this id: which one is unknowable
            self._open_calls[call_id] = pending[1:]
        origin = pending[0] if len(pending) == 1 else None
        if origin is not None and origin.derived:
            view.append(ChatMessage.tool_result(origin.wire_id, _derived_output(zone)))
            self._derived += 1
            return
        if origin is not None and _says_not_run(message.content, origin.name):
            view.append(message)
            return
        data_class = None if origin is None else self._class_of(origin.name)
        if (data_class or _STRICTEST).rank <= zone.ceiling.rank:
            view.append(message)
            return
        if origin is not None:
            wire_id = origin.wire_id
        elif call_id in self._replaced_ids:  # the id itself was written after withheld output
            wire_id = f"withheld_call_{next(self._host_ids)}"
        else:
            wire_id = call_id
        if origin is None or data_class is None:
            replacement = _unattributed(zone)
        else:
            replacement = _over_ceiling(origin.name, data_class, zone)
        view.append(ChatMessage.tool_result(wire_id, replacement))
        self._withheld += 1


def _replaced_turn(
    message: ChatMessage, zone: TrustZone, data_class_of: DataClassOf, host_ids: Iterator[int]
) -> ChatMessage:
    """An assistant turn written after withheld output, with every byte the model wrote
    replaced: its text by a host sentence, each call's id by a host id, its arguments by
    ``{}`` and, unless it names an installed tool, its name by :data:`WITHHELD_TOOL_NAME`."""
    calls = [
        ToolCall(
            id=f"withheld_call_{next(host_ids)}",
            name=call.name if data_class_of(call.name) is not None else WITHHELD_TOOL_NAME,
        )
        for call in message.tool_calls
    ]
    # No text stays no text (a tool-calls-only turn; the Anthropic wire refuses empty text).
    text = _derived_turn(zone) if message.content else message.content
    return ChatMessage(role=Role.ASSISTANT, content=text, tool_calls=calls)
