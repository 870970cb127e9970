"""A suspended run's row: the statements that suspend, claim, discard and release a run.

Each function runs inside the persister's write transaction (``BEGIN IMMEDIATE``), so the
check and the change are one atomic step for every thread and process on the file. State
files are written here, inside the transaction, and returned by name to be wiped by the caller
after the commit (see :mod:`nr_llm_core._audit_states` for why states are files).
"""

from __future__ import annotations

import os
import socket
import sqlite3
from pathlib import Path
from typing import Any, Final

from nr_llm_core import _audit_states
from nr_llm_core._audit_records import (
    DISCARDED,
    AuditStoreError,
    RunStatus,
    SuspendedStateError,
    resume_refusal,
    run_record,
)
from nr_llm_core._audit_runner import this_runner
from nr_llm_core._audit_schema import RESUME, RUN_COLUMNS, STATE_OF, now
from nr_llm_core.approval import SuspendedRunState, checked_stored_state, resigned
from nr_llm_core.encoding import decode_json, encode_json_str
from nr_llm_core.errors import ApprovalError, ConfigurationError

__all__ = [
    "checked",
    "claimant",
    "claimant_text",
    "decoded",
    "discard",
    "end_suspension",
    "lost",
    "move_out_states",
    "resign_states",
    "resumable",
    "set_suspended",
    "state_file",
    "unusable",
    "waiting_state",
]

_MAX_CLAIMANT: Final = 200


def claimant(front_end: str) -> str:
    """Who is resuming, as recorded with a claim: ``<front end> on <host> (pid <pid>)``.

    ``front_end`` names the way in (``cli``, ``playground``, ``api``)."""
    return f"{front_end} on {socket.gethostname()} (pid {os.getpid()})"


def claimant_text(value: str | None) -> str:
    """The claimant to record: ``value`` (bounded), else ``claimant("api")``."""
    return (claimant("api") if value is None else str(value))[:_MAX_CLAIMANT]


def lost(run_id: str) -> str:
    """The message of :class:`~nr_llm_core._audit_records.SuspendedStateError` for ``run_id``
    whose state is missing, or not the bytes its row recorded."""
    return (
        f"the saved state of run {run_id[:80]!r} is missing or altered: it cannot be resumed "
        "and the run still waits; discard it"
    )


def unusable(run_id: str, reason: str) -> str:
    """The message of :class:`~nr_llm_core._audit_records.SuspendedStateError` for ``run_id``
    whose state is the bytes recorded but cannot be resumed from, for ``reason`` (host
    words: never a byte of the state)."""
    return (
        f"the saved state of run {run_id[:80]!r} cannot be resumed: {reason}; nothing was "
        "claimed and the run still waits, its state kept; discard it"
    )


def decoded(data: bytes | str, run_id: str) -> dict[str, Any]:
    """The stored state's bytes (the ones its row recorded) decoded; a
    :class:`~nr_llm_core._audit_records.SuspendedStateError` (:func:`unusable`) when they are
    not a JSON object, never the decoder's error (its message could quote them)."""
    try:
        value = decode_json(data)
    except (ValueError, RecursionError):
        raise SuspendedStateError(unusable(run_id, "it is not JSON")) from None
    if type(value) is not dict:
        raise SuspendedStateError(unusable(run_id, "it is not a JSON object"))
    return value


def resumable(data: dict[str, Any], run_id: str, digest: str | None) -> SuspendedRunState:
    """``data``, the decoded state of ``run_id``, read and checked as a resume checks it
    (:func:`~nr_llm_core.approval.checked_stored_state`: its shape, its signature, its run,
    the turn ``digest`` the run waits on), for a claim or a take to do before it commits
    (ADR 0036); the state it reads.

    Raises :class:`~nr_llm_core._audit_records.SuspendedStateError` (:func:`unusable`) when it
    cannot be resumed from, and :class:`~nr_llm_core._audit_records.AuditStoreError` when the
    host secret cannot be read."""
    try:
        return checked_stored_state(data, run_id=run_id, digest=digest)
    except ApprovalError as exc:
        raise SuspendedStateError(unusable(run_id, str(exc))) from None
    except ConfigurationError as exc:
        raise AuditStoreError(str(exc)) from None


def checked(data: dict[str, Any], run_id: str, digest: str | None) -> dict[str, Any]:
    """``data`` once :func:`resumable` accepts it."""
    resumable(data, run_id, digest)
    return data


def state_file(conn: sqlite3.Connection, run_id: str) -> str | None:
    """The state file a suspended run's row names, if any."""
    row = conn.execute(STATE_OF, (run_id,)).fetchone()
    return None if row is None or row[0] is None else str(row[0])


