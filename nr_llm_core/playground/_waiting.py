"""What the audit store says of a run that may wait for approval, in the playground's words.

The store is the truth about whether a run waits (ADR 0037): the playground holds a suspended
run's provider in memory to go on with it, but what it shows of the run (its pending calls,
why a decision would be refused, or that it is gone and who ended it) is read here, from the
store. Every reason is host words: a claim's who and when, a state's fault as the store's own
check words it (:func:`~nr_llm_core._audit_suspension.checked`), never a byte of the state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from nr_llm_core._audit_suspension import checked, lost, unusable
from nr_llm_core.approval import SuspendedRunState, approver_view, read_stored_state
from nr_llm_core.audit import AuditStoreError, SuspendedStateError
from nr_llm_core.errors import ApprovalError, ProviderChangedError
from nr_llm_core.privacy import approver_level
from nr_llm_core.stores import AuditStore

__all__ = [
    "NOT_HELD",
    "PROVIDER_CHANGED",
    "gone_view",
    "held_view",
    "refusal_words",
    "store_view",
]

_MAX_REASON: Final = 300

#: Why a waiting run cannot be decided here: this process does not hold its provider.
NOT_HELD: Final = (
    "this playground does not hold the run's provider (it was suspended elsewhere, or before "
    "this server started): decide it with `nr-llm runs approve|deny`, or discard it here"
)

#: A decision refused because the provider is not the one that wrote the pending turn. Not
#: the error's own text: that quotes the model name the state recorded.
PROVIDER_CHANGED: Final = (
    "the provider this playground would go on with is not the one (or not the model) that "
    "wrote the pending turn: nothing ran and the run still waits; decide it with "
    "`nr-llm runs approve|deny --allow-provider-change`, or discard it"
)


def refusal_words(exc: BaseException) -> str:
    """Why a decision was refused, in host words: an error of the loop or the store, whose
    messages name the run, the claimant and the kind of fault (a changed provider in this
    module's words, which quote no recorded model); anything else by its kind only."""
    if isinstance(exc, ProviderChangedError):
        return PROVIDER_CHANGED
    if isinstance(exc, ApprovalError | AuditStoreError):
        return str(exc)[:_MAX_REASON]
    return "the decision could not be applied"


def gone_view(run_id: str, reason: str, status: str | None = None) -> dict[str, Any]:
    """A run that no longer waits, and why (who resumed or discarded it, or that it is
    unknown or ended); ``status`` its status in the store (``None``: no such run)."""
    return {"run_id": run_id, "waiting": False, "status": status, "reason": reason[:_MAX_REASON]}


def held_view(
    state: SuspendedRunState, privacy: object, *, decidable: bool, problem: str | None = None
) -> dict[str, Any]:
    """A waiting run as the approval view shows it: the digest, the level and whether the
    arguments are shown (never at ``none``), the provider it was suspended with, the pending
    calls; ``decidable`` when this playground can apply a decision, ``problem`` the reason
    a decision would be refused."""
    view = approver_view(state, privacy)
    return {
        "run_id": state.run_id,
        "waiting": True,
        "digest": state.digest,
        "privacy": view["privacy_level"],
        "arguments_shown": view["arguments_shown"],
        "suspended_with": view["provider"],
        "pending": view["calls"],
        "decidable": decidable and problem is None,
        "problem": problem,
    }


def _unreadable(run_id: str, privacy: object, problem: str) -> dict[str, Any]:
    """A waiting run whose state is lost, or fails the checks a claim makes: no call of it is
    shown (its bytes are not what this host wrote), only the reason; discard ends it."""
    level = privacy if type(privacy) is str else None
    return {
        "run_id": run_id,
        "waiting": True,
        "digest": None,
        "privacy": level,
        "arguments_shown": False,
        "suspended_with": None,
        "pending": [],
        "decidable": False,
        "problem": problem[:_MAX_REASON],
    }


def store_view(
    store: AuditStore,
    run_id: str,
    held: SuspendedRunState | None,
    record: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """What ``store`` says of ``run_id``: gone (:func:`gone_view`), or waiting with its
    pending calls as stored (:func:`held_view`) when its state passes the checks a claim
    makes. ``held`` is the state this playground holds the provider for, if any: the run is
    decidable here only while the store waits on that very turn. ``record`` is the run's
    record when the caller has just read it (read once per request); else it is read here.

    Raises :class:`~nr_llm_core.audit.AuditStoreError` when the store cannot be read."""
    if record is None:
        record = store.get_run(run_id)
    if record is None or record["status"] != "suspended":
        status = None if record is None else str(record["status"])
        return gone_view(run_id, str(store.resume_refusal(run_id)), status)
    privacy = approver_level(record["privacy_level"])  # NR_LLM_PRIVACY_LEVEL when stricter
    try:
        data = store.load_suspended(run_id)
    except SuspendedStateError as exc:
        return _unreadable(run_id, privacy, str(exc))
    if data is None:  # suspended without a state file to read (or ended meanwhile)
        return _unreadable(run_id, privacy, lost(run_id))
    try:
        # The claim's own check (one function, the store's): a state that fails it is not
        # what this host wrote (it may hold anything), so nothing of it is shown, only why
        # it cannot be decided.
        checked(dict(data), run_id, None)
    except SuspendedStateError as exc:
        return _unreadable(run_id, privacy, str(exc))
    except AuditStoreError:  # the host secret cannot be read: its words name a file
        return _unreadable(run_id, privacy, unusable(run_id, "the host secret cannot be read"))
    state = read_stored_state(data)  # checked above: read, not verified again
    if held is None:
        return held_view(state, privacy, decidable=False, problem=NOT_HELD)
    if held.digest != state.digest:  # resumed and paused again elsewhere
        problem = "the run waits on another turn than the one this playground paused it on"
        return held_view(state, privacy, decidable=False, problem=problem)
    return held_view(state, privacy, decidable=True)
