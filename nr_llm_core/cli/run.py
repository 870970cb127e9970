"""``nr-llm run "PROMPT"``: one tool-loop run, its answer and a compact trace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from nr_llm_core.cli._output import status
from nr_llm_core.cli._pending import recorded_level
from nr_llm_core.cli._providers import make_provider, provider_options
from nr_llm_core.cli._report import report
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
from nr_llm_core.loop import TerminationReason, ToolLoop
from nr_llm_core.privacy import PrivacyLevel, effective_level

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
    max_tokens: int,
    timeout: float,
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

    The run is recorded in the audit store at the privacy level; a run that waits for
    approval is continued with ``nr-llm runs approve|deny RUN_ID``.
    """
    allowed: Any = None
    if tools is not None:
        allowed = [t.strip() for t in tools.split(",") if t.strip()]
    if queue:
        _queue(prompt, allowed, privacy, db, no_record=no_record)
        return
    config = read_config(config_path, isolate=isolate, tool_timeout=tool_timeout)
    chosen = make_provider(
        provider,
        model=model,
        base_url=base_url,
        trust_zone=trust_zone,
        script=script,
        proxy=proxy,
        ca_bundle=ca_bundle,
        max_tokens=max_tokens,
        timeout=timeout,
    )
    with session() as stack:
        close_provider(stack, chosen)
        store = None if no_record else stack.enter_context(open_store(db))
        host = stack.enter_context(open_host(config))
        loop = ToolLoop(chosen, host, max_iterations=max_rounds, privacy=privacy, persister=store)
        with status(f"Running the tool loop ({type(chosen).__name__})"):
            result = loop.run(prompt, allowed=allowed)
        level = recorded_level(store, result.run_id, effective_level(loop.privacy).value)
    report(result, privacy_level=level, max_tokens=max_tokens)
    if result.termination_reason is TerminationReason.FAILED:
        raise SystemExit(1)


def _queue(
    prompt: str, allowed: Any, privacy: str | None, db: str | None, *, no_record: bool
) -> None:
    """``run --queue``: the run and its prompt go to the shared store, the queue gets its id."""
    from nr_llm_core.audit import AuditStoreError
    from nr_llm_core.cli._output import visible
    from nr_llm_core.cli._store import store_target
    from nr_llm_core.stores import store_kind

    if no_record:
        raise click.UsageError("--queue records the run: it cannot go with --no-record")
    target = store_target(db)
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
