"""``nr-llm worker``: take queued runs and approved resumptions from a shared PostgreSQL store
and run them with this machine's provider and tools (ADR 0025)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from nr_llm_core.cli._output import visible
from nr_llm_core.cli._providers import make_provider, provider_options
from nr_llm_core.cli._session import (
    config_option,
    isolate_option,
    open_host,
    read_config,
    session,
    tool_timeout_option,
)
from nr_llm_core.cli._store import db_option, store_target
from nr_llm_core.errors import ConfigurationError
from nr_llm_core.privacy import PrivacyLevel

__all__ = ["worker"]


@click.command("worker")
@db_option
@provider_options
@isolate_option
@tool_timeout_option()
@config_option
@click.option("--name", default=None, help="This worker's name in the store (default: host, pid).")
@click.option("--concurrency", type=click.IntRange(1, 64), default=1, show_default=True)
@click.option("--max-rounds", type=click.IntRange(1), default=5, show_default=True)
@click.option(
    "--privacy",
    type=click.Choice([level.value for level in PrivacyLevel], case_sensitive=False),
    default=None,
    help="The widest level this worker records a run at (a run recorded stricter stays so).",
)
@click.option(
    "--heartbeat",
    type=click.FloatRange(min=0.1),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="How often this worker tells the queue it is alive.",
)
@click.option(
    "--stalled-after",
    type=click.FloatRange(min=0.5),
    default=30.0,
    show_default=True,
    metavar="SECONDS",
    help="A worker silent this long is taken for lost; its run goes to the next free worker.",
)
def worker(
    db: str | None,
    provider: str | None,
    model: str | None,
    base_url: str | None,
    proxy: str | None,
    ca_bundle: str | None,
    max_tokens: int,
    timeout: float,
    trust_zone: str | None,
    script: str | None,
    isolate: tuple[str, ...],
    tool_timeout: float | None,
    config_path: Path | None,
    name: str | None,
    concurrency: int,
    max_rounds: int,
    privacy: str | None,
    heartbeat: float,
    stalled_after: float,
) -> None:
    """Run queued runs and approved resumptions from the shared store until stopped.

    Needs a PostgreSQL store (--db, $NR_LLM_DB or [store] db) and the host secret every
    machine of the store shares ($NR_LLM_SECRET or $NR_LLM_SECRET_FILE). Each run goes to one
    free worker; a worker that stops is replaced by the next free one after --stalled-after.
    """
    from nr_llm_core._signing import host_key
    from nr_llm_core.audit import AuditStoreError, claimant
    from nr_llm_core.messages import Role
    from nr_llm_core.providers import ScriptedProvider
    from nr_llm_core.providers.base import zone_of
    from nr_llm_core.stores import masked, open_store, store_kind

    config = read_config(config_path, isolate=isolate, tool_timeout=tool_timeout)
    target = store_target(db, config)
    if store_kind(target) != "postgresql":
        raise click.UsageError("a worker needs a PostgreSQL store: --db postgresql+psycopg://…")
    try:
        host_key(shared=True)
    except ConfigurationError as exc:
        raise click.UsageError(str(exc)) from None
    try:
        from nr_llm_core.stores._runner import RunExecutor
        from nr_llm_core.stores.queue import run_worker
    except ImportError:
        raise click.ClickException(
            "a worker needs the postgres extra: pip install 'nr-llm[postgres]'"
        ) from None
    options: dict[str, Any] = {
        "model": model,
        "base_url": base_url,
        "trust_zone": trust_zone,
        "script": script,
        "proxy": proxy,
        "ca_bundle": ca_bundle,
        "max_tokens": max_tokens,
        "timeout": timeout,
    }
    sample = make_provider(provider, **options)  # checks the settings before any job
    zone = zone_of(sample)
    close = getattr(sample, "close", None)
    if callable(close):
        close()

    def provider_for(state: Any) -> Any:
        made = make_provider(provider, **options)
        if isinstance(made, ScriptedProvider):
            # A script is stateless across processes: it goes on after the turns played.
            made.position = sum(1 for m in state.messages if m.role is Role.ASSISTANT)
        return made

    label = name or claimant("worker")
    with session() as stack:
        try:
            store = open_store(target, privacy=privacy)
        except AuditStoreError as exc:
            raise click.ClickException(visible(str(exc), keep_newlines=False)) from None
        stack.callback(store.close)
        host = stack.enter_context(open_host(config))
        executor = RunExecutor(
            store,  # type: ignore[arg-type]  # a PostgreSQL target opens a PostgresStore
            host,
            provider_for,
            name=label,
            zone=zone,
            privacy=privacy,
            max_iterations=max_rounds,
        )
        shown = visible(masked(target), keep_newlines=False)
        click.echo(f"{label}: taking runs from {shown} (zone {zone.value})", err=True)
        run_worker(
            target,
            executor,
            concurrency=concurrency,
            heartbeat=heartbeat,
            stalled_after=stalled_after,
        )
