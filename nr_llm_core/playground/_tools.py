"""The tool runner's data: tools grouped for the picker, example arguments from a schema, and
one tool call through the seam shown the three ways the framework sees it."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Final

from nr_llm_core.encoding import EncodeError, json_copy
from nr_llm_core.host import ToolHost
from nr_llm_core.playground._store import persisted_record
from nr_llm_core.results import ToolSpec
from nr_llm_core.trace import RunStep, ToolInvocation

__all__ = ["UNGROUPED", "example_arguments", "grouped_tools", "invoke_tool"]

#: The group name shown for tools that declare none.
UNGROUPED: Final = "other"
_MAX_EXAMPLE_DEPTH: Final = 4
_BLANK: Final[Mapping[str, Any]] = {
    "string": "",
    "integer": 0,
    "number": 0,
    "boolean": False,
    "array": [],
    "null": None,
}


def example_arguments(schema: Mapping[str, Any], depth: int = 0) -> Any:
    """An example value for ``schema``: its default, first example, first enum value or
    const, else a blank of its type (numbers at their minimum); an object gets its required
    properties and those with a default, example or enum (for editing)."""
    if not isinstance(schema, Mapping):
        return None
    for key in ("default", "const"):
        if key in schema:
            return schema[key]
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return examples[0]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and "properties" in schema):
        props = schema.get("properties")
        if depth >= _MAX_EXAMPLE_DEPTH or not isinstance(props, Mapping):
            return {}
        required = schema.get("required")
        needed = set(required) if isinstance(required, list) else set()
        return {
            str(name): example_arguments(sub, depth + 1)
            for name, sub in props.items()
            if isinstance(sub, Mapping)
            and (name in needed or any(k in sub for k in ("default", "examples", "enum", "const")))
        }
    if kind in ("integer", "number") and isinstance(schema.get("minimum"), int | float):
        return schema["minimum"]
    if isinstance(kind, str):
        return _BLANK.get(kind)
    return None


def _tool_entry(host: ToolHost, spec: ToolSpec) -> dict[str, Any]:
    return {
        **spec.to_dict(),
        "enabled": host.is_enabled(spec.name),
        "example": example_arguments(spec.parameters),
    }


def grouped_tools(host: ToolHost) -> list[dict[str, Any]]:
    """``[{"group", "tools": [spec dict + enabled + example]}]``, groups and tools sorted."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for spec in host.specs():
        groups.setdefault(spec.group or UNGROUPED, []).append(_tool_entry(host, spec))
    return [{"group": name, "tools": groups[name]} for name in sorted(groups)]


def invoke_tool(
    host: ToolHost, name: str, arguments: Any, *, level: str, timeout: float | None
) -> dict[str, Any]:
    """Run one call through :meth:`ToolHost.invoke_traced` (enabled tools only) and return the
    content the model would receive, the artifacts, and the step as the audit store would
    keep it at ``level``."""
    try:
        given = json_copy(arguments)  # the tool's own: what it writes there is not recorded
    except EncodeError:  # not from a JSON body; invoke() answers it as invalid arguments
        given = None
    started = time.perf_counter()
    result, failure = host.invoke_traced(name, given, timeout=timeout)
    elapsed = (time.perf_counter() - started) * 1000
    invocation = ToolInvocation(
        name=name, arguments=arguments, result=result, call_id=None, failure=failure
    )
    step = RunStep.tool(round=0, duration_ms=elapsed, invocation=invocation).to_dict()
    return {
        "tool": name,
        "content": result.content,
        "is_error": result.is_error,
        "artifacts": [a.to_dict() for a in result.artifacts],
        "duration_ms": step["duration_ms"],
        "privacy": level,
        "persisted": persisted_record(step, level),
    }
