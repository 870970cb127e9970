"""The PostgreSQL store's connection, schema versions, and the statements on a run's row and
its state that need the run row's lock (suspend, claim, discard, take).

Each function that changes a run runs inside the caller's transaction and locks the run row
first (``SELECT … FOR UPDATE``): the check and the change are one step for every process on
every machine. A state row is written with an HMAC under the host secret over the run id, the
state and the decisions, and checked on every read (:mod:`nr_llm_core._signing`).
"""

from __future__ import annotations

from typing import Any, Final, final

import attrs
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.engine import Connection, Engine

from nr_llm_core._audit_records import (
    DISCARDED,
    AuditStoreError,
    RunSettledError,
    RunStatus,
    SuspendedStateError,
    TakenAwayError,
    UnknownRunError,
    encodable,
    resume_refusal,
    run_record,
)
from nr_llm_core._audit_schema import SchemaVersionError, now
from nr_llm_core._audit_suspension import claimant_text, decoded, lost, resumable, unusable
from nr_llm_core._signing import mac, mac_matches
from nr_llm_core.approval import SuspendedRunState, decisions_for
from nr_llm_core.encoding import decode_json, encode_json_str
from nr_llm_core.errors import ApprovalError, ConfigurationError
from nr_llm_core.privacy import PrivacyLevel, run_level, stored_level_update
from nr_llm_core.stores import _tables
from nr_llm_core.stores._reasons import (
    GIVEN_BACK,
    NOT_STARTED,
    NOT_STARTED_BEGUN,
    NOT_VERIFIED,
    NOT_VERIFIED_BEGUN,
)
from nr_llm_core.stores._tables import SCHEMA_VERSION, events, runs, schema_version, states

__all__ = [
    "NOT_STARTED",
    "NOT_VERIFIED_BEGUN",
    "RUN_SELECT",
    "Found",
    "Taken",
    "TakenAwayError",
    "begun_refusal",
    "claimant_text",
    "discard",
    "end_suspension",
    "engine",
    "give_back",
    "holds",
    "mark_applying",
    "migrate",
    "put_state",
    "read_state",
    "require_open",
    "reworded",
    "take",
    "waiting",
    "withdraw_approval",
]

_STATE_PURPOSE: Final = "nr-llm/state/v1"
# Any constant: the advisory lock that makes concurrent first opens migrate once.
_MIGRATION_LOCK: Final = 0x6E726C6C6D  # "nrllm"
_ZONE_RANK: Final = {"local": 0, "private-hosted": 1, "external": 2}

# Aliases: a query that joins ``states`` itself must not correlate these subqueries to it.
_waiting_state = states.alias("waiting_state")
_run_events = events.alias("run_events")

RUN_SELECT: Final = sa.select(
    runs.c.id,
    runs.c.status,
    runs.c.started_at,
    runs.c.ended_at,
    runs.c.iterations,
    runs.c.truncated,
    runs.c.termination_reason,
    runs.c.tokens_in,
    runs.c.tokens_out,
    runs.c.privacy_level,
    sa.and_(
        runs.c.status == RunStatus.SUSPENDED.value,
        sa.exists().where(_waiting_state.c.run_id == runs.c.id).correlate(runs),
    ),
    sa.select(sa.func.count())
    .where(_run_events.c.run_id == runs.c.id)
    .correlate(runs)
    .scalar_subquery(),
    runs.c.meta,
    runs.c.claimed_by,
    runs.c.claimed_at,
)


def engine(url: str, label: str, *, pool_size: int) -> Engine:
    """An engine for ``url`` on psycopg 3 that never puts parameters in its errors or logs."""
    try:
        made = sa.make_url(url)
    except sa.exc.ArgumentError:
        raise AuditStoreError(f"not a PostgreSQL URL: {label}") from None
    if made.drivername in ("postgresql", "postgres"):
        made = made.set(drivername="postgresql+psycopg")
    if made.drivername != "postgresql+psycopg":
        raise AuditStoreError(f"use the psycopg 3 driver (postgresql+psycopg://…): {label}")
    try:
        return sa.create_engine(
            made,
            pool_size=pool_size,
            max_overflow=pool_size,
            hide_parameters=True,  # SQL errors would otherwise quote step payloads
            connect_args={"connect_timeout": 10, "application_name": "nr-llm"},
        )
    except ImportError:
        raise AuditStoreError(
            "a PostgreSQL store needs the postgres extra: pip install 'nr-llm[postgres]'"
        ) from None


