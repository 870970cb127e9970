"""``nr-llm run "PROMPT"``: one tool-loop run, its answer and a compact trace."""

from __future__ import annotations

import os
from typing import Any

import click

from nr_llm_core.cli._output import visible
from nr_llm_core.encoding import decode_json, encode_json_str
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


def _read_script(path: str) -> list[Any]:
    """A JSON list of turns: strings (final answers) or ``{"content", "tool_calls"}``."""
    try:
        with open(path, encoding="utf-8") as fh:
            turns = decode_json(fh.read())
    except (OSError, ValueError, RecursionError) as exc:
        raise click.BadParameter(f"cannot read the script ({type(exc).__name__})") from None
    if type(turns) is not list or not all(
        type(t) is str
        or (
            type(t) is dict
            and type(t.get("content", "")) is str
            and type(t.get("tool_calls", [])) is list
            and all(
                type(c) is dict
                and type(c.get("name")) is str
                and type(c.get("arguments", {})) is dict
                and type(c.get("id", "")) is str
                for c in t.get("tool_calls", [])
            )
        )
        for t in turns
    ):
        raise click.BadParameter(
            'a script is a JSON list of strings or {"content", "tool_calls": [{"name", '
            '"arguments", "id"}]} objects',
            param_hint="--script",
        )
    return turns


def make_provider(
    name: str | None,
    *,
    model: str | None = None,
    base_url: str | None = None,
    trust_zone: str | None = None,
    script: str | None = None,
) -> Provider:
    """The provider the CLI uses: ``scripted`` (the demo script, or ``script``, a JSON file of
    turns) when ``name`` is ``None``."""
    if name in (None, "scripted"):
        turns = DEMO_TURNS if script is None else _read_script(script)
        return ScriptedProvider(turns, trust_zone=trust_zone or TrustZone.LOCAL)
    if script is not None:
        raise click.BadParameter("--script is for the scripted provider", param_hint="--script")
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
@click.option(
    "--script",
    type=click.Path(dir_okay=False),
    default=None,
    help="A JSON list of turns for the scripted provider (default: the built-in demo).",
)
@click.option("--tools", "tools", default=None, help="Comma-separated tools to offer.")
@click.option("--max-rounds", type=click.IntRange(1), default=5, show_default=True)
@click.option(
    "--isolate",
    "isolate",
    multiple=True,
    metavar="NAME",
    help="Run this tool, or every tool of this distribution, in a worker process ('*': all).",
)
def run(
    prompt: str,
    provider: str | None,
    model: str | None,
    base_url: str | None,
    trust_zone: str | None,
    script: str | None,
    tools: str | None,
    max_rounds: int,
    isolate: tuple[str, ...],
) -> None:
    """Run PROMPT through the tool loop and print the answer and a compact trace."""
    chosen = make_provider(
        provider, model=model, base_url=base_url, trust_zone=trust_zone, script=script
    )
    allowed: Any = None
    if tools is not None:
        allowed = [t.strip() for t in tools.split(",") if t.strip()]
    with ToolHost.discover(isolate=isolate or None) as host:
        loop = ToolLoop(chosen, host, max_iterations=max_rounds, persister=_persister())
        result = loop.run(prompt, allowed=allowed)
    _report(result)
    if result.termination_reason is TerminationReason.FAILED:
        raise SystemExit(1)
