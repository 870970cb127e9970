"""Only a worker's take may stop the loop with ``TakenAwayError`` (ADR 0041, amended).

An adversarial pass: an application's own persister (one that passes on what an inner store
raised) raised ``TakenAwayError`` from ``settle``; the loop let it through by its type alone,
so ``run()`` raised after the tool had run and the caller lost its result. A persister that
holds no take is now treated as any other that fails: the failure is logged and the result
stands (the run stays ``running`` in that store, as after any failed settle, until
``nr-llm runs abandon`` ends it once this process has ended).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nr_llm_core import (
    AgentRunPersister,
    ScriptedProvider,
    ToolHost,
    ToolLoop,
    ToolResult,
    ToolSpec,
    hookimpl,
)
from nr_llm_core.audit import TakenAwayError


class Pay:
    def __init__(self) -> None:
        self.ran = 0

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("pay", "Pays.", {"type": "object"}, data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        self.ran += 1
        return ToolResult.text("paid")


class PassesOn(AgentRunPersister):
    """An application's persister that re-raises what an inner store raised at settle, once."""

    raised = False

    def settle(self, run_id: str, status: str, **kw: Any) -> None:
        if not self.raised:
            self.raised = True
            raise TakenAwayError("inner store: taken")
        super().settle(run_id, status, **kw)


def test_a_persister_that_holds_no_take_cannot_stop_the_loop(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pay = Pay()
    host = ToolHost()
    host.register(pay)
    turns: list[Any] = [{"tool_calls": [{"name": "pay", "arguments": {}, "id": "c1"}]}, "done"]
    with PassesOn(tmp_path / "audit.db") as store:
        result = ToolLoop(ScriptedProvider(turns), host, persister=store).run("go")
        record = store.get_run(result.run_id)
        kinds = [s["step"]["kind"] for s in store.steps(result.run_id)]
    assert pay.ran == 1
    assert result.content == "done"
    assert "tool" in kinds
    assert record is not None and record["status"] == "running"  # the settle failed
    assert "the persister could not settle run" in caplog.text
