"""The tools and budgets of the soak tests.

Budgets are read when the module is imported (the autouse fixture strips ``NR_LLM_*`` from the
environment of each test, not of the collection). CI runs the small defaults; the full soak:

    NR_LLM_SOAK_SECONDS=60 NR_LLM_SOAK_INVOCATIONS=1000000 .venv/bin/pytest -q tests/soak
"""

from __future__ import annotations

import os
from typing import Any, Final

from nr_llm_core import Artifact, ArtifactType, ToolHost, ToolResult, ToolSpec, hookimpl

#: Seconds the threaded soak runs (default 3; the issue's full run is 60).
SOAK_SECONDS: Final = float(os.environ.get("NR_LLM_SOAK_SECONDS", "3"))
#: Invocations between the two memory snapshots (default 50,000; the full run is 1,000,000).
SOAK_INVOCATIONS: Final = int(os.environ.get("NR_LLM_SOAK_INVOCATIONS", "50000"))

OK_RESULT = ToolResult.text("ok")
BIG_TEXT = "x" * 60_000  # over the 50,000-byte artifact budget


class Trivial:
    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(
            "trivial",
            "Returns a constant.",
            {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return OK_RESULT


class Table:
    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(
            "table",
            "A small table built per call.",
            {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        n = arguments["n"]
        rows = [[str(n), f"row {i}", "é\ud800"] for i in range(8)]  # a lone surrogate to coerce
        return ToolResult.text(f"table {n}", Artifact.table("t", ["n", "label", "text"], rows))


class Refuses:
    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("refuses", "Answers with an error result.")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.error("no")


class Oversized:
    """Artifacts the walk refuses: over the byte budget, or not encodable (NaN)."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("oversized", "Returns artifacts the host must replace with the marker.")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        if arguments.get("nan"):
            return ToolResult.text("nan", Artifact(ArtifactType.TABLE, "t", {"n": float("nan")}))
        return ToolResult.text("big", Artifact.text("t", BIG_TEXT))


def soak_host() -> ToolHost:
    host = ToolHost()
    for plugin in (Trivial(), Table(), Refuses(), Oversized()):
        host.register(plugin)
    return host
