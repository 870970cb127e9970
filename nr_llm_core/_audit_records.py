"""The audit store's public record types, statuses and errors, and the suspended-state check.

Re-exported by :mod:`nr_llm_core.audit`; kept apart so the persister module stays about writing.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping
from typing import Any, Final, TypedDict

from nr_llm_core.encoding import decode_json
from nr_llm_core.errors import AlreadyClaimedError, ApprovalError, NrLlmError
from nr_llm_core.results import Artifact, ToolResult

__all__ = [
    "ABANDONED",
    "DISCARDED",
    "MAX_CANDIDATES",
    "MAX_RUN_ID_BYTES",
    "MIN_RUN_ID_PREFIX",
    "AmbiguousRunIdError",
    "AuditStoreError",
    "RunRecord",
    "RunSettledError",
    "RunStatus",
    "RunnerNotGoneError",
    "StepRecord",
    "SuspendedStateError",
    "TakenAwayError",
    "UnknownRunError",
    "chosen_run",
    "encodable",
    "new_run_id",
    "refuse_artifacts",
    "resume_refusal",
    "run_record",
]


#: The termination reason of a run that was discarded while it waited for approval.
DISCARDED = "discarded"
#: The termination reason of a run ended by an operator because its runner was gone (ADR 0042).
ABANDONED = "abandoned"
#: The shortest run id prefix that is looked up; a shorter string must be a whole id.
MIN_RUN_ID_PREFIX = 4
#: How many candidates an ambiguous run id prefix names.
MAX_CANDIDATES = 5


class AuditStoreError(NrLlmError):
    """The audit store refused an operation or could not perform it."""


class UnknownRunError(AuditStoreError):
    """No run has this id (or, for a prefix, no run's id starts with it)."""


class AmbiguousRunIdError(AuditStoreError):
    """A run id prefix that more than one run's id starts with; ``candidates`` holds some of
    them (at most :data:`MAX_CANDIDATES`)."""

    def __init__(self, message: str, candidates: tuple[str, ...]) -> None:
        super().__init__(message)
        self.candidates = candidates


def encodable(run_id: str) -> bool:
    """Whether ``run_id`` is an id a store can hold, the one rule under both stores: text
    without a lone surrogate (undecodable command-line bytes; not UTF-8, which neither
    database takes as text) and without NUL (PostgreSQL's text cannot hold it; SQLite's
    could, but then a run would exist on one store that cannot exist on the other).

    An id that is not is never sent to a database: it names no run (every lookup finds
    none, every claim is refused as no such run), and :func:`new_run_id` refuses to begin
    a run by it."""
    try:
        run_id.encode("utf-8")
    except (UnicodeEncodeError, AttributeError):
        return False
    return "\x00" not in run_id


#: The longest run id a run is begun with, in UTF-8 bytes: every run a store lists can be
#: addressed in a URL (the playground's ``/api/run/{ref}``, ADR 0044) and shown in a line.
MAX_RUN_ID_BYTES: Final = 1024


def new_run_id(run_id: str | None) -> str:
    """The id a new run gets: ``run_id``, or a fresh UUID when it is ``None`` or empty.

    :class:`AuditStoreError` for an id no store can hold (see :func:`encodable`) or one over
    :data:`MAX_RUN_ID_BYTES`, before anything is written: the same refusal on both stores,
    never a driver's error."""
    if not run_id:
        return uuid.uuid4().hex
    if not isinstance(run_id, str):
        raise AuditStoreError(f"a run id is text, not {type(run_id).__name__}")
    if not encodable(run_id):
        raise AuditStoreError(
            f"cannot begin run {run_id[:80]!r}: a run id is text without NUL characters "
            "or lone surrogates"
        )
    if len(run_id) > MAX_RUN_ID_BYTES or len(run_id.encode("utf-8")) > MAX_RUN_ID_BYTES:
        raise AuditStoreError(
            f"cannot begin run {run_id[:80]!r}…: a run id is at most {MAX_RUN_ID_BYTES} bytes "
            "of UTF-8"
        )
    return run_id


def chosen_run(given: str, matches: list[str]) -> str:
    """The one run a prefix ``given`` names among ``matches`` (ids starting with it, sorted,
    at most one more than :data:`MAX_CANDIDATES`): the rule both stores apply."""
    shown = given[:80]
    if not matches:
        raise UnknownRunError(f"no such run {shown!r}")
    if len(matches) > 1:
        named = ", ".join(matches[:MAX_CANDIDATES])
        more = " and more" if len(matches) > MAX_CANDIDATES else ""
        raise AmbiguousRunIdError(
            f"run id prefix {shown!r} is ambiguous: {named}{more}; give more characters",
            tuple(matches[:MAX_CANDIDATES]),
        )
    return matches[0]


class RunSettledError(AuditStoreError):
    """The run already has a final status; a final status is never changed."""


class RunnerNotGoneError(AuditStoreError):
    """A running run cannot be ended as abandoned: nothing proves that its runner is gone
    (it lives, it ran on another host, or no runner is recorded). The message says which
    and what to do; nothing was changed."""


class SuspendedStateError(AuditStoreError):
    """A suspended run's saved state file is missing, or its bytes are not the ones recorded.

    The run cannot be resumed; it stays suspended until it is discarded."""


class TakenAwayError(AuditStoreError, ApprovalError):
    """A worker's take no longer holds its run: the queue handed the run to another worker
    (this one stopped sending heartbeats, which need not mean it died; ADR 0039, ADR 0041).

    Raised by a write in that take's name (:meth:`PostgresStore.settle
    <nr_llm_core.stores.postgres.PostgresStore.settle>`, ``suspend``: refused, nothing
    written) and by the worker's checks before each step and before it begins the approved
    calls. It is the one failure of a persister that passes through
    :class:`~nr_llm_core.loop.ToolLoop` (every other is logged and the run's result stands):
    the worker then stops there and writes nothing more to the run. An
    :class:`AuditStoreError` for a store's callers, and an
    :class:`~nr_llm_core.errors.ApprovalError` for a resume's."""


class RunStatus(enum.StrEnum):
    """Where a run is in its life cycle. ``completed``, ``failed``, ``cancelled`` are final.

    ``queued``: waiting for a worker (a shared store only: queued by ``nr-llm run --queue``,
    or approved for a worker to resume)."""

    QUEUED = "queued"
    RUNNING = "running"
    SUSPENDED = "suspended"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def final(self) -> bool:
        """Whether the status can no longer change."""
        return self not in (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.SUSPENDED)


class RunRecord(TypedDict):
    """One row of the runs table, as :meth:`AgentRunPersister.get_run` returns it."""

    id: str
    status: str
    started_at: str
    ended_at: str | None
    iterations: int
    truncated: bool
    termination_reason: str | None
    tokens_in: int
    tokens_out: int
    privacy_level: str
    suspended: bool
    steps: int
    meta: Any
    claimed_by: str | None
    claimed_at: str | None


class StepRecord(TypedDict):
    """One stored step: its columns, the payload text exactly as stored, and it decoded."""

    seq: int
    kind: str
    round: int | None
    duration_ms: float | None
    recorded_at: str | None
    payload: str
    step: dict[str, Any]


def run_record(row: tuple[Any, ...]) -> RunRecord:
    return RunRecord(
        id=row[0],
        status=row[1],
        started_at=row[2],
        ended_at=row[3],
        iterations=row[4],
        truncated=bool(row[5]),
        termination_reason=row[6],
        tokens_in=row[7],
        tokens_out=row[8],
        privacy_level=row[9],
        suspended=bool(row[10]),
        steps=row[11],
        meta=None if row[12] is None else decode_json(row[12]),
        claimed_by=row[13],
        claimed_at=row[14],
    )


def resume_refusal(run_id: str, record: RunRecord | None) -> AuditStoreError | ApprovalError:
    """The error for resuming ``run_id`` when it cannot be claimed: unknown, taken by someone
    (who and when, from the claim recorded with the run), or not waiting at all."""
    if record is None:
        return UnknownRunError(f"no such run {run_id[:80]!r}")
    who, when = record["claimed_by"], record["claimed_at"]
    if record["status"] == RunStatus.SUSPENDED:
        # Waiting, but on another turn than the one the caller saw: someone resumed it since.
        if who and when:
            return AlreadyClaimedError(run_id, who, when)
        return ApprovalError("stale approval: the digest does not match the pending turn")
    if who and when:
        discarded = record["termination_reason"] == DISCARDED
        return AlreadyClaimedError(run_id, who, when, discarded=discarded)
    return ApprovalError(f"run {run_id[:80]!r} is not waiting for approval")


def refuse_artifacts(state: Mapping[str, Any]) -> None:
    """Raise :class:`AuditStoreError` if ``state`` carries an artifact.

    Refused: an :class:`Artifact` or :class:`ToolResult` object anywhere, and the keys
    ``artifacts``/``tool_artifacts`` at the top level of the state. Nested dicts are left
    alone on purpose: below the top level sit messages and tool-call arguments the model
    wrote, and a model must not be able to block a suspension by naming an argument
    ``artifacts``. (A stored state is JSON, so no artifact object can pass the encoder anyway.)
    """
    for key in ("artifacts", "tool_artifacts"):
        if key in state:
            raise AuditStoreError(f"a suspended state must not carry {key!r}")
    stack: list[object] = [state]
    seen: set[int] = set()
    while stack:
        value = stack.pop()
        if isinstance(value, Artifact | ToolResult):
            raise AuditStoreError("a suspended state must not carry artifacts or tool results")
        if isinstance(value, dict | list | tuple):
            if id(value) in seen:
                continue  # a cycle: the encoder refuses it
            seen.add(id(value))
            stack.extend(value.values() if isinstance(value, dict) else value)
