"""An old state row of the same run, written back by someone who can write the store but has
no host secret: what ADR 0036's checks (signature, run, turn) hold, and what they do not.

Each check compares what the database holds with itself: the row's signature covers the run
id, the state and the decisions; the state's digest is keyed; the turn is the digest column of
the same row. A row the host once signed for this run passes all of them when it is written
back whole. What holds is everything that is not a whole earlier row: an edited state or
decision, another run's row, the digest column of another turn. What does not hold is a
rollback of the run to an earlier signed point, which SECURITY.md lists as not defended; the
test below pins it (strict xfail), so that a fix turns it into a guarantee.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nr_llm_core import ScriptedProvider
from nr_llm_core.providers.base import TrustZone
from nr_llm_core.stores import open_store
from nr_llm_core.stores._runner import RunExecutor

from ..store._support import APPEND_TURNS, LOG_VAR, append_host, log_lines, suspend_append_run
from .fixtures import execute

_ROW = "SELECT state, digest, decisions, mac FROM states WHERE run_id = :r"


def _executor(store: Any) -> RunExecutor:
    return RunExecutor(
        store,
        append_host(),
        lambda state: ScriptedProvider(APPEND_TURNS[1:]),
        name="worker",
        zone=TrustZone.LOCAL,
    )


def _approved_and_saved(url: str) -> tuple[str, list[Any]]:
    """A run approved for the workers, and its signed state row as the database held it."""
    run_id, digest = suspend_append_run(url)
    with open_store(url) as store:
        store.approve_queued(run_id, digest=digest, decisions={"a1": True})  # type: ignore[attr-defined]
    (row,) = execute(url, _ROW, r=run_id)
    return run_id, list(row)


def _write_back(url: str, run_id: str, row: list[Any], *, digest: str | None = None) -> None:
    """Put the saved row back and the run in the queue, as a database writer can."""
    state, old_digest, decisions, mac = row
    execute(url, "DELETE FROM states WHERE run_id = :r", r=run_id)
    execute(
        url,
        "INSERT INTO states (run_id, state, digest, decisions, mac) VALUES (:r, :s, :d, :c, :m)",
        r=run_id,
        s=state,
        d=old_digest if digest is None else digest,
        c=decisions,
        m=mac,
    )
    execute(
        url,
        "UPDATE runs SET status = 'queued', ended_at = NULL, termination_reason = NULL "
        "WHERE id = :r",
        r=run_id,
    )


def test_a_replayed_row_with_another_turns_digest_column_is_refused(
    pg_store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The approved row is written back after the run completed, but with the digest column
    of another turn: the turn check refuses it (the worker gives the run back, nothing
    runs again)."""
    log = tmp_path / "append.log"
    monkeypatch.setenv(LOG_VAR, str(log))
    run_id, row = _approved_and_saved(pg_store_url)
    with open_store(pg_store_url) as store:
        assert _executor(store).execute(run_id) == "completed"
        assert len(log_lines(log)) == 1
        _write_back(pg_store_url, run_id, row, digest="0" * 64)
        assert _executor(store).execute(run_id) == "given_back"
    assert len(log_lines(log)) == 1


@pytest.mark.xfail(
    strict=True,
    reason="not defended (SECURITY.md): a whole earlier signed row of the same run, written "
    "back by a database writer, passes every check; the approved call runs again",
)
def test_a_whole_earlier_row_written_back_does_not_run_the_approved_call_again(
    pg_store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The approved row (state, digest, decisions, signature) is saved; the run completes,
    the approved append runs once; the row is written back whole and the run queued again.
    A worker should refuse it; it takes it and runs the approved append a second time, with
    no new decision: the signature, the run and the turn all match, because they are the
    host's own, from before."""
    log = tmp_path / "append.log"
    monkeypatch.setenv(LOG_VAR, str(log))
    run_id, row = _approved_and_saved(pg_store_url)
    with open_store(pg_store_url) as store:
        assert _executor(store).execute(run_id) == "completed"
        _write_back(pg_store_url, run_id, row)
        _executor(store).execute(run_id)
    assert len(log_lines(log)) == 1
