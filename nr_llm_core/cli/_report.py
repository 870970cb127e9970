"""How a finished, failed or suspended run is printed: its answer, compact trace and waits."""

from __future__ import annotations

import re

import click

from nr_llm_core.cli._output import visible
from nr_llm_core.cli._pending import Invocation, render_pending
from nr_llm_core.encoding import encode_json_str
from nr_llm_core.loop import UNANSWERED_NOTE, TerminationReason, ToolLoopResult
from nr_llm_core.trace import RunStep, StepKind

__all__ = ["outcome", "report"]


_PREVIEW_CHARS = 80


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
        line = f"  {step.round:>2} model  {what}"
        if calls and UNANSWERED_NOTE in (d.get("notes") or ()):
            # The run ends "completed" with no answer: say why, under the calls.
            line += "\n        (not answered: this run offered no tools, so nothing ran)"
        return line
    if step.kind is StepKind.TOOL:
        mark = " (error)" if d.get("tool_is_error") else ""
        name = visible(str(d.get("tool_name")))
        return f"  {step.round:>2} tool   {name}{mark}: {_preview(str(d.get('tool_result', '')))}"
    if step.kind is StepKind.APPROVAL:
        return f"  {step.round:>2} approval {visible(encode_json_str(d.get('approvals', {})))}"
    if step.kind is StepKind.ERROR:
        return f"  {step.round:>2} error  {visible(str(d.get('reason', '')))}"
    return None  # request steps repeat the conversation; not shown


def report(
    result: ToolLoopResult,
    *,
    privacy_level: object,
    max_tokens: int | None = None,
    how: Invocation | None = None,
) -> None:
    """Print a run's answer, its compact trace, and what it waits for.

    A suspended run's pending calls are shown whole (see
    :func:`~nr_llm_core.cli._pending.render_pending`); ``privacy_level`` is the level the run
    is recorded at, which decides whether their arguments are shown. ``max_tokens`` is the
    answer's limit the run had (``--max-tokens``), named when an answer was cut there; ``how``
    what this command knows of how a decision must be invoked (see
    :func:`~nr_llm_core.cli._pending.decide_command`)."""
    if result.content:
        click.echo(visible(result.content))
    click.echo("")
    click.echo(f"trace (run {visible(result.run_id)}):")
    for step in result.trace.steps if result.trace is not None else ():
        line = _step_line(step)
        if line is not None:
            click.echo(line)
    usage = result.usage
    # The error the trace already printed (its error step, whole) is not printed again.
    steps = result.trace.steps if result.trace is not None else ()
    traced = result.error is not None and any(
        step.kind is StepKind.ERROR and step.to_dict().get("reason") == result.error
        for step in steps
    )
    if result.termination_reason is TerminationReason.FAILED:
        # The loop counts the request that failed: it brought no completion.
        arrived = max(0, result.iterations - 1)
        counted = "no completion arrived" if not arrived else f"after {arrived} completion(s)"
        summary = f"failed: {_failure(result.error, above=traced)}; {counted}"
    else:
        summary = f"{result.termination_reason.value} after {result.iterations} completion(s)"
    summary += f"; tokens {usage.input_tokens} in / {usage.output_tokens} out"
    if result.truncated:
        summary += "; truncated at the round cap"
    click.echo(summary)
    if result.termination_reason is TerminationReason.MAX_TOKENS:
        limit = "--max-tokens" if max_tokens is None else f"--max-tokens {max_tokens}"
        click.echo(f"the answer was cut at the token limit ({limit}): raise it for a whole answer")
    if result.error and not traced:
        click.echo(f"error: {visible(result.error)}", err=True)
    state = result.suspended
    if state is not None:
        click.echo(render_pending(state, privacy_level, decide_run_id=result.run_id, how=how))


# How the HTTP adapters word a provider that could not be reached or refused the request
# (nr_llm_core.providers._http): host words, the endpoint shown without credentials.
_UNREACHABLE = re.compile(r"provider error: could not reach .+? at (\S+)")
_REFUSED = re.compile(r"provider error: .+? at (\S+) refused the request")
_CREDENTIALS = re.compile(r"provider error: .+? refused the credentials")


def _failure(error: str | None, *, above: bool) -> str:
    """What a failed run's summary says failed: a provider that could not be reached or
    refused the request, with its endpoint; else the provider (the error line says how: the
    trace's, ``above``, or the one printed below)."""
    text = error or ""
    reached = _UNREACHABLE.match(text)
    if reached is not None:
        return f"the provider could not be reached ({visible(reached.group(1))})"
    refused = _REFUSED.match(text)
    if refused is not None:
        return f"the provider refused the request ({visible(refused.group(1))})"
    if _CREDENTIALS.match(text):
        return "the provider refused the credentials"
    return f"the provider failed (the error {'above' if above else 'below'} says why)"


def outcome(result: ToolLoopResult) -> str:
    """The word a progress line ends with for ``result``: ``done`` only for a completed run
    (a failed run is returned, not raised, so the line cannot tell by itself)."""
    reason = result.termination_reason
    if reason is TerminationReason.COMPLETED:
        return "done"
    if reason is TerminationReason.FAILED:
        return "failed"
    if reason is TerminationReason.AWAITING_APPROVAL:
        return "waiting for approval"
    return f"stopped ({reason.value})"
