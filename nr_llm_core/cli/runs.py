"""``nr-llm runs list|show`` and ``nr-llm privacy level|purge``: the audit store from a shell.

Every stored string is printed through :func:`~nr_llm_core.cli._output.visible`: a run's steps
hold tool and model bytes at the FULL and REDACTED levels, and none of them may drive the
terminal. To add a ``runs`` subcommand, decorate it with ``@runs.command(...)`` and
:func:`db_option`, and open the store with :func:`open_persister`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from nr_llm_core.audit import AgentRunPersister, AuditStoreError, default_db_path
from nr_llm_core.cli._output import render_table, visible
from nr_llm_core.privacy import PRIVACY_ENV_VAR, resolve_privacy_level

__all__ = ["db_option", "open_persister", "privacy", "runs"]

F = TypeVar("F", bound=Callable[..., Any])


def db_option(func: F) -> F:
    """The ``--db PATH`` option (default: ``$NR_LLM_DB``, else ``./.nr-llm/audit.db``)."""
    option = click.option(
        "--db",
        "db",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="The audit database (default: $NR_LLM_DB, else ./.nr-llm/audit.db).",
    )
    return option(func)


def open_persister(db: Path | None, *, create: bool = False) -> AgentRunPersister | None:
    """The store at ``db`` (or the default path); ``None`` if it does not exist and
    ``create`` is false, so that reading never creates an empty database."""
    path = db if db is not None else default_db_path()
    if not create and not path.exists():
        return None
    try:
        return AgentRunPersister(path)
    except AuditStoreError as exc:
        raise click.ClickException(str(exc)) from None


def _no_database(db: Path | None) -> None:
    path = db if db is not None else default_db_path()
    click.echo(f"No audit database at {visible(str(path), keep_newlines=False)}.")


@click.group()
def runs() -> None:
    """Recorded agent runs and their steps, as the privacy level stored them."""


@runs.command("list")
@db_option
@click.option("--limit", default=20, show_default=True, help="How many runs, newest first.")
def list_runs(db: Path | None, limit: int) -> None:
    """The most recent runs."""
    store = open_persister(db)
    if store is None:
        _no_database(db)
        return
    with store:
        records = store.list_runs(limit)
    if not records:
        click.echo("No runs recorded.")
        return
    rows = [
        [
            r["id"],
            r["status"],
            r["started_at"],
            str(r["steps"]),
            str(r["iterations"]),
            f"{r['tokens_in']}/{r['tokens_out']}",
            r["privacy_level"],
            r["termination_reason"] or "-",
        ]
        for r in records
    ]
    click.echo(
        render_table(
            ["RUN", "STATUS", "STARTED", "STEPS", "ITER", "TOKENS IN/OUT", "PRIVACY", "REASON"],
            rows,
            max_width=40,
        )
    )


@runs.command("show")
@click.argument("run_id")
@db_option
def show_run(run_id: str, db: Path | None) -> None:
    """One run and its steps, each exactly as stored (JSON, one per step)."""
    store = open_persister(db)
    if store is None:
        _no_database(db)
        raise SystemExit(1)
    with store:
        record = store.get_run(run_id)
        if record is None:
            raise click.ClickException(f"no run {visible(run_id, keep_newlines=False)!r}")
        steps = store.steps(run_id)
    for key in (
        "id",
        "status",
        "started_at",
        "ended_at",
        "iterations",
        "truncated",
        "termination_reason",
        "tokens_in",
        "tokens_out",
        "privacy_level",
        "suspended",
        "steps",
    ):
        value = record[key]
        click.echo(f"{key}: {visible(str('-' if value is None else value), keep_newlines=False)}")
    for step in steps:
        click.echo(f"\n#{step['seq']} {visible(step['kind'], keep_newlines=False)}")
        # The payload is printed as stored: the operator sees exactly what the level kept.
        click.echo(visible(step["payload"], keep_newlines=False))


@click.group()
def privacy() -> None:
    """The privacy level and retention of the audit store."""


@privacy.command("level")
def show_level() -> None:
    """The level new runs are recorded at (from $NR_LLM_PRIVACY_LEVEL, default metadata)."""
    click.echo(resolve_privacy_level().value)
    click.echo(f"(set {PRIVACY_ENV_VAR} to none, metadata, redacted or full)", err=True)


@privacy.command("purge")
@click.option(
    "--older-than",
    "days",
    type=click.FloatRange(min=0),
    required=True,
    metavar="DAYS",
    help="Delete runs started more than DAYS days ago, with their steps.",
)
@db_option
def purge(days: float, db: Path | None) -> None:
    """Delete old runs and their steps (the freed bytes are overwritten)."""
    store = open_persister(db)
    if store is None:
        _no_database(db)
        return
    with store:
        deleted = store.purge(days)
    click.echo(f"Purged {deleted} run(s) started more than {days:g} day(s) ago.")
