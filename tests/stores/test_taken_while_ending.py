"""A worker whose run is taken from it while it ends the run stops there, with a real
PostgreSQL store and two takes of one run (ADR 0041).

The queue hands a run to another worker when the first stops sending heartbeats; the first
need not be dead. When it goes on between its last check (before the completion) and the
write that ends the run (a settle, a suspension), the store refuses that write: the run
belongs to the other take. Before, the loop logged the refusal and returned its result as if
the run had ended, so the worker reported ``completed`` or ``awaiting_approval`` for a run
that another worker holds. Only that refusal passes through the loop: any other failure of
its persister still leaves the loop's result as it was.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from nr_llm_core import ToolHost, ToolLoop
from nr_llm_core.approval import SuspendedRunState
from nr_llm_core.errors import ApprovalError
from nr_llm_core.loop import TerminationReason
from nr_llm_core.messages import ChatMessage, ToolCall
from nr_llm_core.providers.base import Completion, TrustZone, Usage
from nr_llm_core.results import ToolSpec
from nr_llm_core.stores import open_store
from nr_llm_core.stores._runner import RunExecutor
from nr_llm_core.stores.postgres import PostgresStore

from ..store._support import append_host
from .fixtures import execute


def queued(store: PostgresStore, prompt: str) -> str:
    """A run queued to start (what ``nr-llm run --queue`` stores), without the queue's job:
    the tests hand its id to a worker themselves."""
    state = SuspendedRunState.create(
        run_id=uuid.uuid4().hex,
        messages=(ChatMessage.user(prompt),),
        pending=(),
        needs_approval=(),
        iterations=0,
        tool_rounds=0,
        usage=Usage(),
        allowed=None,
    )
    return store.enqueue(state.to_dict(), meta={"queued": True})


class HandedOnWhileAnswering:
    """A provider during whose answer the queue hands the run to worker ``B`` (a take in
    ``B``'s name, as procrastinate's stalled-job retry leads to), then answers ``turn``."""

    trust_zone = TrustZone.LOCAL

    def __init__(self, store: PostgresStore, turn: Completion) -> None:
        self.store = store
        self.turn = turn
        self.run_id = ""
        self.successor: Any = None

    def complete(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> Completion:
        self.successor = self.store.take(self.run_id, worker="B", zone="local")
        return self.turn


def _row(url: str, run_id: str) -> list[Any]:
    return execute(
        url, "SELECT state, decisions, mac, applying FROM states WHERE run_id = :r", r=run_id
    )


def _run(url: str, run_id: str) -> list[Any]:
    return execute(
        url,
        "SELECT status, attempts, taken_by, termination_reason FROM runs WHERE id = :r",
        r=run_id,
    )


def _execute(store: PostgresStore, host: ToolHost, provider: HandedOnWhileAnswering) -> str:
    run_id = queued(store, "go")
    provider.run_id = run_id
    executor = RunExecutor(store, host, lambda state: provider, name="A", zone=TrustZone.LOCAL)
    return executor.execute(run_id)


def test_a_settle_refused_because_the_run_was_taken_away_is_reported_skipped(
    pg_store_url: str,
) -> None:
    """Worker ``A`` asks its model; while it answers (the final answer), the run is handed
    to ``B``. ``A``'s settle is refused by the store; ``A`` must report ``skipped`` (it
    stopped; the run is ``B``'s), not ``completed``, and write nothing more: the run stays
    ``running`` in ``B``'s take with its state, and ``B`` can still end it."""
    with open_store(pg_store_url) as opened:
        assert isinstance(opened, PostgresStore)
        provider = HandedOnWhileAnswering(opened, Completion(content="all done"))
        outcome = _execute(opened, ToolHost(), provider)
        run_id = provider.run_id
        assert outcome == "skipped"
        assert _run(pg_store_url, run_id) == [("running", 2, "B", None)]
        assert len(_row(pg_store_url, run_id)) == 1
        successor = provider.successor
        assert successor is not None and successor.attempt == 2
        opened.settle(run_id, "completed", attempt=successor.attempt)
    assert _run(pg_store_url, run_id)[0][0] == "completed"


def test_a_suspension_refused_because_the_run_was_taken_away_is_reported_skipped(
    pg_store_url: str,
) -> None:
    """The same, when ``A``'s model asks for a call that needs approval: ``A``'s suspension
    is refused; ``A`` must report ``skipped``, not ``awaiting_approval``, and the run stays
    ``running`` in ``B``'s take, its state row as ``B`` was handed it."""
    turn = Completion(tool_calls=(ToolCall(id="a1", name="append_line", arguments={"text": "x"}),))
    with open_store(pg_store_url) as opened:
        assert isinstance(opened, PostgresStore)
        provider = HandedOnWhileAnswering(opened, turn)
        run_id = queued(opened, "go")
        provider.run_id = run_id
        before = _row(pg_store_url, run_id)
        executor = RunExecutor(
            opened, append_host(), lambda state: provider, name="A", zone=TrustZone.LOCAL
        )
        assert executor.execute(run_id) == "skipped"
    assert _run(pg_store_url, run_id) == [("running", 2, "B", None)]
    assert _row(pg_store_url, run_id) == before


def test_the_store_signal_is_one_public_type_callers_already_catch(pg_store_url: str) -> None:
    """One exception says that a take lost its run, wherever it is noticed: the store's
    refusal of a write and the worker's check before a step. It is exported with the other
    store errors (``nr_llm_core.audit``), and it is both an ``AuditStoreError`` (what a
    store's caller catches) and an ``ApprovalError`` (what a resume's caller catches)."""
    from nr_llm_core import audit
    from nr_llm_core.stores import _pg_states, _runner

    assert "TakenAwayError" in audit.__all__
    taken_away = audit.TakenAwayError
    assert _pg_states.TakenAwayError is taken_away
    assert issubclass(taken_away, audit.AuditStoreError)
    assert issubclass(taken_away, ApprovalError)
    assert not hasattr(_runner, "_TakenAway")
    assert taken_away.__doc__


def test_other_persister_failures_still_leave_the_loop_s_result(pg_store_url: str) -> None:
    """Only the taken-away signal passes through the loop: a run that somebody else settled
    while the loop's provider answered (the loop's own settle is then refused as already
    settled, with a real store) still gives the loop's result, and the loop raises
    nothing."""
    with open_store(pg_store_url) as opened:
        assert isinstance(opened, PostgresStore)

        class SettledMeanwhile:
            trust_zone = TrustZone.LOCAL
            run_id = ""

            def complete(
                self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
            ) -> Completion:
                (record,) = opened.list_runs(1)
                opened.settle_cancelled(record["id"], termination_reason="discarded")
                return Completion(content="answered")

        result = ToolLoop(SettledMeanwhile(), ToolHost(), persister=opened).run("go")
        assert result.termination_reason is TerminationReason.COMPLETED
        record = opened.get_run(result.run_id)
        assert record is not None and record["status"] == "cancelled"
