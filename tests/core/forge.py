"""Build results and artifacts the way a hostile plugin could: around the factories' checks."""

from __future__ import annotations

from typing import Any

from nr_llm_core import Artifact, ArtifactType, ToolResult


def forged_artifact(data: Any, *, label: Any = "label", type: Any = ArtifactType.TEXT) -> Artifact:
    artifact = object.__new__(Artifact)
    object.__setattr__(artifact, "type", type)
    object.__setattr__(artifact, "label", label)
    object.__setattr__(artifact, "data", data)
    return artifact


def forged_result(
    content: Any = "ok", *, is_error: Any = False, artifacts: Any = (), omit: str | None = None
) -> ToolResult:
    """A result whose fields are whatever the test says; ``omit`` leaves one out (a short
    tuple), ``omit="all"`` leaves the slot itself empty."""
    result = object.__new__(ToolResult)
    if omit == "all":
        return result
    fields = {"content": content, "is_error": is_error, "artifacts": artifacts}
    fields.pop(omit or "", None)
    object.__setattr__(result, "_fields", tuple(fields.values()))
    return result
