"""A run the host interrupts (Ctrl-C, a stop signal: ``KeyboardInterrupt``, ``SystemExit``)
is settled ``cancelled`` for the reason ``interrupted`` before the interruption goes on, on a
fresh run and on a resumed one after its claim: left ``running``, no command could end it
(``runs approve|deny|discard`` refuse a run that is not waiting). A real SQLite file; the
command line's signals are in ``tests/cli/test_cleanup.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nr_llm_core import ChatMessage, ScriptedProvider, ToolLoop
from nr_llm_core.audit import AgentRunPersister
from nr_llm_core.providers.base import Completion

from ._tools import Writer, make_host


class Interrupting(ScriptedProvider):
    """Answers its script, then raises ``exc`` instead of the next answer."""

    def __init__(self, script: list[Any], exc: BaseException) -> None:
        super().__init__(script)
        self.exc = exc
        self.left = len(script)

    def complete(self, messages: Any, tools: Any) -> Completion:
        if self.left == 0:
            raise self.exc
        self.left -= 1
        return super().complete(messages, tools)


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), SystemExit(143)], ids=["ctrl-c", "exit"])
def test_an_interrupted_run_is_settled_cancelled(tmp_path: Path, exc: BaseException) -> None:
    with AgentRunPersister(tmp_path / "audit.db") as store:
        loop = ToolLoop(Interrupting([], exc), make_host(), persister=store)
        with pytest.raises(type(exc)):
            loop.run([ChatMessage.user("hi")])
        (run,) = store.list_runs()
        assert (run["status"], run["termination_reason"]) == ("cancelled", "interrupted")


def test_an_interrupted_resume_is_settled_cancelled(tmp_path: Path) -> None:
    """Interrupted after the claim (while the model answers the approved call's result): the
    run is not left `running` on a claim nobody holds."""
    with AgentRunPersister(tmp_path / "audit.db") as store:
        ask = {"tool_calls": [{"name": "write_note", "arguments": {"text": "x"}}]}
        first = ToolLoop(ScriptedProvider([ask]), make_host(Writer()), persister=store)
        waiting = first.run([ChatMessage.user("write x")])
        assert waiting.suspended is not None
        writer = Writer()
        loop = ToolLoop(Interrupting([], KeyboardInterrupt()), make_host(writer), persister=store)
        with pytest.raises(KeyboardInterrupt):
            loop.resume(waiting.run_id, approved=True, allow_provider_change=True)
        assert writer.calls == [{"text": "x"}]  # the approved call ran, then the model hung
        run = store.get_run(waiting.run_id)
        assert (run["status"], run["termination_reason"]) == ("cancelled", "interrupted")


class InterruptAfter:
    """A store wrapper that raises ``KeyboardInterrupt`` right after ``method`` committed:
    the signal arriving between the store's commit and the loop's return."""

    def __init__(self, store: AgentRunPersister, method: str) -> None:
        self._store, self._method = store, method

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._store, name)
        if name != self._method:
            return real

        def then_interrupted(*args: Any, **kwargs: Any) -> Any:
            real(*args, **kwargs)
            raise KeyboardInterrupt

        return then_interrupted


@pytest.mark.parametrize(("method", "status"), [("suspend", "suspended"), ("settle", "completed")])
def test_an_interrupt_after_the_run_ended_here_changes_nothing(
    tmp_path: Path, method: str, status: str
) -> None:
    """Interrupted once the run is no longer this process's to end: a suspension already
    committed keeps the run waiting with its state (it was cancelled, its state deleted);
    a settled run keeps its status."""
    with AgentRunPersister(tmp_path / "audit.db") as store:
        ask = {"tool_calls": [{"name": "write_note", "arguments": {"text": "x"}}]}
        script = [ask] if method == "suspend" else ["Done."]
        wrapped = InterruptAfter(store, method)
        loop = ToolLoop(ScriptedProvider(script), make_host(Writer()), persister=wrapped)  # type: ignore[arg-type]
        with pytest.raises(KeyboardInterrupt):
            loop.run([ChatMessage.user("write x")])
        (run,) = store.list_runs()
        assert run["status"] == status
        if method == "suspend":
            assert store.load_suspended(run["id"]) is not None
