"""``nr-llm runs list|show`` and ``nr-llm privacy level|purge``: the audit store from a shell.

Every stored string is printed through :func:`~nr_llm_core.cli._output.visible`: a run's steps
hold tool and model bytes at the FULL and REDACTED levels, and none of them may drive the
terminal. To add a ``runs`` subcommand, decorate it with ``@runs.command(...)`` and
:func:`~nr_llm_core.cli._store.db_option`, and open the store with
:func:`~nr_llm_core.cli._store.open_persister`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from nr_llm_core.cli._output import render_table, status, visible
from nr_llm_core.cli._providers import make_provider, provider_options
from nr_llm_core.cli._store import db_option, no_database, open_persister
from nr_llm_core.privacy import PRIVACY_ENV_VAR, resolve_privacy_level

__all__ = ["approve_run", "deny_run", "privacy", "runs"]


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
        no_database(db)
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
        no_database(db)
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


def _decide(run_id: str, approve: bool, digest: str | None, db: Path | None, options: Any) -> None:
    # Imported here: the loop and providers are only needed when a run is resumed.
    from nr_llm_core.approval import SuspendedRunState
    from nr_llm_core.cli._report import report
    from nr_llm_core.errors import ApprovalError
    from nr_llm_core.host import ToolHost
    from nr_llm_core.loop import ToolLoop
    from nr_llm_core.messages import Role
    from nr_llm_core.providers import ScriptedProvider

    store = open_persister(db)
    if store is None:
        no_database(db)
        raise SystemExit(1)
    with store:
        data = store.load_suspended(run_id)
        if data is None:
            raise click.ClickException(
                f"run {visible(run_id, keep_newlines=False)!r} is not waiting for approval"
            )
        state = SuspendedRunState.from_dict(data)
        max_tokens = options.get("max_tokens")
        provider = make_provider(options.pop("provider"), **options)
        if isinstance(provider, ScriptedProvider):
            # A script is stateless across processes: it goes on after the turns already played.
            provider.position = sum(1 for m in state.messages if m.role is Role.ASSISTANT)
        loop = ToolLoop(provider, ToolHost.discover(), persister=store)
        try:
            with status("Resuming the run"):
                result = loop.resume(run_id, approved=approve, digest=digest)
        except ApprovalError as exc:
            raise click.ClickException(visible(str(exc), keep_newlines=False)) from None
    report(result, max_tokens=max_tokens)


def _decision_command(approve: bool) -> Callable[..., None]:
    verb = "approve" if approve else "deny"

    @runs.command(verb)
    @click.argument("run_id")
    @click.option(
        "--digest",
        default=None,
        help="The digest shown with the pending calls: refuses the decision if the turn changed.",
    )
    @db_option
    @provider_options
    def decide(run_id: str, digest: str | None, db: Path | None, **options: Any) -> None:
        _decide(run_id, approve, digest, db, options)

    decide.__doc__ = (
        f"{verb.capitalize()} the pending tool calls of RUN_ID and continue the run.\n\n"
        "The run goes on with the given provider (default: the scripted demo, from the turn "
        "it had reached)."
    )
    decide.help = decide.__doc__
    return decide


approve_run = _decision_command(True)
deny_run = _decision_command(False)


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
        no_database(db)
        return
    with store:
        deleted = store.purge(days)
    click.echo(f"Purged {deleted} run(s) started more than {days:g} day(s) ago.")