def reworded(exc: BaseException, label: str) -> AuditStoreError:
    """An :class:`AuditStoreError` for a database error: the error's type, and for a
    connection failure the server's first line (libpq never echoes a password), the store
    named by its masked URL. Never the statement or its parameters."""
    original = getattr(exc, "orig", None) or exc
    kind = type(original).__name__
    if isinstance(exc, sa.exc.OperationalError) and getattr(exc, "connection_invalidated", None):
        return AuditStoreError(f"lost the connection to the audit database {label} ({kind})")
    if isinstance(exc, sa.exc.OperationalError) and "connect" in str(original)[:200].lower():
        first = str(original).strip().splitlines()[0][:300] if str(original).strip() else kind
        return AuditStoreError(f"cannot connect to the audit database {label}: {first}")
    return AuditStoreError(f"audit database error ({kind}) on {label}")


def migrate(eng: Engine) -> int:
    """Create or check the schema, once, under an advisory lock; return its version.

    A database whose version is newer than this code is refused ("upgrade nr-llm")."""
    with eng.begin() as conn:
        conn.execute(sa.select(sa.func.pg_advisory_xact_lock(_MIGRATION_LOCK)))
        schema_version.create(conn, checkfirst=True)
        found = conn.execute(sa.select(schema_version.c.version)).scalar()
        version = 0 if found is None else int(found)
        if version > SCHEMA_VERSION:
            raise AuditStoreError(
                str(
                    SchemaVersionError(
                        f"the audit database has schema version {version}; this nr-llm knows "
                        f"{SCHEMA_VERSION} at most: upgrade nr-llm"
                    )
                )
            )
        if version == 0:
            _tables.metadata.create_all(conn, tables=[runs, events, states])
            conn.execute(sa.insert(schema_version).values(version=SCHEMA_VERSION))
            version = SCHEMA_VERSION
    return version


def require_open(conn: Connection, run_id: str, attempt: int | None = None) -> str:
    """Lock the run row; its status, or :class:`UnknownRunError` / :class:`RunSettledError`.

    With ``attempt`` (a worker's take, ADR 0039), also :class:`TakenAwayError` unless the run
    is ``running`` in that take, checked under the same lock: a worker the queue gave up on
    writes nothing to a run another worker holds."""
    if not encodable(run_id):
        raise UnknownRunError(f"no run {run_id[:80]!r}")
    row = conn.execute(
        sa.select(runs.c.status, runs.c.attempts).where(runs.c.id == run_id).with_for_update()
    ).first()
    if row is None:
        raise UnknownRunError(f"no run {run_id!r}")
    status = str(row[0])
    if RunStatus(status).final:
        raise RunSettledError(f"run {run_id!r} is already {status}")
    if attempt is not None and not _in_take(status, row[1], attempt):
        raise TakenAwayError(f"run {run_id[:80]!r} was taken from this worker")
    return status


def _in_take(status: object, attempts: object, attempt: int) -> bool:
    """Whether a run with ``status`` and ``attempts`` is held by its take number ``attempt``:
    ``running``, and that take the latest (every take counts one more)."""
    return status == RunStatus.RUNNING and attempts == attempt


def holds(conn: Connection, run_id: str, attempt: int) -> bool:
    """Whether the run is ``running`` in its take number ``attempt`` (the latest), as the
    last committed row says; nothing locked (see :meth:`PostgresStore.holds
    <nr_llm_core.stores.postgres.PostgresStore.holds>` for why that suffices)."""
    if not encodable(run_id):
        return False
    row = conn.execute(sa.select(runs.c.status, runs.c.attempts).where(runs.c.id == run_id)).first()
    return row is not None and _in_take(row[0], row[1], attempt)


def _signed(run_id: str, state: str, decisions: str | None) -> tuple[bytes, ...]:
    return (
        run_id.encode("utf-8", "surrogatepass"),
        state.encode("utf-8", "surrogatepass"),
        b"" if decisions is None else decisions.encode("utf-8", "surrogatepass"),
    )


