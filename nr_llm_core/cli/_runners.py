"""Who runs a run, as ``nr-llm runs list|show`` show it, and ``nr-llm runs abandon``.

A ``running`` run whose recorded runner is provably gone (ADR 0042) is shown as stale,
``running (runner gone)``, and ``runs abandon`` ends it. Only the SQLite store records
runners; on another store every running run's runner is unknown and ``abandon`` says so.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

from nr_llm_core._audit_runner import Runner, RunnerState, runner_state
from nr_llm_core._audit_store_base import StoreBase
from nr_llm_core.audit import AuditStoreError, RunRecord, RunStatus
from nr_llm_core.cli._output import visible
from nr_llm_core.cli._session import config_option, read_config
from nr_llm_core.cli._store import (
    db_option,
    existing_store,
    resolve_run_id,
)
from nr_llm_core.stores import AuditStore

__all__ = ["Seen", "abandon_run", "runner_json", "runners_of", "shown_status", "stale_note"]

#: What is known of a run's runner: the one recorded (``None``: none) and its state here.
Seen = tuple[Runner | None, RunnerState]


def runners_of(store: AuditStore, records: Iterable[RunRecord]) -> dict[str, Seen]:
    """The runner of each ``running`` run among ``records``, and what can be proved of it."""
    running = [r["id"] for r in records if r["status"] == RunStatus.RUNNING]
    if not running:
        return {}
    recorded = store.runners(running) if isinstance(store, StoreBase) else {}
    return {
        run_id: (recorded.get(run_id), runner_state(recorded.get(run_id))) for run_id in running
    }


def shown_status(record: RunRecord, seen: dict[str, Seen]) -> str:
    """The run's status, ``running (runner gone)`` when its runner is provably gone."""
    found = seen.get(record["id"])
    if found is not None and found[1] is RunnerState.GONE:
        return f"{record['status']} (runner gone)"
    return str(record["status"])


def runner_json(run_id: str, seen: dict[str, Seen]) -> dict[str, Any] | None:
    """A running run's runner for ``--json``: host, pid and ``state`` (``gone``, ``alive``,
    ``other_host``, ``unknown``); ``None`` for a run that is not running."""
    found = seen.get(run_id)
    if found is None:
        return None
    runner, state = found
    return {
        "host": None if runner is None else runner.host,
        "pid": None if runner is None else runner.pid,
        "state": state.value,
    }


def stale_note(run_id: str, seen: dict[str, Seen]) -> str | None:
    """The note ``runs show`` prints under a running run: who runs it, or that it is gone."""
    found = seen.get(run_id)
    if found is None:
        return None
    runner, state = found
    shown = visible(run_id, keep_newlines=False)
    if state is RunnerState.GONE and runner is not None:
        return (
            f"note: its runner is gone ({visible(str(runner), keep_newlines=False)} has "
            f"ended): the run will not go on. `nr-llm runs abandon {shown}` ends it"
        )
    if runner is None:
        return "note: no runner is recorded for it"
    return f"runner: {visible(str(runner), keep_newlines=False)} ({state.value.replace('_', ' ')})"


@click.command("abandon")
@click.argument("run_id")
@db_option
@config_option
def abandon_run(run_id: str, db: str | None, config_path: Path | None) -> None:
    """End RUN_ID, which is running but whose process is gone (killed, crashed): it is
    settled as failed, reason abandoned.

    Only when that is proved: the run was begun or last resumed on this host, and its process
    (the pid recorded with it) has ended, or that pid is now another process. Refused, with
    nothing changed, when the process still runs, ran on another host, or is not recorded."""
    from nr_llm_core.audit import claimant

    config = read_config(config_path)
    store = existing_store(db, config)
    with store:
        run_id = resolve_run_id(store, run_id)
        if not isinstance(store, StoreBase):  # every store is one; a stand-in would not be
            raise click.ClickException("this store cannot end an abandoned run")
        try:
            store.abandon(run_id, claimant=claimant("cli"))
        except AuditStoreError as exc:
            raise click.ClickException(visible(str(exc), keep_newlines=False)) from None
    click.echo(
        f"Abandoned run {visible(run_id, keep_newlines=False)}: its runner is gone; the run is "
        "settled as failed (reason abandoned)."
    )
