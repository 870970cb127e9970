"""A worker checks a run's state signature where it decides, not again on the same bytes,
with a real PostgreSQL store (ADR 0041).

The take checks the state it hands over (signature included) in the transaction that takes
the run, before anything runs; the worker then verified the very same bytes again before it
made its provider, and the loop's resume a third time. Counted here: the take's check and
the loop's own (a resume cannot know who checked the state it is given) remain, the worker's
repeat is gone; a state that fails is still refused before anything runs
(``tests/stores/test_given_back.py``, ``tests/store/test_claim_checks.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from nr_llm_core import ScriptedProvider
from nr_llm_core.approval import SuspendedRunState
from nr_llm_core.providers.base import TrustZone
from nr_llm_core.stores import open_store
from nr_llm_core.stores._runner import RunExecutor
from nr_llm_core.stores.postgres import PostgresStore

from ..store._support import LOG_VAR, append_host, log_lines, suspend_append_run
from .test_taken_while_ending import queued


def test_an_approved_run_is_verified_by_the_take_and_by_the_resume_only(
    pg_store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run approved for the workers: the worker resumes it and the approved call runs
    once. Its state is verified twice (the take, the loop's resume), not three times."""
    log = tmp_path / "append.log"
    monkeypatch.setenv(LOG_VAR, str(log))
    run_id, digest = suspend_append_run(pg_store_url)
    with open_store(pg_store_url) as store:
        assert isinstance(store, PostgresStore)
        store.approve_queued(run_id, digest=digest, decisions={"a1": True})
        executor = RunExecutor(
            store,
            append_host(),
            lambda state: ScriptedProvider(["appended"]),
            name="w",
            zone=TrustZone.LOCAL,
        )
        seen = verified_during(monkeypatch, lambda: executor.execute(run_id))
    assert seen.outcome == "completed"
    assert len(log_lines(log)) == 1
    assert seen.ids == [run_id, run_id]


def test_a_run_queued_to_start_is_verified_once(
    pg_store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run queued to start: only the take verifies its state (nothing resumes it)."""
    with open_store(pg_store_url) as store:
        assert isinstance(store, PostgresStore)
        run_id = queued(store, "go")
        executor = RunExecutor(
            store,
            append_host(),
            lambda state: ScriptedProvider(["hello"]),
            name="w",
            zone=TrustZone.LOCAL,
        )
        seen = verified_during(monkeypatch, lambda: executor.execute(run_id))
    assert seen.outcome == "completed"
    assert seen.ids == [run_id]


class _Seen:
    def __init__(self, outcome: str, ids: list[str]) -> None:
        self.outcome = outcome
        self.ids = ids


def verified_during(monkeypatch: pytest.MonkeyPatch, action: Callable[[], str]) -> _Seen:
    """``action()``'s outcome and the run ids of the states verified while it ran."""
    seen: list[str] = []
    original = SuspendedRunState.verify

    def counting(self: SuspendedRunState) -> None:
        seen.append(self.run_id)
        original(self)

    monkeypatch.setattr(SuspendedRunState, "verify", counting)
    try:
        outcome = action()
    finally:
        monkeypatch.setattr(SuspendedRunState, "verify", original)
    return _Seen(str(outcome), seen)
