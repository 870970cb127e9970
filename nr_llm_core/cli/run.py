"""``nr-llm run "PROMPT"``: one tool-loop run, its answer and a compact trace."""

from __future__ import annotations

import os
from typing import Any

import click

from nr_llm_core.cli._output import visible
from nr_llm_core.encoding import encode_json_str
from nr_llm_core.host import ToolHost
from nr_llm_core.loop import RunRecorder, TerminationReason, ToolLoop, ToolLoopResult
from nr_llm_core.providers import (
    DEMO_TURNS,
    AnthropicProvider,
    OpenAIChatProvider,
    Provider,
    ScriptedProvider,
    TrustZone,
)
from nr_llm_core.trace import RunStep, StepKind

__all__ = ["make_provider", "run"]

_PREVIEW_CHARS = 80
_DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-3-5-sonnet-latest"}


def make_provider(
    name: str | None,
    *,
    model: str | None = None,
    base_url: str | None = None,
    trust_zone: str | None = None,
) -> Provider:
    """The provider the CLI uses: ``scripted`` (the demo script) when ``name`` is ``None``."""
    if name in (None, "scripted"):
        return ScriptedProvider(DEMO_TURNS, trust_zone=trust_zone or TrustZone.LOCAL)
    zone = TrustZone(trust_zone) if trust_zone else TrustZone.EXTERNAL
    chosen = model or _DEFAULT_MODELS[name]
    if name == "openai":
        url = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        return OpenAIChatProvider(url, chosen, trust_zone=zone)
    if name == "anthropic":
        url = base_url or "https://api.anthropic.com"
        return AnthropicProvider(chosen, base_url=url, trust_zone=zone)
    raise click.BadParameter(f"unknown provider {name!r}", param_hint="--provider")


def _persister() -> RunRecorder | None:
    """The audit store for CLI runs. Hook for the lead: return an ``AgentRunPersister`` (with
    the ``--privacy`` level) once it is merged; ``runs approve|deny`` then resume through
    ``ToolLoop.resume(run_id, approved=..., digest=...)``."""
    return None


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


def _report(result: ToolLoopResult) -> None:
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
        waiting = set(state.needs_approval)
        for call in state.pending:
            flag = "needs approval" if call.id in waiting else "runs on resume"
            args = _preview(encode_json_str(call.arguments))
            click.echo(f"  {visible(call.id)}  {visible(call.name)} {args}  [{flag}]")


@click.command("run")
@click.argument("prompt")
@click.option(
    "--provider",
    type=click.Choice(["scripted", "openai", "anthropic"]),
    default=None,
    help="Model provider (default: the offline scripted demo).",
)
@click.option("--model", default=None, help="Model name for openai/anthropic.")
@click.option("--base-url", default=None, help="API root, e.g. http://localhost:11434/v1.")
@click.option(
    "--trust-zone",
    type=click.Choice([z.value for z in TrustZone]),
    default=None,
    help="Where the provider runs (default external for HTTP providers): limits tools offered.",
)
@click.option("--tools", "tools", default=None, help="Comma-separated tools to offer.")
@click.option("--max-rounds", type=click.IntRange(1), default=5, show_default=True)
def run(
    prompt: str,
    provider: str | None,
    model: str | None,
    base_url: str | None,
    trust_zone: str | None,
    tools: str | None,
    max_rounds: int,
) -> None:
    """Run PROMPT through the tool loop and print the answer and a compact trace."""
    chosen = make_provider(provider, model=model, base_url=base_url, trust_zone=trust_zone)
    allowed: Any = None
    if tools is not None:
        allowed = [t.strip() for t in tools.split(",") if t.strip()]
    loop = ToolLoop(chosen, ToolHost.discover(), max_iterations=max_rounds, persister=_persister())
    result = loop.run(prompt, allowed=allowed)
    _report(result)
    if result.termination_reason is TerminationReason.FAILED:
        raise SystemExit(1)
