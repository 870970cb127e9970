"""Hostile tools for the adversarial tests, and a record of plugin code the host ran."""

from __future__ import annotations

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
