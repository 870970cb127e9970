"""A greeting tool: the smallest complete nr-llm tool package, and the template to copy."""

from __future__ import annotations

from typing import Annotated

from nr_llm_core import Artifact, ToolResult, tool

__all__ = ["hello"]


@tool(group="utility", data_class="public")
def hello(name: Annotated[str, "Who to greet."]) -> ToolResult:
    """Greet a person by name."""
    greeting = f"Hello, {name}!"
    # The content is what the model reads; the table is for people and the audit copy only.
    return ToolResult.text(
        greeting,
        Artifact.table("greeting", ["name", "greeting"], [[name, greeting]]),
    )
