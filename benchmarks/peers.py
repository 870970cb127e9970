"""Peer benchmarks: the same tools through nr-llm, LangChain, pydantic-ai and a bare call.

Run (one command; the peers are optional, a missing one is reported and skipped):

    pip install -e '.[peers]'
    python benchmarks/peers.py            # add --quick for a short run

Two tools, identical in every framework: ``trivial`` (one string argument, returns ``"ok"``)
and ``table`` (returns a short content string plus a ~50 KB table of 8 string columns as the
artifact). Each framework is driven the way its agent loop drives a tool call:

- nr-llm: ``ToolHost.invoke(name, arguments)``: schema validation, the call, and bounding of
  both channels (the walk, which copies the artifacts and counts their encoded size exactly;
  bounding encodes nothing, a sink encodes once when it writes);
- LangChain: ``StructuredTool.invoke(tool_call)`` with ``response_format="content_and_artifact"``
  (argument validation through the pydantic model, a ``ToolMessage`` carrying the artifact);
- pydantic-ai: the tool's function schema, as its agent graph runs it: ``validator``
  ``.validate_python(arguments)`` then ``await function_schema.call(...)`` on one event loop,
  the artifact returned as ``ToolReturn(metadata=...)`` (the model-free part of a run: a whole
  ``Agent.run`` with ``TestModel`` measures the agent graph, not the tool path);
- a bare Python function call, the floor.

Timings are interleaved (each round runs every candidate, the best round counts), so a burst of
load on a noisy machine falls on every candidate alike. Then bounding is set against the
serialisation the peers do of the same result, unbounded: ``json.dumps``, LangChain's
``dumps(ToolMessage)`` and ``model_dump_json()``, pydantic-ai's ``ModelMessagesTypeAdapter``.
``model_dump_json()`` is pydantic-core's Rust serialiser; a pure-Python walk that checks every
cell's type and length does not reach it (see docs/adr/0007-bounding-measures-without-encoding.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import timeit
from collections.abc import Callable
from typing import Any

from nr_llm_core import Artifact, ToolHost, ToolResult, ToolSpec, hookimpl
from nr_llm_core.bounding import bound_result

COLUMNS = [f"column_{i}" for i in range(8)]


def make_rows(target_bytes: int = 50_000) -> list[list[str]]:
    """Rows of 8 string cells whose JSON encoding is just under ``target_bytes``."""
    rows: list[list[str]] = []
    size = len(json.dumps({"columns": COLUMNS, "rows": []})) + 60
    while True:
        new = [f"r{len(rows)}c{i} value" for i in range(8)]
        size += len(json.dumps(new, separators=(",", ":"))) + 1
        if size > target_bytes - 2_000:
            return rows
        rows.append(new)


ROWS = make_rows()
TABLE = {"columns": COLUMNS, "rows": ROWS}
TABLE_ARTIFACT = Artifact.table("rows", COLUMNS, ROWS)
OK = ToolResult.text("ok")
TABLE_CONTENT = f"{len(ROWS)} rows"
TRIVIAL_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
}
ARGS = {"text": "hello"}


# -- nr-llm ---------------------------------------------------------------------------------


class Trivial:
    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("trivial", "Returns a constant.", TRIVIAL_SCHEMA)

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return OK


class Table:
    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("table", "Returns a 50 KB table.", TRIVIAL_SCHEMA)

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.text(TABLE_CONTENT, TABLE_ARTIFACT)


def nr_llm_candidates() -> dict[str, Callable[[], object]]:
    host = ToolHost()
    host.register(Trivial())
    host.register(Table())
    table = host.invoke("table", ARGS)
    assert table.artifacts[0].data["rows"] == ROWS, "the table was not kept whole"
    return {
        "trivial": lambda: host.invoke("trivial", ARGS),
        "table": lambda: host.invoke("table", ARGS),
    }


# -- plain functions (the floor, and the peers' tool bodies) --------------------------------


def trivial(text: str) -> tuple[str, None]:
    """Returns a constant."""
    return "ok", None


def table(text: str) -> tuple[str, dict[str, Any]]:
    """Returns a 50 KB table."""
    return TABLE_CONTENT, TABLE


def bare_candidates() -> dict[str, Callable[[], object]]:
    return {"trivial": lambda: trivial(**ARGS), "table": lambda: table(**ARGS)}


# -- LangChain ------------------------------------------------------------------------------


def langchain_candidates() -> dict[str, Callable[[], object]]:
    from langchain_core.tools import StructuredTool

    tools = {
        fn.__name__: StructuredTool.from_function(
            func=fn, name=fn.__name__, response_format="content_and_artifact"
        )
        for fn in (trivial, table)
    }

    def call(name: str) -> Callable[[], object]:
        tool = tools[name]
        call = {"name": name, "args": ARGS, "id": "call_1", "type": "tool_call"}
        return lambda: tool.invoke(call)

    message: Any = tools["table"].invoke(
        {"name": "table", "args": ARGS, "id": "call_1", "type": "tool_call"}
    )
    assert message.artifact is TABLE
    return {"trivial": call("trivial"), "table": call("table")}


# -- pydantic-ai ----------------------------------------------------------------------------


def pydantic_ai_candidates() -> dict[str, Callable[[], object]]:
    from pydantic_ai import Tool, ToolReturn

    def trivial_pa(text: str) -> str:
        """Returns a constant."""
        return "ok"

    def table_pa(text: str) -> Any:  # a ToolReturn (a local name is no annotation here)
        """Returns a 50 KB table."""
        return ToolReturn(return_value=TABLE_CONTENT, metadata=TABLE)

    loop = asyncio.new_event_loop()

    def call(fn: Callable[..., Any]) -> Callable[[], object]:
        schema = Tool(fn, takes_ctx=False).function_schema

        def run() -> object:
            validated = schema.validator.validate_python(ARGS)
            return loop.run_until_complete(schema.call(validated, None))  # type: ignore[arg-type]

        return run

    result: Any = call(table_pa)()
    assert result.metadata is TABLE
    return {"trivial": call(trivial_pa), "table": call(table_pa)}


# -- serialisation of the same result -------------------------------------------------------


def serialisation_candidates() -> dict[str, Callable[[], object]]:
    result = ToolResult.text(TABLE_CONTENT, TABLE_ARTIFACT)
    listed = [TABLE_ARTIFACT.to_dict()]
    out: dict[str, Callable[[], object]] = {
        "nr-llm bound_result() (walk + exact size + cap)": lambda: bound_result(result),
        "json.dumps(artifact list)": lambda: json.dumps(listed),
    }
    try:
        from langchain_core.load import dumps
        from langchain_core.messages import ToolMessage
    except ImportError:
        pass
    else:
        message = ToolMessage(content=TABLE_CONTENT, artifact=TABLE, tool_call_id="call_1")
        out["LangChain dumps(ToolMessage)"] = lambda: dumps(message)
        out["LangChain ToolMessage.model_dump_json()"] = message.model_dump_json
    try:
        from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelRequest, ToolReturnPart
    except ImportError:
        pass
    else:
        part = ToolReturnPart(
            tool_name="table", content=TABLE_CONTENT, tool_call_id="call_1", metadata=TABLE
        )
        messages = [ModelRequest(parts=[part])]
        out["pydantic-ai ModelMessagesTypeAdapter.dump_json()"] = lambda: (
            ModelMessagesTypeAdapter.dump_json(messages)
        )
    return out


# -- measuring ------------------------------------------------------------------------------


def interleaved(fns: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Best seconds per call of each function, measured in alternation."""
    timers = {name: timeit.Timer(fn) for name, fn in fns.items()}
    numbers = {}
    for name, timer in timers.items():  # size each batch to ~20 ms
        n, _ = timer.autorange()
        numbers[name] = max(1, n // 10)
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, timer in timers.items():
            best[name] = min(best[name], timer.timeit(numbers[name]) / numbers[name])
    return best


def micros(seconds: float) -> str:
    return f"{seconds * 1e6:>10.2f} µs"


def main() -> int:
    parser = argparse.ArgumentParser(description="nr-llm against its peers.")
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    rounds = 5 if parser.parse_args().quick else 25
    print(f"peer benchmarks (Python {sys.version.split()[0]}), best of {rounds} rounds")
    print(f"table tool: {len(ROWS)} rows x 8 columns, {len(json.dumps(TABLE)):,} bytes of JSON\n")

    frameworks: dict[str, dict[str, Callable[[], object]]] = {
        "bare function call": bare_candidates(),
        "nr-llm ToolHost.invoke()": nr_llm_candidates(),
    }
    for label, make, package in (
        ("LangChain StructuredTool.invoke()", langchain_candidates, "langchain-core"),
        ("pydantic-ai function schema", pydantic_ai_candidates, "pydantic-ai-slim"),
    ):
        try:
            frameworks[label] = make()
        except ImportError as exc:
            print(f"!! {package} is not installed ({exc.name}): {label} skipped.")
            print("   pip install -e '.[peers]' to include it.\n")

    candidates = {
        (framework, tool): fn for framework, fns in frameworks.items() for tool, fn in fns.items()
    }
    timed = interleaved({f"{k[0]}|{k[1]}": v for k, v in candidates.items()}, rounds)
    nr_trivial = timed["nr-llm ToolHost.invoke()|trivial"]
    nr_table = timed["nr-llm ToolHost.invoke()|table"]
    heads = ("trivial tool", "x nr-llm", "50 KB table", "x nr-llm")
    print(f"{'framework':<36} {heads[0]:>13} {heads[1]:>9} {heads[2]:>13} {heads[3]:>9}")
    for framework in frameworks:
        t_triv, t_tab = timed[f"{framework}|trivial"], timed[f"{framework}|table"]
        print(
            f"{framework:<36} {micros(t_triv)} {t_triv / nr_trivial:>8.2f}x"
            f" {micros(t_tab)} {t_tab / nr_table:>8.2f}x"
        )
    print("  (the table through nr-llm includes bounding it; no peer bounds or encodes it)\n")

    met: list[bool] = []
    lang = timed.get("LangChain StructuredTool.invoke()|trivial")
    if lang is not None:
        ratio = lang / nr_trivial
        met.append(ratio >= 50)
        print(
            f"=> LangChain tool invocation / nr-llm invoke(), trivial tool: {ratio:.1f}x "
            f"(target >= 50x) {'PASS' if ratio >= 50 else 'MISS'}"
        )

    print("\nserialising the 50 KB table result")
    serial = interleaved(serialisation_candidates(), rounds)
    ours = serial.pop("nr-llm bound_result() (walk + exact size + cap)")
    print(f"  {'nr-llm bound_result() (walk + exact size + cap)':<52} {micros(ours)}")
    for label, seconds in serial.items():
        ok = ours <= seconds
        met.append(ok)
        print(
            f"  {label:<52} {micros(seconds)}  bounding {ours / seconds:.2f}x of it "
            f"{'PASS' if ok else 'MISS'}"
        )
    print(f"\n{sum(met)}/{len(met)} targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
