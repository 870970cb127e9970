"""Small real tool plugins, and an in-memory RunRecorder, for the loop tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nr_llm_core import Artifact, DataClass, ToolHost, ToolResult, ToolSpec, hookimpl
from nr_llm_core.trace import RunStep

# Canaries: each must never appear in a provider request or a suspended state.
ART_CANARY = "CANARY-ARTIFACT-TEXT-7f3a"
LABEL_CANARY = "CANARY-LABEL-91bc"
COLUMN_CANARY = "CANARY-COLUMN-55de"
CELL_CANARY = "CANARY-CELL-0a0a"
EXC_CANARY = "CANARY-EXCEPTION-c0ffee"
CANARIES = (ART_CANARY, LABEL_CANARY, COLUMN_CANARY, CELL_CANARY, EXC_CANARY)

LOOKUP_CONTENT = "customer 42 is Ada Lovelace"


class Lookup:
    """Returns model-facing content and artifacts full of canaries."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(
            "lookup",
            "Look up a customer by id.",
            {
                "type": "object",
                "properties": {"id": {"type": "integer"}},
                "required": ["id"],
                "additionalProperties": False,
            },
            data_class=DataClass.PUBLIC,
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.text(
            LOOKUP_CONTENT if arguments["id"] == 42 else "no such customer",
            Artifact.table(LABEL_CANARY, ["id", COLUMN_CANARY], [["42", CELL_CANARY]]),
            Artifact.text("details", ART_CANARY),
        )


class Explode:
    """Raises with a canary in the exception text."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("explode", "Always fails.", data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        raise RuntimeError(f"secret detail {EXC_CANARY}")


class Writer:
    """A writer: needs human approval."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(
            "write_note",
            "Write a note.",
            {"type": "object", "properties": {"text": {"type": "string"}}},
            data_class="public",
            requires_approval=True,
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        self.calls.append(arguments)
        return ToolResult.text(
            f"wrote {arguments.get('text', '')!r}", Artifact.text("n", ART_CANARY)
        )


class Internal:
    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("internal_report", "Internal numbers.", data_class="internal")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.text("internal numbers: 7")


class Undeclared:
    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("env_dump", "Dumps things (declares no data class).")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.text("PATH=/usr/bin")


def make_host(*plugins: object) -> ToolHost:
    host = ToolHost()
    for plugin in plugins or (Lookup(), Explode()):
        host.register(plugin)
    return host


class MemoryRecorder:
    """An in-memory RunRecorder (the SQLite AgentRunPersister is tested on its own branch)."""

    def __init__(self) -> None:
        self.runs: dict[str, dict[str, Any]] = {}
        self.steps: dict[str, list[RunStep]] = {}
        self.suspended: dict[str, dict[str, Any]] = {}
        self._n = 0

    def begin(self, run_id: str | None = None, *, meta: Mapping[str, Any] | None = None) -> str:
        self._n += 1
        rid = run_id or f"run-{self._n}"
        self.runs[rid] = {"meta": dict(meta or {}), "status": "running"}
        self.steps[rid] = []
        return rid

    def record_step(self, run_id: str, step: RunStep) -> bool:
        self.steps[run_id].append(step)
        return True

    def settle(
        self,
        run_id: str,
        status: str,
        *,
        termination_reason: str,
        iterations: int,
        truncated: bool,
        usage: Mapping[str, int],
    ) -> None:
        self.runs[run_id].update(
            status=status,
            termination_reason=termination_reason,
            iterations=iterations,
            truncated=truncated,
            usage=dict(usage),
        )
        self.suspended.pop(run_id, None)

    def suspend(self, run_id: str, state: Mapping[str, Any]) -> None:
        self.runs[run_id]["status"] = "awaiting_approval"
        self.suspended[run_id] = dict(state)

    def load_suspended(self, run_id: str) -> Mapping[str, Any] | None:
        return self.suspended.get(run_id)
