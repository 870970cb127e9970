"""``nr-llm run "PROMPT"``: one tool-loop run, its answer and a compact trace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from nr_llm_core.audit import AgentRunPersister, AuditStoreError, default_db_path
from nr_llm_core.cli._output import status, visible
from nr_llm_core.cli._providers import make_provider, provider_options
from nr_llm_core.cli.runs import db_option
from nr_llm_core.encoding import encode_json_str
from nr_llm_core.host import ToolHost
from nr_llm_core.loop import TerminationReason, ToolLoop, ToolLoopResult
from nr_llm_core.privacy import PrivacyLevel
from nr_llm_core.trace import RunStep, StepKind

__all__ = ["open_store", "report", "run"]


_PREVIEW_CHARS = 80


def open_store(db: Path | None) -> AgentRunPersister:
    """The audit store CLI runs record into (created on first use)."""
    path = db if db is not None else default_db_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        return AgentRunPersister(path)
    except AuditStoreError as exc:
        raise click.ClickException(str(exc)) from None


def _preview(text: str) -> str:
    line = visible(text, keep_newlines=False)
    return line if len(line) <= _PREVIEW_CHARS else line[: _PREVIEW_CHARS - 1] + "…"


def _step_line(step: RunStep) -> str | None:
    d = step.to_dict()
    if step.kind is StepKind.LLM:
        calls = d.get("requested_tool_calls") or []
        what = (
            "asks for " + ", ".join(visible(str(c.get("name", "?"))) for c in calls)
            if calls
            else "answers"
        )
        return f"  {step.round:>2} model  {what}"
    if step.kind is StepKind.TOOL:
        mark = " (error)" if d.get("tool_is_error") else ""
        name = visible(str(d.get("tool_name")))
        return f"  {step.round:>2} tool   {name}{mark}: {_preview(str(d.get('tool_result', '')))}"
    if step.kind is StepKind.APPROVAL:
        return f"  {step.round:>2} approval {visible(encode_json_str(d.get('approvals', {})))}"
    if step.kind is StepKind.ERROR:
        return f"  {step.round:>2} error  {visible(str(d.get('reason', '')))}"
    return None  # request steps repeat the conversation; not shown


def report(result: ToolLoopResult) -> None:
    """Print a run's answer, its compact trace, and what it waits for."""
    if result.content:
        click.echo(visible(result.content))
    click.echo("")
    click.echo(f"trace (run {visible(result.run_id)}):")
    for step in result.trace.steps if result.trace is not None else ():
        line = _step_line(step)
        if line is not None:
            click.echo(line)
    usage = result.usage
    summary = (
        f"{result.termination_reason.value} after {result.iterations} completion(s); "
        f"tokens {usage.input_tokens} in / {usage.output_tokens} out"
    )
    if result.truncated:
        summary += "; truncated at the round cap"
    click.echo(summary)
    if result.error:
        click.echo(f"error: {visible(result.error)}", err=True)
    state = result.suspended
    if state is not None:
        click.echo(f"awaiting approval (digest {state.digest}):")
        click.echo(
            f"  decide with: nr-llm runs approve|deny {visible(result.run_id)} "
            f"--digest {state.digest}"
        )
        waiting = set(state.needs_approval)
        for call in state.pending:
            flag = "needs approval" if call.id in waiting else "runs on resume"
            args = _preview(encode_json_str(call.arguments))
            click.echo(f"  {visible(call.id)}  {visible(call.name)} {args}  [{flag}]")


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
    report(result)
    if result.termination_reason is TerminationReason.FAILED:
        raise SystemExit(1)
