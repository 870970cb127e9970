"""A greeting tool: the smallest complete nr-llm tool package."""

from __future__ import annotations

from typing import Any

from nr_llm_core import Artifact, DataClass, ToolResult, ToolSpec, hookimpl

__all__ = ["Hello"]


class Hello:
    """Greets someone, and leaves a small table of the greeting behind as an artifact."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(
            name="hello",
            description="Greet a person by name.",
            parameters={
                "type": "object",
                "properties": {"name": {"type": "string", "description": "Who to greet."}},
                "required": ["name"],
                "additionalProperties": False,
            },
            group="utility",
            data_class=DataClass.PUBLIC,
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        name = arguments["name"]
        greeting = f"Hello, {name}!"
        return ToolResult.text(
            greeting,
            Artifact.table("greeting", ["name", "greeting"], [[name, greeting]]),
        )