def put_state(
    conn: Connection,
    run_id: str,
    state: Any,
    *,
    decisions: dict[str, bool] | None = None,
    applying: str | None = None,
) -> None:
    """Write (or replace) the run's signed state row; ``applying`` is who began its approved
    calls, kept when a run whose calls were begun is approved again (ADR 0039)."""
    try:
        text = encode_json_str(dict(state))
        chosen = None if decisions is None else encode_json_str(decisions)
    except Exception as exc:
        raise AuditStoreError(f"suspended state is not JSON: {type(exc).__name__}") from None
    try:
        signature = mac(_STATE_PURPOSE, *_signed(run_id, text, chosen), shared=True)
    except ConfigurationError as exc:
        raise AuditStoreError(str(exc)) from None
    digest = state.get("digest")
    row = {
        "state": text,
        "digest": digest if type(digest) is str else None,
        "decisions": chosen,
        "mac": signature,
        "applying": applying,
    }
    stmt = pg_insert(states).values(run_id=run_id, **row)
    conn.execute(stmt.on_conflict_do_update(index_elements=[states.c.run_id], set_=row))


@final
@attrs.frozen
class Found:
    """A run's state row, checked: the state, the decisions stored with it, its digest, and
    who began its approved calls (``None``: nobody did)."""

    state: dict[str, Any]
    decisions: dict[str, bool] | None
    digest: str | None
    applying: str | None = None


# A run row with its state row, when it has one.
_WITH_STATE: Final = runs.outerjoin(states, states.c.run_id == runs.c.id)
_STATE_ROW: Final = (
    states.c.state,
    states.c.decisions,
    states.c.mac,
    states.c.digest,
    states.c.applying,
)


@final
@attrs.frozen
class _Row:
    """The columns of a run row that were asked for (``run``), and its state row's as
    stored, not yet checked (each ``None`` when the run has no state row)."""

    run: tuple[Any, ...]
    text: str | None
    decisions: str | None
    signature: str | None
    digest: Any
    applying: str | None

    def found(self, run_id: str) -> Found:
        """The state row checked: :class:`SuspendedStateError` when it is missing, does not
        match its signature, or its state or decisions are not JSON objects."""
        if self.text is None:
            raise SuspendedStateError(lost(run_id))
        signed = _signed(run_id, self.text, self.decisions)
        try:
            good = mac_matches(self.signature, _STATE_PURPOSE, *signed, shared=True)
        except ConfigurationError as exc:
            raise AuditStoreError(str(exc)) from None
        if not good:
            raise SuspendedStateError(lost(run_id))
        state = decoded(self.text, run_id)
        try:
            chosen = None if self.decisions is None else decode_json(self.decisions)
        except (ValueError, RecursionError):
            chosen = False  # refused below, never the decoder's message
        if chosen is not None and type(chosen) is not dict:
            raise SuspendedStateError(unusable(run_id, "its decisions are not a JSON object"))
        digest = self.digest if type(self.digest) is str else None
        return Found(state=state, decisions=chosen, digest=digest, applying=self.applying)


def _locked(
    conn: Connection, run_id: str, query: sa.Select[Any], *, lock: bool = True
) -> _Row | None:
    """``query``'s columns of the run row ``run_id`` with its state row, or ``None`` when no
    such run matches ``query``. The run row is locked (``FOR UPDATE OF runs``) unless
    ``lock`` is false: every writer of a state row locks its run row first, so the run
    row's lock covers the state row too, and a run without a state row is locked all the
    same (an outer join)."""
    joined = query.add_columns(*_STATE_ROW).select_from(_WITH_STATE).where(runs.c.id == run_id)
    row = conn.execute(joined.with_for_update(of=runs) if lock else joined).first()
    if row is None:
        return None
    cut = len(row) - len(_STATE_ROW)
    return _Row(tuple(row[:cut]), *row[cut:])


