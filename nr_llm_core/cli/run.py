"""``nr-llm run "PROMPT"``: one tool-loop run, its answer and a compact trace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from nr_llm_core.cli._output import status
from nr_llm_core.cli._providers import make_provider, provider_options
from nr_llm_core.cli._report import report
from nr_llm_core.cli._store import db_option, open_store
from nr_llm_core.host import ToolHost
from nr_llm_core.loop import TerminationReason, ToolLoop
from nr_llm_core.privacy import PrivacyLevel

__all__ = ["run"]


@click.command("run")
@click.argument("prompt")
@provider_options
@click.option("--tools", "tools", default=None, help="Comma-separated tools to offer.")
@click.option("--max-rounds", type=click.IntRange(1), default=5, show_default=True)
@click.option(
    "--isolate",
    "isolate",
    multiple=True,
    metavar="NAME",
    help="Run this tool, or every tool of this distribution, in a worker process ('*': all).",
)
@click.option(
    "--privacy",
    type=click.Choice([level.value for level in PrivacyLevel], case_sensitive=False),
    default=None,
    help="What the audit store keeps of each step (default: $NR_LLM_PRIVACY_LEVEL, else metadata).",
)
@db_option
@click.option("--no-record", is_flag=True, help="Do not write the run to the audit store.")
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
    privacy: str | None,
    db: Path | None,
    no_record: bool,
) -> None:
    """Run PROMPT through the tool loop and print the answer and a compact trace.

    The run is recorded in the audit store at the privacy level; a run that waits for
    approval is continued with ``nr-llm runs approve|deny RUN_ID``.
    """
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
    allowed: Any = None
    if tools is not None:
        allowed = [t.strip() for t in tools.split(",") if t.strip()]
    store = None if no_record else open_store(db)
    try:
        with ToolHost.discover(isolate=isolate or None) as host:
            loop = ToolLoop(
                chosen, host, max_iterations=max_rounds, privacy=privacy, persister=store
            )
            with status(f"Running the tool loop ({type(chosen).__name__})"):
                result = loop.run(prompt, allowed=allowed)
    finally:
        if store is not None:
            store.close()
    report(result, max_tokens=max_tokens)
    if result.termination_reason is TerminationReason.FAILED:
        raise SystemExit(1)
