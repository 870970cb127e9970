"""The seam's rows: ``invoke()`` of a plugin-class tool and of an ``@tool`` function against one
bare ``pm.hook.execute()``, and bounding a mixed-type table against C ``json.dumps``.

The candidates' tools do real work: they read their validated ``n`` and build their own result.
The baseline is pluggy's dispatch alone: one ``pm.hook.execute()`` call of a manager with one
implementation that returns a prebuilt result. Nothing is subtracted: a ratio is one whole call
against one whole call. (The same tool called through the hook, result build included, is
shown beside it.)
"""

from __future__ import annotations

import json
from typing import Any

import pluggy
from _timing import interleaved

from nr_llm_core import Artifact, ToolHost, ToolResult, ToolSpec, hookimpl, tool
from nr_llm_core.bounding import bound_result
from nr_llm_core.hooks import PROJECT_NAME, ToolHookSpec
from nr_llm_core.results import ArtifactType

__all__ = ["bounding_row", "invoke_rows", "mixed_table"]

_SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
    "additionalProperties": False,
}


class Square:
    """A plugin class with one validated int argument that builds its own result."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("square", "The square of n.", _SCHEMA)

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        n = arguments["n"]
        return ToolResult.text(str(n * n))


class Prebuilt:
    """The baseline's one implementation: pluggy's dispatch and nothing else."""

    result = ToolResult.text("49")

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("square", "The square of n.", _SCHEMA)

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return self.result


def _bare_hook(plugin: object) -> Any:
    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(ToolHookSpec)
    pm.register(plugin)
    return pm.hook.execute


@tool(name="square")
def square(n: int) -> str:
    """The square of n."""
    return str(n * n)


def invoke_rows(number: int, rounds: int) -> list[dict[str, Any]]:
    """Rows 1 and 2: both tools through ``invoke()``, one bare hook call, interleaved."""
    plugin_host = ToolHost()
    plugin_host.register(Square())
    function_host = ToolHost()
    function_host.register(square)
    hook = _bare_hook(Prebuilt())
    same_tool = _bare_hook(Square())
    args = {"n": 7}
    expected = ToolResult.text("49")
    assert plugin_host.invoke("square", args) == expected
    assert function_host.invoke("square", args) == expected
    assert hook(arguments=args, context=None) == [expected]
    assert same_tool(arguments=args, context=None) == [expected]
    best = interleaved(
        {
            "hook": lambda: hook(arguments=args, context=None),
            "same_tool": lambda: same_tool(arguments=args, context=None),
            "plugin": lambda: plugin_host.invoke("square", args),
            "function": lambda: function_host.invoke("square", args),
        },
        number=number,
        rounds=rounds,
    )
    return [
        {
            "row": "invoke",
            "candidate": best["plugin"],
            "baseline": best["hook"],
            "ratio": best["plugin"] / best["hook"],
            "note": f"against the same tool through the hook: "
            f"{best['plugin'] / best['same_tool']:.2f}x",
        },
        {
            "row": "tool",
            "candidate": best["function"],
            "baseline": best["hook"],
            "ratio": best["function"] / best["hook"],
            "note": f"against the same tool through the hook: "
            f"{best['function'] / best['same_tool']:.2f}x",
        },
    ]


def mixed_table(target_bytes: int = 42_000) -> Artifact:
    """A TABLE artifact of about ``target_bytes`` encoded, with no string cells: ints, floats,
    bools, null and a nested object (ints, floats, bools and a short list) in every row."""
    columns = ["id", "price", "ratio", "active", "stock", "detail", "flags", "note"]
    rows: list[list[Any]] = []
    size = 0
    i = 0
    while size < target_bytes:
        row = [
            i,
            round(i * 1.37 + 0.01, 2),
            i / 7,
            i % 3 == 0,
            (i * 7919) % 10_007,
            {"rank": i % 50, "weight": i * 0.25, "ok": i % 2 == 0, "dims": [i % 9, 3, 4.5]},
            [i % 2 == 0, i % 5 == 0],
            None if i % 4 else -i,
        ]
        rows.append(row)
        size += len(json.dumps(row, separators=(",", ":"))) + 1
        i += 1
    return Artifact(ArtifactType.TABLE, "bench", {"columns": columns, "rows": rows})


def bounding_row(number: int, rounds: int) -> dict[str, Any]:
    """Row 3: ``bound_result`` of a result with the mixed table against one C ``json.dumps``
    of the same list of artifact objects, with the sinks' settings."""
    artifact = mixed_table()
    listed = [artifact.to_dict()]
    result = ToolResult.text("a table", artifact)
    encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    assert json.encoder.c_make_encoder is not None  # the C encoder is the baseline
    size = len(encoder.encode(listed).encode())
    bounded = bound_result(result)
    assert bounded is not None
    assert bounded.artifacts[0].label == "bench"  # not refused
    best = interleaved(
        {"dumps": lambda: encoder.encode(listed), "bound": lambda: bound_result(result)},
        number=number,
        rounds=rounds,
    )
    return {
        "row": "bounding",
        "candidate": best["bound"],
        "baseline": best["dumps"],
        "ratio": best["bound"] / best["dumps"],
        "bytes": size,
        "cells": sum(len(r) for r in artifact.data["rows"]),
    }