def read_state(conn: Connection, run_id: str, status: RunStatus, *, lock: bool) -> Found | None:
    """The checked state of a run in ``status``; ``None`` when the run is not in it;
    :class:`SuspendedStateError` when its row is missing or its signature does not match."""
    if not encodable(run_id):
        return None
    query = sa.select(runs.c.status).where(runs.c.status == status.value)
    row = _locked(conn, run_id, query, lock=lock)
    return None if row is None else row.found(run_id)


def waiting(conn: Connection, run_id: str, digest: str | None) -> Found:
    """Lock a run that waits (on the turn ``digest``, when given) and return its checked
    state, or raise the refusal (who claimed it and when, stale, unknown);
    :class:`SuspendedStateError` when the state is lost, altered, or not one a resume could
    go on from (see :func:`~nr_llm_core._audit_suspension.resumable`)."""
    if not encodable(run_id):
        raise resume_refusal(run_id, None)
    row = _locked(conn, run_id, RUN_SELECT)
    record = None if row is None else run_record(row.run)
    if row is None or record is None or record["status"] != RunStatus.SUSPENDED:
        raise resume_refusal(run_id, record)
    if digest is not None and digest != row.digest:
        raise resume_refusal(run_id, record)
    found = row.found(run_id)
    # Checked as a resume checks it before the caller commits anything (ADR 0036): a state
    # nobody can resume leaves the run waiting, its row kept.
    resumable(found.state, run_id, found.digest if found.digest is not None else digest)
    return found


def begun_refusal(run_id: str) -> str:
    """Why a waiting run whose approved calls a lost worker had begun is not claimed here
    (host words: the run id only)."""
    return (
        f"the approved calls of run {run_id[:80]!r} were begun by a worker that stopped, and "
        "may have run: nothing was claimed and the run still waits; approve it for the workers "
        "(runs approve --queue), which answer those calls as possibly run and never run them "
        "again, or discard it"
    )


def end_suspension(conn: Connection, run_id: str, who: str) -> None:
    """Claim the (locked, suspended) run for ``who``: ``running``, its state row deleted.

    :class:`~nr_llm_core.errors.ApprovalError` (:func:`begun_refusal`), nothing changed, for
    a run whose approved calls a lost worker had begun (ADR 0039): a claim here would run
    them again; only a worker's take answers them as possibly run."""
    begun = conn.execute(sa.select(states.c.applying).where(states.c.run_id == run_id)).scalar()
    if begun is not None:
        raise ApprovalError(begun_refusal(run_id))
    conn.execute(
        sa.update(runs)
        .where(runs.c.id == run_id, runs.c.status == RunStatus.SUSPENDED.value)
        .values(
            status=RunStatus.RUNNING.value,
            claimed_by=who,
            claimed_at=now(),
            termination_reason=None,  # a worker's give-back reason: it is resumed now
        )
    )
    conn.execute(sa.delete(states).where(states.c.run_id == run_id))


def discard(conn: Connection, run_id: str, who: str) -> None:
    """Settle a waiting run ``cancelled`` (reason ``discarded``) for ``who``, state deleted;
    refused like a claim when it is not waiting."""
    if not encodable(run_id):
        raise resume_refusal(run_id, None)
    row = conn.execute(RUN_SELECT.where(runs.c.id == run_id).with_for_update(of=runs)).first()
    record = None if row is None else run_record(tuple(row))
    if record is None or record["status"] != RunStatus.SUSPENDED:
        raise resume_refusal(run_id, record)
    at = now()
    conn.execute(
        sa.update(runs)
        .where(runs.c.id == run_id)
        .values(
            status=RunStatus.CANCELLED.value,
            ended_at=at,
            termination_reason=DISCARDED,
            claimed_by=who,
            claimed_at=at,
        )
    )
    conn.execute(sa.delete(states).where(states.c.run_id == run_id))


