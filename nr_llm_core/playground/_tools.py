"""The tool runner's data: tools grouped for the picker (with what each provider is offered),
example arguments from a schema, and one tool call through the seam shown the three ways the
framework sees it."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from nr_llm_core.encoding import EncodeError, json_copy
from nr_llm_core.host import ToolHost
from nr_llm_core.offers import OfferDecision, offer_decisions, trust_zone, zones_for
from nr_llm_core.playground._store import persisted_record
from nr_llm_core.providers.base import TrustZone
from nr_llm_core.results import ToolResult, ToolSpec
from nr_llm_core.trace import RunStep, ToolInvocation

__all__ = [
    "UNGROUPED",
    "call_tool",
    "example_arguments",
    "grouped_tools",
    "invoke_tool",
    "provider_zones",
    "shown_call",
]

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


def _tool_entry(
    host: ToolHost, spec: ToolSpec, offers: Mapping[str, Mapping[str, OfferDecision]]
) -> dict[str, Any]:
    return {
        **spec.to_dict(),
        "enabled": host.is_enabled(spec.name),
        "example": example_arguments(spec.parameters),
        "effective_data_class": spec.effective_data_class.value,
        "offered_to": [zone.value for zone in zones_for(spec)],
        "offers": {
            provider: decisions[spec.name].to_dict() for provider, decisions in offers.items()
        },
    }


def grouped_tools(
    host: ToolHost, zones: Mapping[str, TrustZone] | None = None
) -> list[dict[str, Any]]:
    """``[{"group", "tools": [spec dict + enabled + example + offers]}]``, groups and tools
    sorted. ``offers`` maps each provider of ``zones`` (provider name → its trust zone) to
    the tool's :class:`~nr_llm_core.offers.OfferDecision` for a run that names no tools:
    whether that provider is offered it and, when not, why and the fix."""
    offers = {
        provider: {d.name: d for d in offer_decisions(host, zone)}
        for provider, zone in (zones or {}).items()
    }
    groups: dict[str, list[dict[str, Any]]] = {}
    for spec in host.specs():
        groups.setdefault(spec.group or UNGROUPED, []).append(_tool_entry(host, spec, offers))
    return [{"group": name, "tools": groups[name]} for name in sorted(groups)]


def provider_zones(providers: Mapping[str, Callable[[], object]]) -> dict[str, TrustZone]:
    """The trust zone of each configured provider, read from one provider its factory makes
    (and closes). A factory that fails counts as ``external``, the strictest: its runs fail
    at the start anyway, and no tool is shown as offered that would not be."""
    zones: dict[str, TrustZone] = {}
    for name, factory in providers.items():
        try:
            provider = factory()
        except Exception:  # misconfigured: say the least
            zones[name] = TrustZone.EXTERNAL
            continue
        zones[name] = trust_zone(provider)
        close = getattr(provider, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):
                close()
    return zones


def call_tool(
    host: ToolHost, name: str, arguments: Any, *, timeout: float | None
) -> tuple[ToolResult, RunStep]:
    """Run one call through :meth:`ToolHost.invoke_traced` (enabled tools only): its bounded
    result and its step, as a run records a tool call (round 0, no call id)."""
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
    return result, RunStep.tool(round=0, duration_ms=elapsed, invocation=invocation)


def shown_call(name: str, result: ToolResult, step: RunStep, *, level: str) -> dict[str, Any]:
    """What the tool runner shows of a call: the content the model would receive, the
    artifacts, and the step as the audit store keeps it at ``level``."""
    record = step.to_dict()
    return {
        "tool": name,
        "content": result.content,
        "is_error": result.is_error,
        "artifacts": [a.to_dict() for a in result.artifacts],
        "duration_ms": record["duration_ms"],
        "privacy": level,
        "persisted": persisted_record(record, level),
    }


def invoke_tool(
    host: ToolHost, name: str, arguments: Any, *, level: str, timeout: float | None
) -> dict[str, Any]:
    """One unrecorded call (:func:`call_tool`), as the tool runner shows it
    (:func:`shown_call`). Only for a tool that needs no approval: one that does is run by
    :func:`~nr_llm_core.playground._approved.recorded_call`, which records it."""
    result, step = call_tool(host, name, arguments, timeout=timeout)
    return shown_call(name, result, step, level=level)
