"""A suspended run's pending tool calls as an approver sees them on the command line."""

from __future__ import annotations

import os
import shlex
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, final

import attrs
import click

from nr_llm_core._audit_suspension import unusable
from nr_llm_core.approval import (
    SuspendedRunState,
    approver_view,
    arguments_shown,
    read_stored_state,
)
from nr_llm_core.audit import AuditStoreError
from nr_llm_core.cli._output import page, visible, visible_json
from nr_llm_core.cli._provider_check import default_record, provider_flags, recorded_words
from nr_llm_core.config import Config
from nr_llm_core.errors import ApprovalError
from nr_llm_core.host import ENV_ENABLE_TOOLS
from nr_llm_core.privacy import PRIVACY_ENV_VAR, approver_level
from nr_llm_core.stores import AuditStore

__all__ = [
    "Invocation",
    "decide_command",
    "level_stored_with",
    "not_shown_note",
    "pending_json",
    "pending_text",
    "per_call",
    "recorded_level",
    "render_pending",
    "show_before_deciding",
]

_INDENT = "    "
#: Stands for a script path the command does not know (``runs show``: it is not recorded).
_UNKNOWN_SCRIPT: Final = "<the script you ran with>"


@final
@attrs.frozen(kw_only=True)
class Invocation:
    """What the command printing a waiting run knows of how a decision must be invoked:
    ``config`` (its configuration: which provider a command without provider options
    builds), ``script`` (the ``--script`` path the run played, when this command was given
    it), ``db`` and ``config_path`` (``--db`` and ``--config`` as given, repeated)."""

    config: Config | None = None
    script: str | None = None
    db: str | None = None
    config_path: Path | None = None


def _word(text: str) -> str:
    return shlex.quote(visible(text, keep_newlines=False))


def decide_command(state: SuspendedRunState, run_id: str, how: Invocation) -> str:
    """The command line that decides on ``state`` as printed, one the decision accepts: the
    provider and model it was suspended with when they are not what a command without
    provider options builds (ADR 0033), its ``--script`` (the path, or a placeholder when it
    is not known), ``--db``/``--config`` as given, and ``NR_LLM_ENABLE_TOOLS=`` before it for
    a pending call's tool this shell enables through that variable."""
    digest = visible(state.digest, keep_newlines=False)
    words = [f"nr-llm runs approve|deny {visible(run_id, keep_newlines=False)} --digest {digest}"]
    record = state.provider
    if record is not None:
        default = None if how.config is None else default_record(how.config)
        flags = provider_flags(record)
        if flags is not None and record != default:
            words.append(flags)
        if record.kind == "ScriptedProvider":
            words.append(f"--script {_UNKNOWN_SCRIPT if how.script is None else _word(how.script)}")
    if how.db is not None:
        words.append(f"--db {_word(how.db)}")
    if how.config_path is not None:
        words.append(f"--config {_word(str(how.config_path))}")
    enabled = {n.strip() for n in os.environ.get(ENV_ENABLE_TOOLS, "").split(",") if n.strip()}
    # Named even when the config file enables it too (the list is a union; harmless then):
    # without it a call this run waits on would be answered "disabled" when it resumes.
    needed = sorted(enabled & {call.name for call in state.pending})
    prefix = f"{ENV_ENABLE_TOOLS}={_word(','.join(needed))} " if needed else ""
    return prefix + " ".join(words)


def recorded_level(store: AuditStore | None, run_id: str, fallback: object) -> object:
    """The privacy level ``run_id`` is recorded at in ``store`` (``fallback`` when there is no
    store or no such run; ``None``, shown as nothing, when the store cannot be read): what
    decides whether its pending arguments are shown."""
    if store is None:
        return fallback
    try:
        record = store.get_run(run_id)
    except AuditStoreError:
        return None  # fail closed: an unreadable level shows no arguments
    return fallback if record is None else approver_level(record["privacy_level"])