def set_suspended(
    conn: sqlite3.Connection, directory: Path, run_id: str, data: bytes, digest: object
) -> str:
    """Write ``data`` to a new state file and mark the run suspended on it; return the name.

    Written inside the write transaction: a sweep (which takes the same lock) never sees a
    file between its writing and the commit that names it."""
    name, sha256 = _audit_states.write(directory, data)
    try:
        conn.execute(
            "UPDATE runs SET status = ?, state_file = ?, state_sha256 = ?, state_digest = ? "
            "WHERE id = ?",
            (
                RunStatus.SUSPENDED.value,
                name,
                sha256,
                digest if type(digest) is str else None,
                run_id,
            ),
        )
    except BaseException:
        _audit_states.wipe(directory, name)
        raise
    return name


def waiting_state(
    conn: sqlite3.Connection, run_id: str, digest: str | None
) -> tuple[str | None, str | None, str | None]:
    """The state file, its hash and the digest of the turn of a run that waits (on the turn
    ``digest``, when given), or raise the refusal
    (:func:`~nr_llm_core._audit_records.resume_refusal`). The file and hash are ``None`` for a
    waiting row that names no file (it can be discarded, not resumed)."""
    row = conn.execute(
        f"SELECT {RUN_COLUMNS}, state_file, state_sha256, state_digest FROM runs WHERE id = ?",  # noqa: S608  # a constant column list
        (run_id,),
    ).fetchone()
    record = None if row is None else run_record(row)
    if record is None or record["status"] != RunStatus.SUSPENDED:
        raise resume_refusal(run_id, record)
    name, sha256, pending = row[-3], row[-2], row[-1]
    if digest is not None and digest != pending:
        raise resume_refusal(run_id, record)
    return name, sha256, pending if type(pending) is str else digest


def end_suspension(conn: sqlite3.Connection, run_id: str, who: str) -> str | None:
    """Claim the run for ``who`` (status ``running``, this process its runner); return its
    state file to wipe."""
    name = state_file(conn, run_id)
    runner = this_runner()
    conn.execute(RESUME, (run_id, who, now(), runner.host, runner.pid, runner.started))
    return name


def discard(conn: sqlite3.Connection, run_id: str, who: str) -> str | None:
    """Settle a waiting run ``cancelled`` (reason ``discarded``) for ``who``; return its
    state file to wipe. Refused like a claim when the run is not waiting."""
    name, _, _ = waiting_state(conn, run_id, None)
    at = now()
    conn.execute(
        "UPDATE runs SET status = ?, ended_at = ?, termination_reason = ?, state_file = NULL, "
        "state_sha256 = NULL, state_digest = NULL, claimed_by = ?, claimed_at = ? WHERE id = ?",
        (RunStatus.CANCELLED.value, at, DISCARDED, who, at, run_id),
    )
    return name


def move_out_states(conn: sqlite3.Connection, directory: Path, old_version: int) -> bool:
    """Upgrade from schema 1 or 2 (in the migration's transaction): each waiting run's state
    leaves the ``suspended_state`` column for a file; the column is cleared everywhere.
    Returns whether any state was moved (the caller then checkpoints the WAL)."""
    if not 0 < old_version < 3:
        return False
    rows = conn.execute(
        "SELECT id, status, suspended_state FROM runs WHERE suspended_state IS NOT NULL"
    ).fetchall()
    for run_id, status, text in rows:
        if status == RunStatus.SUSPENDED:
            set_suspended(conn, directory, run_id, str(text).encode("utf-8"), _digest_of(text))
    conn.execute("UPDATE runs SET suspended_state = NULL WHERE suspended_state IS NOT NULL")
    return bool(rows)


def _digest_of(text: Any) -> object:
    try:
        data = decode_json(text)
    except (ValueError, RecursionError):
        return None
    return data.get("digest") if type(data) is dict else None


def resign_states(conn: sqlite3.Connection, directory: Path, old_version: int) -> int:
    """Upgrade from schema 1 to 3 (in the migration's transaction, after
    :func:`move_out_states`): each waiting run's version-1 state (a plain SHA-256 digest) is
    written anew as version 2, signed with the host secret. The file it replaces is no longer
    named by any row: the sweep that follows the upgrade wipes it. Returns how many."""
    if not 0 < old_version < 4:
        return 0
    rows = conn.execute(
        "SELECT id, state_file, state_sha256 FROM runs "
        "WHERE status = 'suspended' AND state_file IS NOT NULL"
    ).fetchall()
    count = 0
    for run_id, name, sha256 in rows:
        try:
            data = decode_json(_audit_states.read(directory, str(name), str(sha256)))
        except (_audit_states.StateFileError, ValueError, RecursionError):
            continue  # lost or altered: refused when resumed, as before
        new = resigned(data) if type(data) is dict else None
        if new is not None:
            text = encode_json_str(new).encode("utf-8")
            set_suspended(conn, directory, run_id, text, new["digest"])
            count += 1
    return count
