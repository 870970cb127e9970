"""``nr-llm run "PROMPT"``: one tool-loop run, its answer and a compact trace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from nr_llm_core.audit import AgentRunPersister, AuditStoreError
from nr_llm_core.cli._offers import not_loaded_message, not_offered_lines, nothing_offered_line
from nr_llm_core.cli._output import status, visible
from nr_llm_core.cli._pending import Invocation, recorded_level
from nr_llm_core.cli._providers import announce_provider, make_provider, provider_options
from nr_llm_core.cli._report import outcome, report
from nr_llm_core.cli._session import (
    close_provider,
    config_option,
    isolate_option,
    open_host,
    read_config,
    session,
    tool_timeout_option,
)
from nr_llm_core.cli._store import db_option, open_store
from nr_llm_core.config import Config
from nr_llm_core.loop import TerminationReason, ToolLoop
from nr_llm_core.offers import OfferCode, offer_decisions
from nr_llm_core.privacy import PrivacyLevel, effective_level
from nr_llm_core.providers.base import zone_of
from nr_llm_core.stores import AuditStore

__all__ = ["run"]


@click.command("run")
@click.argument("prompt")
@provider_options
@click.option("--tools", "tools", default=None, help="Comma-separated tools to offer.")
@click.option("--max-rounds", type=click.IntRange(1), default=5, show_default=True)
@isolate_option
@tool_timeout_option()
@config_option
@click.option(
    "--privacy",
    type=click.Choice([level.value for level in PrivacyLevel], case_sensitive=False),
    default=None,
    help="What the audit store keeps of each step; $NR_LLM_PRIVACY_LEVEL, when set, is the "
    "widest allowed (the stricter wins; default: metadata).",
)
@db_option
@click.option("--no-record", is_flag=True, help="Do not write the run to the audit store.")
@click.option(
    "--queue",
    is_flag=True,
    help="Do not run here: queue the run in the shared PostgreSQL store for whichever "
    "`nr-llm worker` is free (its provider and tools answer); prints the run id.",
)
def run(
    prompt: str,
    provider: str | None,
    model: str | None,
    base_url: str | None,
    proxy: str | None,
    ca_bundle: str | None,
    max_tokens: int | None,
    timeout: float | None,
    trust_zone: str | None,
    script: str | None,
    tools: str | None,
    max_rounds: int,
    isolate: tuple[str, ...],
    tool_timeout: float | None,
    config_path: Path | None,
    privacy: str | None,
    db: str | None,
    no_record: bool,
    queue: bool,
) -> None:
    """Run PROMPT through the tool loop and print the answer and a compact trace.

    Before it runs, each tool the provider will not be offered is named on stderr with the
    reason and the fix. The run is recorded in the audit store at the privacy level (the
    last line says where, and at which level); a run that waits for approval is continued
    with ``nr-llm runs approve|deny RUN_ID``.
    """
    allowed: Any = None
    if tools is not None:
        allowed = [t.strip() for t in tools.split(",") if t.strip()]
    config = read_config(config_path, isolate=isolate, tool_timeout=tool_timeout)
    if queue:
        _queue(prompt, allowed, privacy, db, config, no_record=no_record)
        return
    chosen = make_provider(
        provider,
        config=config,
        model=model,
        base_url=base_url,
        trust_zone=trust_zone,
        script=script,
        proxy=proxy,
        ca_bundle=ca_bundle,
        max_tokens=max_tokens,
        timeout=timeout,
    )
    announce_provider(chosen)
    with session() as stack:
        close_provider(stack, chosen)
        store = None if no_record else stack.enter_context(open_store(db, config))
        host = stack.enter_context(open_host(config))
        loop = ToolLoop(chosen, host, max_iterations=max_rounds, privacy=privacy, persister=store)
        decisions = offer_decisions(host, chosen, allowed)
        zone = zone_of(chosen)
        unknown = [d.name for d in decisions if d.code is OfferCode.UNKNOWN]
        if unknown:
            # A run without the tool the user asked for would cost a request and end well:
            # a typo or a package not installed is said before anything is sent.
            raise click.UsageError(not_loaded_message(unknown, host.names()))
        for line in not_offered_lines(decisions, zone, named=allowed is not None):
            click.echo(line, err=True)
        with status(f"Running the tool loop ({type(chosen).__name__})") as progress:
            result = loop.run(prompt, allowed=allowed)
            progress.end(outcome(result))
        level = recorded_level(store, result.run_id, effective_level(loop.privacy).value)
        where = recorded_where(store, result.run_id, db)
    how = Invocation(config=config, script=script, db=db, config_path=config_path)
    limit = getattr(chosen, "max_tokens", max_tokens)
    report(result, privacy_level=level, max_tokens=limit, how=how)
    if not any(d.offered for d in decisions):
        click.echo(nothing_offered_line(decisions, zone))
    click.echo(where)
    if result.termination_reason is TerminationReason.FAILED:
        raise SystemExit(1)


def recorded_where(store: AuditStore | None, run_id: str, db: str | None) -> str:
    """The line that says where run ``run_id`` was recorded and at which privacy level (the
    level the store applied, read back from it), with the command that shows it."""
    run = visible(run_id, keep_newlines=False)
    if store is None:
        return f"run {run} was not recorded (--no-record)."
    # A SQLite file by its whole path; a shared store by its URL, password masked.
    where = store.path.resolve() if isinstance(store, AgentRunPersister) else _label(store)
    path = visible(str(where), keep_newlines=False)
    try:
        record = store.get_run(run_id)
    except AuditStoreError:
        record = None
    if record is None:
        return f"run {run} could not be recorded in {path}."
    level = visible(str(record["privacy_level"]), keep_newlines=False)
    option = "" if db is None else f" --db {visible(str(db), keep_newlines=False)}"
    return (
        f"run {run} recorded in {path} at privacy level {level}; "
        f"see it with: nr-llm runs show {run}{option}"
    )


def _queue(
    prompt: str,
    allowed: Any,
    privacy: str | None,
    db: str | None,
    config: Config,
    *,
    no_record: bool,
) -> None:
    """``run --queue``: the run and its prompt go to the shared store, the queue gets its id."""
    from nr_llm_core.audit import AuditStoreError
    from nr_llm_core.cli._output import visible
    from nr_llm_core.cli._store import store_target
    from nr_llm_core.stores import store_kind

    if no_record:
        raise click.UsageError("--queue records the run: it cannot go with --no-record")
    target = store_target(db, config)
    if store_kind(target) != "postgresql":
        raise click.UsageError("--queue needs a PostgreSQL store: --db postgresql+psycopg://…")
    try:
        from nr_llm_core.stores.queue import enqueue_run
    except ImportError:
        raise click.ClickException(
            "--queue needs the postgres extra: pip install 'nr-llm[postgres]'"
        ) from None
    try:
        run_id = enqueue_run(target, prompt, allowed=allowed, privacy=privacy)
    except AuditStoreError as exc:
        raise click.ClickException(visible(str(exc), keep_newlines=False)) from None
    click.echo(run_id)
    click.echo(f"queued: a worker will run it (nr-llm runs show {run_id})", err=True)


def _label(store: AuditStore) -> str:
    """A shared store as its users know it: the URL with its password masked."""
    label = getattr(store, "label", None)
    return label if type(label) is str else type(store).__name__
