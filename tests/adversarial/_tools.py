"""Hostile tools for the adversarial tests, and a record of plugin code the host ran."""

from __future__ import annotations

import re
from typing import Any

from nr_llm_core import ToolHost, ToolResult, ToolSpec, hookimpl

#: What plugin code ran: each recording method appends ``Class.method`` here. A test clears it
#: after building its values and before handing them to the host.
CALLED: list[str] = []


class Returns:
    """A tool that returns the value it was built with, whatever that is."""

    def __init__(self, value: object, name: str = "returns") -> None:
        self.value = value
        self.name = name

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(self.name, "Returns what the test hands it.", data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> Any:
        return self.value


def invoke_returning(value: object) -> ToolResult:
    """What ``ToolHost.invoke`` makes of a tool that returns ``value``."""
    host = ToolHost()
    host.register(Returns(value))
    return host.invoke("returns", {})


def invalid_result(name: str = "returns") -> str:
    return f'Error: tool "{name}" returned an invalid result.'


#: Terminal controls of every kind: ANSI, bidi override, NUL, C1 (with the 8-bit CSI), zero-width.
HOSTILE = "ansi\x1b[2J rlo\u202e nul\x00 c1\x85\x9b zw\u200b bell\x07"
#: :data:`HOSTILE` as the CLI must show it.
SHOWN = r"ansi\x1b[2J rlo\u202e nul\x00 c1\x85\x9b zw\u200b bell\x07"
#: Any raw control, C1, bidi or zero-width character reaching the terminal is a failure.
RAW_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")