def level_stored_with(store: AuditStore, run_id: str) -> object:
    """The privacy level text stored with ``run_id`` (``None`` when it cannot be read): where
    it differs from :func:`recorded_level`, ``NR_LLM_PRIVACY_LEVEL`` made the view stricter."""
    try:
        record = store.get_run(run_id)
    except AuditStoreError:
        return None
    return None if record is None else record["privacy_level"]


def not_shown_note(privacy_level: object) -> str:
    """The line shown instead of the arguments of a run at ``privacy_level``."""
    level = privacy_level if type(privacy_level) is str else "unknown"
    return f"arguments not shown at privacy level {visible(level, keep_newlines=False)}"


def render_pending(
    state: SuspendedRunState,
    privacy_level: object,
    *,
    decide_run_id: str | None = None,
    how: Invocation | None = None,
) -> str:
    """The pending calls of ``state``: the digest, then each call's id, tool name, whether it
    needs approval or runs on resume, and its complete arguments as pretty JSON (see
    :func:`~nr_llm_core.cli._output.visible_json`), never cut. At privacy level ``none`` (or
    an unknown one) a note stands in for the arguments. ``decide_run_id`` adds the command
    line that decides (:func:`decide_command`, with what ``how`` knows). Every stored string
    is made visible."""
    view = approver_view(state, privacy_level)
    digest = visible(view["digest"], keep_newlines=False)
    lines = [f"awaiting approval (digest {digest}):"]
    if decide_run_id is not None:
        command = decide_command(state, decide_run_id, how or Invocation())
        lines.append(f"  decide with: {command}")
    if state.provider is not None:  # a decision with another provider is refused (ADR 0033)
        lines.append(f"  suspended with provider {recorded_words(state.provider)}")
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


def _read(
    data: Mapping[str, Any], run_id: str | None
) -> tuple[SuspendedRunState | None, str | None]:
    # The stored state, and why a decision on it would be refused (None: it would not be),
    # in the claim's own words (ADR 0036): never a byte of the state.
    try:
        state = read_stored_state(data)
    except ApprovalError as exc:
        return None, str(exc)
    if run_id is not None and state.run_id != run_id:
        return state, "it is another run's state"
    try:
        state.verify()
    except ApprovalError as exc:
        return state, str(exc)
    return state, None


def pending_text(
    data: Mapping[str, Any],
    privacy_level: object,
    *,
    run_id: str,
    how: Invocation | None = None,
) -> str:
    """``runs show``'s section for a stored suspended state: :func:`render_pending` (``how``:
    see :func:`decide_command`), with a warning when the state would be refused (altered,
    malformed)."""
    state, problem = _read(data, run_id)
    if state is None:
        return f"awaiting approval: {visible(unusable(run_id, str(problem)), keep_newlines=False)}"
    text = render_pending(state, privacy_level, decide_run_id=run_id, how=how)
    if problem is not None:
        warning = visible(problem, keep_newlines=False)
        text += f"\n  warning: {warning}; a decision on it will be refused"
    return text


def pending_json(
    data: Mapping[str, Any] | None, privacy_level: object, *, run_id: str | None = None
) -> dict[str, Any] | None:
    """``runs show --json``'s ``pending``: the approver's view (see
    :func:`~nr_llm_core.approval.approver_view`) with a ``problem`` when the state would be
    refused; ``None`` when the run is not waiting."""
    if data is None:
        return None
    state, problem = _read(data, run_id)
    view: dict[str, Any] = {} if state is None else approver_view(state, privacy_level)
    if problem is not None:
        view["problem"] = problem if run_id is None else unusable(run_id, problem)
    return view


