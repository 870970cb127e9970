"""A playground for issue 15's newcomer tests: the README's undeclared tool beside declared
ones, a local scripted provider, an external one, and an OpenAI-compatible provider on a
loopback wire server (which can fail a run with a real HTTP error)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nr_llm_core import ToolHost, ToolResult, ToolSpec, hookimpl
from nr_llm_core.playground import PlaygroundServer
from nr_llm_core.providers import OpenAIChatProvider, ScriptedProvider

from ._fixtures import start_server

PROMPT = "How many lamps are in stock? PROMPT-CANARY-71c2"
MODEL = "llama3-newcomer"


def _tool(name: str, **meta: Any) -> object:
    class Tool:
        @hookimpl
        def tool_spec(self) -> ToolSpec:
            return ToolSpec(name, f"The {name} tool.", **meta)

        @hookimpl
        def execute(self, arguments: dict[str, Any]) -> ToolResult:
            return ToolResult.text(f"{name}: 42 in stock")

    return Tool()


def make_host() -> ToolHost:
    host = ToolHost()
    host.register(_tool("inventory"))  # the README's first tool without a data class
    host.register(_tool("forecast", data_class="public"))
    host.register(_tool("payroll", data_class="internal"))
    host.register(_tool("writer", data_class="public", enabled_by_default=False))
    return host


LOCAL_TURNS = [
    {"content": "Counting.", "tool_calls": [{"name": "inventory", "arguments": {}}]},
    "There are 42.",
]


def start(db: Path, wire_url: str) -> PlaygroundServer:
    """The playground on 127.0.0.1 with providers ``local``, ``external`` and ``openai``."""
    return start_server(
        db,
        host=make_host(),
        providers={
            "local": lambda: ScriptedProvider(LOCAL_TURNS),
            "external": lambda: ScriptedProvider(["No tools."], trust_zone="external"),
            "openai": lambda: OpenAIChatProvider(wire_url, MODEL, api_key="sk-newcomer"),
        },
    )