def withdraw_approval(
    conn: Connection, run_id: str, worker: str | None = None, attempt: int | None = None
) -> bool:
    """Undo an approval for the workers before any approved call ran (ADR 0036): the run
    waits again on its state (the decisions dropped, the claim cleared). Only while the run
    is ``queued`` with the approver's decisions (no job carries it), or, with ``worker`` and
    ``attempt``, ``running`` in that worker's take number ``attempt`` (its latest take: two
    jobs of one worker process share its name) with decisions nobody has begun (it cannot
    run them); ``False`` when it is no longer so. A queued run whose approved calls a lost
    worker had begun (approved again after a give-back, ADR 0039) waits again as it was
    before that approval: its row, with the mark and the decisions the calls were begun
    under, is kept; a worker never withdraws such a run."""
    if not encodable(run_id):
        return False
    row = _locked(conn, run_id, sa.select(runs.c.attempts, runs.c.taken_by, runs.c.status))
    if row is None or row.decisions is None:
        return False
    (attempts, taken_by, status), begun = row.run, row.applying
    if begun is not None and worker is not None:
        return False
    if worker is None and status != RunStatus.QUEUED:
        return False
    if worker is not None and (
        status != RunStatus.RUNNING or attempts != attempt or taken_by != claimant_text(worker)
    ):
        return False
    found = row.found(run_id)
    if begun is None:
        put_state(conn, run_id, found.state)
    conn.execute(
        sa.update(runs)
        .where(runs.c.id == run_id)
        .values(
            status=RunStatus.SUSPENDED.value,
            claimed_by=None,
            claimed_at=None,
            taken_by=None,
            # The approver was told "queued": the run says why it waits again (ADR 0038).
            # A refused enqueue is said to the approver itself, in the command's error; a run
            # whose calls were begun keeps saying that they may have run (ADR 0039).
            termination_reason=(
                GIVEN_BACK if worker is not None else NOT_VERIFIED_BEGUN if begun else None
            ),
        )
    )
    return True


def give_back(conn: Connection, run_id: str, *, attempt: int | None = None) -> bool:
    """Hand a run a worker could not take back to the operator (ADR 0038): its state row
    failed this worker's checks (:data:`NOT_VERIFIED`), so the run waits again, unclaimed,
    its row kept as it is (this worker cannot sign another), with the reason recorded, where
    ``runs list`` and ``runs show`` say it and ``runs approve`` or ``runs discard`` act on it.

    Only while the run is ``queued``, or ``running`` again after its worker was lost;
    ``False`` otherwise. When a lost worker had begun its approved calls, they may have run:
    the mark that says so stays on the row, the reason is :data:`NOT_VERIFIED_BEGUN`, and
    nothing can claim the run to run them again (:func:`end_suspension`); a new approval
    (:func:`put_state` keeps the mark and the decisions they were begun under) hands it to a
    worker that answers them as possibly run (ADR 0039).

    With ``attempt``, the run was taken (in that take) and the worker stopped before it
    began anything of it: only while that take is the run's latest, reason
    :data:`NOT_STARTED`, or :data:`NOT_STARTED_BEGUN` when a lost worker had begun its
    approved calls before (they may have run, ADR 0041)."""
    if not encodable(run_id):
        return False
    row = _locked(conn, run_id, sa.select(runs.c.status, runs.c.attempts))
    if row is None or row.text is None:  # no state row: nothing to wait on
        return False
    status, attempts = row.run
    if attempt is not None and not _in_take(status, attempts, attempt):
        return False
    if status not in (RunStatus.QUEUED, RunStatus.RUNNING):
        return False
    if attempt is not None:
        reason = NOT_STARTED if row.applying is None else NOT_STARTED_BEGUN
    else:
        reason = NOT_VERIFIED if row.applying is None else NOT_VERIFIED_BEGUN
    conn.execute(
        sa.update(runs)
        .where(runs.c.id == run_id)
        .values(
            status=RunStatus.SUSPENDED.value,
            claimed_by=None,
            claimed_at=None,
            taken_by=None,
            termination_reason=reason,
        )
    )
    return True


@final
@attrs.frozen
class Taken:
    """A run handed to a worker: its checked state (and the approver's decisions, when it
    resumes after an approval), which execution this is (1 = first), the trust zone and
    privacy level it runs under, and who began running the approved calls (``None``: nobody
    did; else a worker that was lost may have run them)."""

    run_id: str
    state: dict[str, Any]
    decisions: dict[str, bool] | None
    attempt: int
    trust_zone: str
    privacy_level: str
    applying: str | None = None


def _stricter_zone(*zones: str | None) -> str:
    named = [z if z in _ZONE_RANK else "external" for z in zones if z is not None]
    return max(named or ["external"], key=_ZONE_RANK.__getitem__)


