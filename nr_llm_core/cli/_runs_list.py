"""``nr-llm runs list``: the most recent runs, as a table or as JSON, of every or some statuses.

A running run whose runner is provably gone is listed as ``running (runner gone)``
(:mod:`nr_llm_core.cli._runners`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import click

from nr_llm_core._audit_store_base import StoreBase
from nr_llm_core.audit import RunRecord, RunStatus
from nr_llm_core.cli._output import render_table
from nr_llm_core.cli._runners import runner_json, runners_of, shown_status
from nr_llm_core.cli._session import config_option, read_config
from nr_llm_core.cli._store import db_option, no_database, open_persister
from nr_llm_core.encoding import encode_json_ascii
from nr_llm_core.run_result import TerminationReason

__all__ = ["RUN_FIELDS", "list_runs", "parse_statuses", "shown_reason"]

#: A run's fields as ``runs show`` and ``runs list --json`` print them, in this order.
RUN_FIELDS: Final = (
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
    "claimed_by",
    "claimed_at",
    "steps",
)
_VALID: Final = ", ".join(s.value for s in RunStatus)


def shown_reason(record: RunRecord) -> str | None:
    """A run's termination reason as the table and ``runs show`` print it: a waiting run
    the store keeps none for is ``awaiting_approval``, the word ``nr-llm run`` printed when
    it stopped (the JSON keeps the stored value)."""
    reason = record["termination_reason"]
    if reason is None and record["status"] == RunStatus.SUSPENDED:
        return TerminationReason.AWAITING_APPROVAL.value
    return reason


def parse_statuses(
    ctx: click.Context, param: click.Parameter, given: tuple[str, ...]
) -> tuple[str, ...]:
    """The statuses ``--status`` names (repeated or comma-separated); an unknown one is a
    usage error (exit 2) that names the valid ones."""
    chosen: list[str] = []
    for value in given:
        for part in value.split(","):
            name = part.strip().lower()
            if not name:
                continue
            if name not in RunStatus.__members__.values():
                # The docs say a run "waits" for approval; its status is the store's word.
                raise click.BadParameter(
                    f"unknown status {part.strip()!r}; valid: {_VALID} (a run waiting for "
                    "approval is `suspended`)",
                    ctx=ctx,
                    param=param,
                )
            chosen.append(name)
    return tuple(dict.fromkeys(chosen))


@click.command("list")
@db_option
@click.option(
    "--limit",
    default=20,
    show_default=True,
    type=click.IntRange(min=1),
    help="How many runs, newest first.",
)
@click.option(
    "--status",
    "statuses",
    multiple=True,
    metavar="STATUS[,STATUS…]",
    callback=parse_statuses,
    help=f"Only runs with this status ({_VALID}); repeat it or separate with commas.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON array (printable ASCII): each run's fields as `runs show --json` "
    "prints them, and a running run's runner.",
)
@config_option
def list_runs(
    db: str | None,
    limit: int,
    statuses: tuple[str, ...],
    as_json: bool,
    config_path: Path | None,
) -> None:
    """The most recent runs. A running run whose process is gone shows as `running (runner
    gone)`: `nr-llm runs abandon RUN` ends it."""
    config = read_config(config_path)  # its [store] db, when --db and NR_LLM_DB are unset
    store = open_persister(db, config=config)
    if store is None:
        no_database(db, config, err=as_json)
        if as_json:  # no store holds no run: the output stays JSON
            click.echo("[]")
        return
    with store:
        records: list[RunRecord]
        if not statuses:
            records = store.list_runs(limit)
        elif isinstance(store, StoreBase):  # every store is: it filters in its database
            records = store.list_runs_with_status(statuses, limit)
        else:
            records = [r for r in store.list_runs(limit) if r["status"] in statuses]
        seen = runners_of(store, records)
    if as_json:
        out: list[dict[str, Any]] = []
        for r in records:
            run: dict[str, Any] = dict(r)
            item = {key: run[key] for key in RUN_FIELDS}
            item["runner"] = runner_json(r["id"], seen)
            out.append(item)
        click.echo(encode_json_ascii(out))
        return
    if not records:
        click.echo("No runs recorded." if not statuses else "No runs with that status.")
        return
    rows = [
        [
            r["id"],
            shown_status(r, seen),
            r["started_at"],
            str(r["steps"]),
            str(r["iterations"]),
            f"{r['tokens_in']}/{r['tokens_out']}",
            r["privacy_level"],
            shown_reason(r),
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
