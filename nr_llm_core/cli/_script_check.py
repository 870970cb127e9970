"""``runs approve|deny`` with the scripted provider refuse a script that did not play the run.

A script is stateless across processes: a resumed run goes on from the turn it had reached
(:attr:`~nr_llm_core.providers.ScriptedProvider.position`), in whatever script the command
was given. Without ``--script`` that is the demo's, so a run begun with ``--script`` went on
with the demo's turns, silently. The turns a run has played are in its saved state (kept
verbatim at every privacy level): the script given now must begin with them, or the decision
is refused before anything is shown or claimed, unless ``--allow-provider-change`` says to go
on with other turns. Nothing is recorded for this: the comparison is made in memory, so no
script byte reaches the store.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from nr_llm_core.approval import SuspendedRunState
from nr_llm_core.cli._output import visible
from nr_llm_core.cli._provider_check import ALLOW_FLAG
from nr_llm_core.errors import ApprovalError
from nr_llm_core.messages import Role
from nr_llm_core.providers import ScriptedProvider

__all__ = ["check_script"]

Played = tuple[str, tuple[tuple[str, Any], ...]]


def _turn(turn: object) -> Played | None:
    """A script's turn as the run would have recorded it: its text and its calls (name and
    arguments; ids are the provider's own); ``None`` for a turn that is a ``Completion``."""
    if isinstance(turn, str):
        return turn, ()
    if isinstance(turn, Mapping):
        calls = tuple(
            (str(c.get("name")), dict(c.get("arguments") or {}))
            for c in turn.get("tool_calls") or ()
            if isinstance(c, Mapping)
        )
        return str(turn.get("content") or ""), calls
    return None


def check_script(
    data: Mapping[str, Any], provider: object, *, allowed: bool, run_id: str, given: bool
) -> None:
    """Refuse (``ClickException``) to decide on the stored state ``data`` with the scripted
    ``provider`` when its turns do not begin with the ones the run played: the demo's for a
    run begun with ``--script`` (``given`` false), or another script's. ``allowed``
    (``--allow-provider-change``) lets it go on with them. A state that cannot be read or
    does not verify is left to the decision, which refuses it."""
    if not isinstance(provider, ScriptedProvider) or allowed:
        return
    try:
        state = SuspendedRunState.from_dict(data)
        state.verify()  # an altered state is the decision's to refuse, in its own words
    except ApprovalError:
        return
    played = [
        (m.content or "", tuple((c.name, c.arguments) for c in m.tool_calls))
        for m in state.messages
        if m.role is Role.ASSISTANT
    ]
    script = [_turn(t) for t in provider.turns[: len(played)]]
    if len(script) == len(played) and all(
        s is None or s == p for s, p in zip(script, played, strict=True)
    ):
        return
    run = visible(run_id, keep_newlines=False)
    what = "the --script given" if given else "the demo script (no --script was given)"
    raise click.ClickException(
        f"run {run!r} played {len(played)} turn(s) of its script, and {what} does not begin "
        "with them: it would go on with turns that were not written for this run. Nothing was "
        "decided and the run still waits: pass the --script the run was started with, or "
        f"{ALLOW_FLAG} to go on with these turns anyway."
    )
