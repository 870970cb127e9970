"""The conversation a provider sees: :class:`ChatMessage` and the :class:`ToolCall` it carries.

A message holds a role, one content string, the assistant's tool calls, and the id a tool
message answers. It has no field an artifact could ride in: tool output enters a conversation
only through :meth:`ChatMessage.tool_result`, which takes a ``str`` and nothing else. Nothing in
this module knows about providers, pluggy or storage.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any, Final, final

import attrs

__all__ = ["ChatMessage", "Role", "ToolCall"]

#: An id longer than this is not kept from a provider (see ``providers._parse``).
MAX_CALL_ID_CHARS: Final = 200


class Role(enum.StrEnum):
    """Who speaks a message."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


def _plain_dict(value: Any) -> dict[str, Any]:
    if type(value) is not dict:
        raise TypeError(f"arguments must be a dict, not {type(value).__name__}")
    return dict(value)


def _str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    return str.__str__(value)  # a str subclass is read as a plain str; no override runs


def _id_str(value: object) -> str:
    return _str(value, "id")


def _name_str(value: object) -> str:
    return _str(value, "name")


@final
@attrs.frozen(kw_only=True)
class ToolCall:
    """One tool call the model asked for: its id, the tool's name, the decoded arguments.

    ``arguments_error`` is set (host words) when the provider sent arguments that could not be
    decoded into a JSON object; ``arguments`` is then ``{}`` and the loop answers the call with
    an invalid-arguments error instead of running it.
    """

    id: str = attrs.field(converter=_id_str)
    name: str = attrs.field(converter=_name_str)
    arguments: dict[str, Any] = attrs.field(factory=dict, converter=_plain_dict)
    arguments_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values: ``id``, ``name``, ``arguments`` and ``arguments_error`` if set."""
        out: dict[str, Any] = {"id": self.id, "name": self.name, "arguments": self.arguments}
        if self.arguments_error is not None:
            out["arguments_error"] = self.arguments_error
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        """The inverse of :meth:`to_dict` (``TypeError``/``KeyError`` on a malformed record)."""
        error = data.get("arguments_error")
        return cls(
            id=data["id"],
            name=data["name"],
            arguments=data.get("arguments", {}),
            arguments_error=None if error is None else _str(error, "arguments_error"),
        )


@final
@attrs.frozen(kw_only=True, init=False)
class ChatMessage:
    """One message of a conversation.

    Build one with :meth:`system`, :meth:`user`, :meth:`assistant`, :meth:`assistant_tool_calls`
    or :meth:`tool_result`. ``ChatMessage(role=..., content=...)`` works for system, user and
    assistant messages; a tool message can only come from :meth:`tool_result`.
    """

    role: Role
    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None

    def __init__(
        self,
        *,
        role: Role | str,
        content: str | None,
        tool_calls: Iterable[ToolCall] = (),
        tool_call_id: str | None = None,
    ) -> None:
        role = Role(role)
        if role is Role.TOOL:
            raise TypeError("a tool message is built only by ChatMessage.tool_result(id, content)")
        if tool_call_id is not None:
            raise TypeError("only a tool message answers a tool call id")
        calls = tuple(tool_calls)
        if calls and role is not Role.ASSISTANT:
            raise TypeError("only an assistant message carries tool calls")
        for call in calls:
            if type(call) is not ToolCall:
                raise TypeError(f"tool calls must be ToolCall values, not {type(call).__name__}")
        if content is None:
            if not calls:
                raise TypeError(f"a {role.value} message needs content")
        else:
            content = _str(content, "content")
        self.__attrs_init__(role=role, content=content, tool_calls=calls, tool_call_id=None)

    @classmethod
    def system(cls, content: str) -> ChatMessage:
        """A system (instructions) message."""
        return cls(role=Role.SYSTEM, content=content)

    @classmethod
    def user(cls, content: str) -> ChatMessage:
        """A user message."""
        return cls(role=Role.USER, content=content)

    @classmethod
    def assistant(cls, text: str) -> ChatMessage:
        """An assistant message with text only."""
        return cls(role=Role.ASSISTANT, content=text)

    @classmethod
    def assistant_tool_calls(
        cls, calls: Iterable[ToolCall], text: str | None = None
    ) -> ChatMessage:
        """An assistant message asking for ``calls`` (at least one), with optional text."""
        calls = tuple(calls)
        if not calls:
            raise ValueError("assistant_tool_calls needs at least one ToolCall")
        return cls(role=Role.ASSISTANT, content=text, tool_calls=calls)

    @classmethod
    def tool_result(cls, tool_call_id: str, content: str) -> ChatMessage:
        """The answer to one tool call. ``content`` must be a ``str``: pass a result's
        ``content``, never the result (a ``ToolResult`` or anything else is a ``TypeError``)."""
        if not isinstance(content, str):
            raise TypeError(
                f"tool_result takes the content string, not {type(content).__name__}"
                " (pass result.content)"
            )
        call_id = _str(tool_call_id, "tool_call_id")
        self = object.__new__(cls)
        self.__attrs_init__(
            role=Role.TOOL, content=str.__str__(content), tool_calls=(), tool_call_id=call_id
        )
        return self

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values for storage; keys ``role``, ``content`` and, when set,
        ``tool_calls`` and ``tool_call_id``."""
        out: dict[str, Any] = {"role": self.role.value, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChatMessage:
        """The inverse of :meth:`to_dict`; raises ``TypeError``/``ValueError``/``KeyError`` on
        a malformed record."""
        if not isinstance(data, Mapping):
            raise TypeError(f"a message record must be a mapping, not {type(data).__name__}")
        role = Role(data["role"])
        if role is Role.TOOL:
            return cls.tool_result(data["tool_call_id"], data["content"])
        raw_calls = data.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise TypeError("tool_calls must be a list")
        return cls(
            role=role,
            content=data.get("content"),
            tool_calls=[ToolCall.from_dict(c) for c in raw_calls],
        )
