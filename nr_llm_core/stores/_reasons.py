"""Why a run waits again after a worker handed it back: the reason codes the PostgreSQL store
records (``termination_reason`` of a waiting run) and what each means for an operator.

Kept apart from the store (which needs the ``postgres`` extra) so that ``nr-llm runs`` can
word them without importing it; one place, so the code a store writes and the note an
operator reads cannot drift (ADR 0038, 0039, 0041).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

__all__ = [
    "GIVEN_BACK",
    "NOTES",
    "NOT_STARTED",
    "NOT_STARTED_BEGUN",
    "NOT_VERIFIED",
    "NOT_VERIFIED_BEGUN",
]

#: A worker gave the approval back: it could not run an approved call (the tool is not
#: offered there, ADR 0029, ADR 0038).
GIVEN_BACK: Final = "approval_given_back"
#: A worker could not check the run's saved state (ADR 0038): not signed with that worker's
#: host secret, altered, or not a state it can read.
NOT_VERIFIED: Final = "state_not_verified"
#: The same, for a run whose approved calls a lost worker had begun (ADR 0039): they may have
#: run, so the run waits with that mark kept, and the worker that takes it after a new
#: approval answers them as possibly run, never runs them again.
NOT_VERIFIED_BEGUN: Final = "state_not_verified_calls_begun"
#: A worker took the run and stopped before it began anything of it (its provider could not
#: be made for it, or it was interrupted, ADR 0039, ADR 0041): nothing of the run changed.
NOT_STARTED: Final = "worker_could_not_start"
#: The same, for a run whose approved calls a lost worker had begun before (ADR 0041): this
#: worker changed nothing, but those calls may have run, and the mark stays.
NOT_STARTED_BEGUN: Final = "worker_could_not_start_calls_begun"

# What a run whose approved calls were begun by a worker that stopped says of them, whichever
# worker handed it back afterwards.
_CALLS_BEGUN: Final = (
    "the worker running its approved calls had begun them and stopped: they may have run. "
    "Approve again for workers that share this store's secret: they answer those calls as "
    "possibly run and never run them again; or discard it"
)
_NOT_STARTED: Final = (
    "a worker could not start on the run (its provider could not be made for it, or the "
    "worker was stopped; the worker's log says why)"
)

#: What each reason means for the operator, and what to do: ``runs show`` prints it for a
#: waiting run that carries the reason.
NOTES: Final[Mapping[str, str]] = MappingProxyType(
    {
        GIVEN_BACK: "a worker gave the approval back: it does not offer an approved call's "
        "tool (the worker's log names it); approve again where the tool is offered, or deny "
        "or discard it",
        NOT_VERIFIED: "a worker could not take the run: its saved state is not signed with "
        "that worker's host secret, or cannot be read there (the worker's log says which); "
        "approve again for workers that share this store's secret, or discard it",
        NOT_VERIFIED_BEGUN: "a worker could not take the run: its saved state is not signed "
        "with that worker's host secret, or cannot be read there (the worker's log says "
        f"which), and {_CALLS_BEGUN}",
        NOT_STARTED: f"{_NOT_STARTED}; nothing of the run changed. Approve it again for a "
        "worker that can, or discard it",
        NOT_STARTED_BEGUN: f"{_NOT_STARTED}; it changed nothing of the run, but {_CALLS_BEGUN}",
    }
)