def take(
    conn: Connection,
    run_id: str,
    worker: str,
    zone: str,
    named: tuple[PrivacyLevel | str | None, ...],
) -> Taken | None:
    """Lock the run; hand it to ``worker`` if it is queued, or again if it is running with a
    state (the engine retries it after its worker was lost); else ``None``."""
    if not encodable(run_id):
        return None
    row = _locked(
        conn,
        run_id,
        sa.select(runs.c.status, runs.c.attempts, runs.c.trust_zone, runs.c.privacy_level),
    )
    if row is None:
        return None
    status, attempts, recorded_zone, level = row.run
    attempts = int(attempts)
    if status != RunStatus.QUEUED and not (status == RunStatus.RUNNING and row.text is not None):
        return None
    found = row.found(run_id)
    # Checked as a claim checks it (ADR 0036), before the run is handed over: a state this
    # worker cannot resume raises here, nothing committed, and the worker gives it back.
    # The one check of its signature on a worker's path (ADR 0041): the worker drives the
    # very bytes checked here.
    state = resumable(found.state, run_id, found.digest)
    # And the decisions it would act on (ADR 0039): ones a later version wrote in a shape
    # this one does not read are kept for a worker that can, never dropped or failed.
    _readable_decisions(state, found.decisions, run_id)
    zone_now = _stricter_zone(recorded_zone, zone)
    # The run's level and the levels this worker names (its store's, its own, the
    # environment's): the strictest; nothing named never widens or narrows it.
    applied = run_level(level, *named)
    level_now = applied.value
    # Stored as the stores' one rule says: a newer version's level text stays (only ``none``
    # replaces it), a known level only ever narrows.
    stored = stored_level_update(level, applied) or level
    conn.execute(
        sa.update(runs)
        .where(runs.c.id == run_id)
        .values(
            status=RunStatus.RUNNING.value,
            attempts=attempts + 1,
            taken_by=claimant_text(worker),
            trust_zone=zone_now,
            privacy_level=stored,
        )
    )
    return Taken(
        run_id=run_id,
        state=found.state,
        decisions=found.decisions,
        attempt=attempts + 1,
        trust_zone=zone_now,
        privacy_level=level_now,
        applying=row.applying,
    )


def _readable_decisions(
    state: SuspendedRunState, decisions: dict[str, Any] | None, run_id: str
) -> None:
    """:class:`SuspendedStateError` in host words unless a worker can act on ``decisions``,
    stored with ``state``: none for a run queued to start, else what a resume accepts
    (:func:`~nr_llm_core.approval.decisions_for`: a bool for pending call ids only)."""
    if decisions is None:
        if state.pending:
            raise SuspendedStateError(
                unusable(run_id, "it has pending calls and no decisions this worker can act on")
            )
        return
    try:
        decisions_for(state, decisions)
    except ApprovalError:
        raise SuspendedStateError(
            unusable(run_id, "its decisions are not ones this worker can read")
        ) from None


def mark_applying(conn: Connection, run_id: str, worker: str, attempt: int) -> bool:
    """Record that ``worker`` begins running the approved calls of the run it was handed in
    its take number ``attempt``; ``False`` when that take no longer holds the run (the queue
    handed it to another worker meanwhile, or it was taken away) or somebody already began
    them: the approved calls run at most once, whichever worker wakes first."""
    if not encodable(run_id):
        return False
    row = conn.execute(
        sa.select(runs.c.status, runs.c.attempts, runs.c.taken_by)
        .where(runs.c.id == run_id)
        .with_for_update()
    ).first()
    # A worker the queue gave up on (a stalled heartbeat, not necessarily a dead process)
    # still holds its old take: only the latest take of the run may begin the calls.
    if row is None or row[0] != RunStatus.RUNNING or row[1] != attempt:
        return False
    if row[2] != claimant_text(worker):
        return False
    done = conn.execute(
        sa.update(states)
        .where(
            states.c.run_id == run_id,
            states.c.decisions.is_not(None),
            states.c.applying.is_(None),
        )
        .values(applying=claimant_text(worker))
    )
    return bool(done.rowcount)
