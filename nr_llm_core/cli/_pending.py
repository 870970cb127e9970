"""A suspended run's pending tool calls as the terminal text an approver reads, complete."""

from __future__ import annotations

import textwrap

from nr_llm_core.approval import SuspendedRunState, approver_view
from nr_llm_core.audit import AgentRunPersister, AuditStoreError
from nr_llm_core.cli._output import visible, visible_json

__all__ = ["not_shown_note", "recorded_level", "render_pending"]

_INDENT = "    "


def recorded_level(store: AgentRunPersister | None, run_id: str, fallback: object) -> object:
    """The privacy level ``run_id`` is recorded at in ``store`` (``fallback`` when there is no
    store or no such run; ``None``, shown as nothing, when the store cannot be read): what
    decides whether its pending arguments are shown."""
    if store is None:
        return fallback
    try:
        record = store.get_run(run_id)
    except AuditStoreError:
        return None  # fail closed: an unreadable level shows no arguments
    return fallback if record is None else record["privacy_level"]


def not_shown_note(privacy_level: object) -> str:
    """The line shown instead of the arguments of a run at ``privacy_level``."""
    level = privacy_level if type(privacy_level) is str else "unknown"
    return f"arguments not shown at privacy level {visible(level, keep_newlines=False)}"


def render_pending(
    state: SuspendedRunState, privacy_level: object, *, decide_run_id: str | None = None
) -> str:
    """The pending calls of ``state``: the digest, then each call's id, tool name, whether it
    needs approval or runs on resume, and its complete arguments as pretty JSON (see
    :func:`~nr_llm_core.cli._output.visible_json`), never cut. At privacy level ``none`` (or
    an unknown one) a note stands in for the arguments. ``decide_run_id`` adds the command
    line that decides. Every stored string is made visible."""
    view = approver_view(state, privacy_level)
    digest = visible(view["digest"], keep_newlines=False)
    lines = [f"awaiting approval (digest {digest}):"]
    if decide_run_id is not None:
        run = visible(decide_run_id, keep_newlines=False)
        lines.append(f"  decide with: nr-llm runs approve|deny {run} --digest {digest}")
    if not view["arguments_shown"]:
        lines.append(f"  ({not_shown_note(privacy_level)})")
    for call in view["calls"]:
        flag = "needs approval" if call["needs_approval"] else "runs on resume"
        call_id = visible(call["id"], keep_newlines=False)
        name = visible(call["name"], keep_newlines=False)
        lines.append(f"  {call_id}  {name}  [{flag}]")
        if "arguments_error" in call:
            error = visible(call["arguments_error"], keep_newlines=False)
            lines.append(f"{_INDENT}(invalid arguments, answered with an error: {error})")
        elif "arguments" in call:
            lines.append(textwrap.indent(visible_json(call["arguments"]), _INDENT))
    return "\n".join(lines)