def per_call(
    state: SuspendedRunState, approve: bool, calls: tuple[str, ...], denied: tuple[str, ...]
) -> bool | dict[str, bool]:
    """The decision ``runs approve|deny`` passes on: ``approve`` for every call that waits
    (no ``--call``/``--deny``), else call id -> approved for each of them: ``--call`` ids
    approved and every other call denied (fail closed, as the API decides), or, with only
    ``--deny``, those denied and the others approved. An id that names no call waiting for
    approval, or one given to both, is refused (``UsageError``) before anyone is asked."""
    if not calls and not denied:
        return approve
    waiting = state.needs_approval
    both = sorted(set(calls) & set(denied))
    if both:
        raise click.UsageError(f"--call and --deny both name {visible(both[0])!r}")
    for call_id in (*calls, *denied):
        if call_id not in waiting:
            named = ", ".join(visible(c, keep_newlines=False) for c in waiting)
            raise click.UsageError(
                f"no call of the run waits for approval with the id "
                f"{visible(call_id[:80], keep_newlines=False)!r}; the calls that wait: {named}"
            )
    if calls:
        return {call_id: call_id in calls for call_id in waiting}
    return {call_id: call_id not in denied for call_id in waiting}


def _question(state: SuspendedRunState, decision: bool | Mapping[str, bool]) -> str:
    if isinstance(decision, bool):
        verb = "Approve" if decision else "Deny"
        return (
            f"{verb} the {len(state.needs_approval)} call(s) marked needs approval and resume "
            "the run?"
        )
    approved = [visible(c, keep_newlines=False) for c, yes in decision.items() if yes]
    denied = [visible(c, keep_newlines=False) for c, yes in decision.items() if not yes]
    parts = [f"approve {', '.join(approved)}"] if approved else []
    parts += [f"deny {', '.join(denied)}"] if denied else []
    said = " and ".join(parts)
    return f"{said[0].upper()}{said[1:]}, then resume the run?"


def show_before_deciding(
    data: Mapping[str, Any],
    privacy_level: object,
    *,
    approve: bool,
    blind: bool,
    yes: bool,
    run_id: str | None = None,
    stored_level: object = None,
    calls: tuple[str, ...] = (),
    denied: tuple[str, ...] = (),
) -> tuple[SuspendedRunState, bool | dict[str, bool]]:
    """Show the pending calls a decision applies to; return their state and the decision
    (:func:`per_call`: ``approve`` for all, or per call from ``calls``/``denied``).

    Refuses (``ClickException``) a state that would be refused anyway, and an approval whose
    arguments cannot be shown (privacy level none) unless it is explicitly ``blind``. When
    stdin is a terminal it then asks, default no (``yes`` skips the question); without a
    terminal it never asks, as a script expects.
    """
    state, problem = _read(data, run_id)
    if state is None or problem is not None:
        words = str(problem) if run_id is None else unusable(run_id, str(problem))
        raise click.ClickException(visible(words, keep_newlines=False))
    decision = per_call(state, approve, calls, denied)
    approves = decision if isinstance(decision, bool) else any(decision.values())
    if approves and not arguments_shown(privacy_level) and not blind:
        level = visible(str(privacy_level), keep_newlines=False)
        where = f"is recorded at privacy level {level}"
        if type(stored_level) is str and stored_level != privacy_level:
            # The stricter level is this command's (the variable), not the run's.
            where = (
                f"is recorded at privacy level {visible(stored_level, keep_newlines=False)}, "
                f"and {PRIVACY_ENV_VAR}={level} makes this command show it at {level}"
            )
        raise click.ClickException(
            f"run {visible(state.run_id, keep_newlines=False)!r} {where}: its pending calls' "
            "arguments are not shown, so they cannot be checked here. Pass --blind to approve "
            "them unseen, or deny the run."
        )
    page(render_pending(state, privacy_level))
    if yes or not sys.stdin.isatty():
        return state, decision
    if not click.confirm(_question(state, decision), default=False, err=True):
        click.echo("Nothing decided: the run is still waiting.", err=True)
        raise SystemExit(1)
    return state, decision
