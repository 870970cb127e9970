"""The audit store on a PostgreSQL server shared by many machines (SQLAlchemy Core, psycopg 3).

:class:`PostgresStore` keeps every rule of the SQLite store
(:class:`~nr_llm_core.audit.AgentRunPersister`): the same privacy filter and encoder, one
transaction per step, ``record_step`` never raises, gap-free step numbers, final statuses that
never change, a claim that hands a waiting run to one resumer. Where the two differ:

- **Ordering.** A step's number comes from ``UPDATE runs SET last_seq = last_seq + 1 …
  RETURNING last_seq``: the run row's lock (the one ``SELECT … FOR UPDATE`` takes) orders the
  writers of one run, on any machine, and the number is handed out in the same statement.
  Writers of different runs never wait for each other.
- **Claims** take ``SELECT … FOR UPDATE`` on the run row, check, and change it in one
  transaction: of two resumers (threads, processes, machines) one gets the run.
- **States** are rows of ``states`` (workers elsewhere cannot read a local file), signed with
  an HMAC under the host secret (:mod:`nr_llm_core._signing`; never stored in the database),
  checked on every read: a state or a decision edited in the database is refused.
- **Errors** never carry SQL parameters (step payloads) or the URL's password: the engine hides
  parameters, and every error is reworded with the exception's type and a masked URL.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import threading
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final, final

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from nr_llm_core._audit_records import (
    MAX_CANDIDATES,
    MIN_RUN_ID_PREFIX,
    AuditStoreError,
    RunRecord,
    RunStatus,
    StepRecord,
    UnknownRunError,
    chosen_run,
    encodable,
    new_run_id,
    refuse_artifacts,
    run_record,
)
from nr_llm_core._audit_schema import now, tokens
from nr_llm_core._audit_store_base import StoreBase
from nr_llm_core.approval import SuspendedRunState, decisions_for
from nr_llm_core.encoding import decode_json, encode_json_str
from nr_llm_core.privacy import (
    PrivacyLevel,
    RunStepPrivacyFilter,
    effective_level,
    resolve_privacy_level,
    run_level,
    run_meta,
    stored_level_update,
)
from nr_llm_core.stores import _pg_states as _st
from nr_llm_core.stores._tables import events, runs, states
from nr_llm_core.stores._url import masked
from nr_llm_core.trace import RunStep, StepKind
from nr_llm_core.traceparent import with_traceparent

__all__ = ["PostgresStore"]

logger = logging.getLogger("nr_llm.audit")

_OPEN: Final = (RunStatus.RUNNING.value, RunStatus.SUSPENDED.value)
_MIN_PREFIX: Final = MIN_RUN_ID_PREFIX  # the same rule as the SQLite store's
_MAX_CANDIDATES: Final = MAX_CANDIDATES

_BUMP: Final = (
    sa.update(runs)
    .where(runs.c.id == sa.bindparam("rid"), runs.c.status.in_(_OPEN))
    .values(
        last_seq=runs.c.last_seq + 1,
        tokens_in=runs.c.tokens_in + sa.bindparam("tin"),
        tokens_out=runs.c.tokens_out + sa.bindparam("tout"),
    )
    .returning(runs.c.last_seq, runs.c.status)
)
# The same, for a worker's take: only while the run's latest take is the writer's (ADR 0039).
_BUMP_TAKE: Final = _BUMP.where(runs.c.attempts == sa.bindparam("attempt"))
_INSERT_STEP: Final = sa.insert(events)


@final
class PostgresStore(StoreBase):
    """Records runs and their steps on the PostgreSQL server at ``url``
    (``postgresql+psycopg://user:password@host:port/database``).

    ``privacy`` and ``known_tools`` as for :class:`~nr_llm_core.audit.AgentRunPersister`. The
    schema is created or checked on open (under an advisory lock, so two workers starting
    together migrate once). A store holds a small connection pool and can be shared by
    threads; a forked child opens its own connections. Use it as a context manager, or call
    :meth:`close`.
    """

    def __init__(
        self,
        url: str,
        *,
        privacy: PrivacyLevel | str | None = None,
        known_tools: Collection[str] | None = None,
        pool_size: int = 5,
    ) -> None:
        #: The store's URL as it may be shown (password masked).
        self.label = masked(url)
        self._url = url
        self.ceiling = None if privacy is None else resolve_privacy_level(privacy)
        self.privacy = effective_level(self.ceiling)
        self._filters = {
            level: RunStepPrivacyFilter(level, known_tools=known_tools) for level in PrivacyLevel
        }
        self._levels: dict[str, PrivacyLevel] = {}
        self._pid = os.getpid()
        self._fork_lock = threading.Lock()
        self._closed = False
        self._engine = _st.engine(url, self.label, pool_size=pool_size)
        try:
            _st.migrate(self._engine)
        except AuditStoreError:
            self._engine.dispose()
            raise
        except Exception as exc:
            self._engine.dispose()
            raise _st.reworded(exc, self.label) from None

    def __repr__(self) -> str:
        return f"PostgresStore({self.label!r}, privacy={self.privacy.value!r})"

    def close(self) -> None:
        """Close the pool's connections; the store is unusable afterwards."""
        self._closed = True
        self._engine.dispose()

    def url(self) -> str:
        """The URL the store was opened with, password included: for opening another
        connection to the same server (the queue). Never log or show it: :attr:`label`."""
        return self._url

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (this process's own: a forked child gets fresh connections)."""
        if self._closed:
            raise AuditStoreError("the audit store is closed")
        if os.getpid() != self._pid:
            with self._fork_lock:
                if os.getpid() != self._pid:
                    self._engine.dispose(close=False)  # the parent's connections stay its own
                    self._pid = os.getpid()
        return self._engine

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """One transaction; database errors become :class:`AuditStoreError`."""
        try:
            with self.engine.begin() as conn:
                yield conn
        except sa.exc.SQLAlchemyError as exc:
            raise _st.reworded(exc, self.label) from None

    @contextmanager
    def _reading(self) -> Iterator[Connection]:
        """A connection whose transaction only reads (rolled back when done); database errors
        become :class:`AuditStoreError`."""
        try:
            with self.engine.connect() as conn:
                yield conn
        except sa.exc.SQLAlchemyError as exc:
            raise _st.reworded(exc, self.label) from None

    def _read(self, query: sa.Executable, params: Mapping[str, Any] | None = None) -> list[Any]:
        with self._reading() as conn:
            return list(conn.execute(query, params or {}).all())

    # -- runs ----------------------------------------------------------------------------------

    def begin(
        self,
        run_id: str | None = None,
        *,
        meta: Mapping[str, Any] | None = None,
        privacy: PrivacyLevel | str | None = None,
    ) -> str:
        """Start a run (``running``) and return its id; as
        :meth:`AgentRunPersister.begin <nr_llm_core.audit.AgentRunPersister.begin>`."""
        return self._insert_run(run_id, RunStatus.RUNNING, meta, privacy, state=None)

    def _insert_run(
        self,
        run_id: str | None,
        status: RunStatus,
        meta: Mapping[str, Any] | None,
        privacy: PrivacyLevel | str | None,
        *,
        state: Mapping[str, Any] | None,
    ) -> str:
        run_id = new_run_id(run_id)
        asked = None if meta is None else meta.get("privacy")
        level = self.level_for(privacy, asked)
        try:
            meta = run_meta(meta, level)
            meta_json = None if meta is None else encode_json_str(meta)
        except Exception as exc:
            raise AuditStoreError(f"run meta is not JSON: {type(exc).__name__}") from None
        row = {
            "id": run_id,
            "status": status.value,
            "started_at": now(),
            "privacy_level": level.value,
            "meta": meta_json,
        }
        try:
            with self._write() as conn:
                conn.execute(sa.insert(runs), row)
                if state is not None:
                    _st.put_state(conn, run_id, state)
        except AuditStoreError as exc:
            raise AuditStoreError(f"could not begin run {run_id!r}: {exc}") from None
        self._levels[run_id] = level
        return run_id

    def record_traceparent(self, run_id: str, traceparent: str) -> None:
        """Store ``traceparent`` in open run ``run_id``'s meta, under the run row's lock; as
        :meth:`AgentRunPersister.record_traceparent
        <nr_llm_core.audit.AgentRunPersister.record_traceparent>`."""
        with_traceparent(None, traceparent)
        with self._write() as conn:
            _st.require_open(conn, run_id)
            stored = conn.execute(sa.select(runs.c.meta).where(runs.c.id == run_id)).scalar()
            meta = with_traceparent(None if stored is None else decode_json(stored), traceparent)
            if meta is not None:
                conn.execute(
                    sa.update(runs).where(runs.c.id == run_id).values(meta=encode_json_str(meta))
                )

    def _level(self, run_id: str) -> PrivacyLevel | None:
        level = self._levels.get(run_id)
        if level is None:
            if not encodable(run_id):
                return None
            rows = self._read(sa.select(runs.c.privacy_level).where(runs.c.id == run_id))
            if not rows:
                return None
            # As AgentRunPersister: the stored level unless this process names a stricter
            # one (run_level decides), and the stricter is stored with the run.
            level = run_level(rows[0][0], self.ceiling)
            if stored_level_update(rows[0][0], level) is not None:
                with self._write() as conn:
                    stored = conn.execute(
                        sa.select(runs.c.privacy_level).where(runs.c.id == run_id).with_for_update()
                    ).scalar()
                    level = run_level(stored, level)
                    update = stored_level_update(stored, level)
                    if update is not None:
                        conn.execute(
                            sa.update(runs).where(runs.c.id == run_id).values(privacy_level=update)
                        )
            self._levels[run_id] = level
        return level

    def record_step(self, run_id: str, step: RunStep, *, attempt: int | None = None) -> bool:
        """Filter, encode and store ``step``; return whether it was stored. Never raises.

        As :meth:`AgentRunPersister.record_step
        <nr_llm_core.audit.AgentRunPersister.record_step>`: ``False`` for an unknown or
        settled run or a step that cannot be filtered, encoded or written (logged with the
        exception type only); an ``approval`` step claims a suspended run that nobody claimed.
        With ``attempt`` (a worker's take), ``False`` too once that take is not the run's
        latest (ADR 0039).
        """
        try:
            level = self._level(run_id)
            if level is None:
                logger.warning("audit: step for unknown run %r not recorded", run_id)
                return False
            record = self._filters[level].record(step)
            payload = encode_json_str(record)
            tin, tout = tokens(step.fields.get("usage")) if step.kind is StepKind.LLM else (0, 0)
            with self.engine.begin() as conn:
                params = {"rid": run_id, "tin": tin, "tout": tout}
                if attempt is None:
                    bumped = conn.execute(_BUMP, params).first()
                else:
                    bumped = conn.execute(_BUMP_TAKE, {**params, "attempt": attempt}).first()
                if bumped is not None:
                    conn.execute(
                        _INSERT_STEP,
                        {
                            "run_id": run_id,
                            "seq": bumped[0],
                            "kind": record.get("kind", "other"),
                            "round": record.get("round"),
                            "duration_ms": record.get("duration_ms"),
                            "recorded_at": now(),
                            "payload": payload,
                        },
                    )
                    if step.kind is StepKind.APPROVAL and bumped[1] == RunStatus.SUSPENDED:
                        # The decision is recorded: the run is running again, its state gone.
                        _st.end_suspension(conn, run_id, _st.claimant_text(None))
            if bumped is None:
                logger.warning(
                    "audit: run %r is settled%s; step not recorded",
                    run_id,
                    "" if attempt is None else " or taken from this worker",
                )
            return bumped is not None
        except Exception as exc:
            logger.warning(
                "audit: could not record a step for run %r (%s)", run_id, type(exc).__name__
            )
            return False

    def settle(
        self,
        run_id: str,
        status: RunStatus | str,
        *,
        termination_reason: str | None = None,
        iterations: int | None = None,
        truncated: bool | None = None,
        usage: Mapping[str, int] | None = None,
        attempt: int | None = None,
    ) -> None:
        """Give a run its final ``status`` and delete any saved state; as
        :meth:`AgentRunPersister.settle <nr_llm_core.audit.AgentRunPersister.settle>`. With
        ``attempt`` (a worker's take), only while that take is the run's latest, else
        :class:`~nr_llm_core.audit.TakenAwayError` (ADR 0039)."""
        final_status = RunStatus(status)
        if not final_status.final:
            raise AuditStoreError(f"{final_status.value!r} is not a final status")
        level = self._level(run_id)
        if level is None:
            raise UnknownRunError(f"no run {run_id!r}")
        values: dict[str, Any] = {
            "status": final_status.value,
            "ended_at": now(),
            "termination_reason": self._filters[level].filter_reason(termination_reason),
        }
        if iterations is not None:
            values["iterations"] = int(iterations)
        if truncated is not None:
            values["truncated"] = bool(truncated)
        if usage is not None:
            values["tokens_in"], values["tokens_out"] = tokens(usage)
        with self._write() as conn:
            _st.require_open(conn, run_id, attempt)
            conn.execute(sa.update(runs).where(runs.c.id == run_id).values(**values))
            conn.execute(sa.delete(states).where(states.c.run_id == run_id))
        self._levels.pop(run_id, None)

    # -- suspension ----------------------------------------------------------------------------

    def suspend(self, run_id: str, state: Mapping[str, Any], *, attempt: int | None = None) -> None:
        """Store the state a suspended run resumes from and set it ``suspended``.

        Refused as by the SQLite store (artifacts, non-JSON). The state is a row of its own,
        signed with the host secret, which a shared store requires
        (``$NR_LLM_SECRET`` or ``$NR_LLM_SECRET_FILE``); it is deleted when the wait ends.
        With ``attempt`` (a worker's take), only while that take is the run's latest, else
        :class:`~nr_llm_core.audit.TakenAwayError` (ADR 0039)."""
        refuse_artifacts(state)
        with self._write() as conn:
            _st.require_open(conn, run_id, attempt)
            _st.put_state(conn, run_id, state)
            values: dict[str, Any] = {
                "status": RunStatus.SUSPENDED.value,
                "taken_by": None,
                "termination_reason": None,
            }
            counted = state.get("iterations")
            if type(counted) is int and counted >= 0:  # the completions so far, shown
                values["iterations"] = counted
            conn.execute(sa.update(runs).where(runs.c.id == run_id).values(**values))

    def load_suspended(self, run_id: str) -> dict[str, Any] | None:
        """The state of a suspended run, or ``None`` when it is not waiting.

        :class:`~nr_llm_core.audit.SuspendedStateError` when the run waits but its state row
        is missing or does not match its signature."""
        with self._write() as conn:
            found = _st.read_state(conn, run_id, RunStatus.SUSPENDED, lock=False)
        return None if found is None else found.state

    def claim_suspended(
        self, run_id: str, *, digest: str | None = None, claimant: str | None = None
    ) -> dict[str, Any]:
        """Take a suspended run for resuming, once; as :meth:`AgentRunPersister.claim_suspended
        <nr_llm_core.audit.AgentRunPersister.claim_suspended>`, under the run row's lock."""
        who = _st.claimant_text(claimant)
        with self._write() as conn:
            found = _st.waiting(conn, run_id, digest)
            _st.end_suspension(conn, run_id, who)
        return found.state

    def mark_resumed(self, run_id: str, *, claimant: str | None = None) -> None:
        """Claim a suspended run without reading its state."""
        with self._write() as conn:
            if _st.require_open(conn, run_id) != RunStatus.SUSPENDED:
                raise AuditStoreError(f"run {run_id!r} is not suspended")
            _st.end_suspension(conn, run_id, _st.claimant_text(claimant))

    def discard(self, run_id: str, *, claimant: str | None = None) -> None:
        """Give up a waiting run: ``cancelled`` (reason ``discarded``), state deleted; a run
        whose state row is lost or altered can still be discarded."""
        with self._write() as conn:
            _st.discard(conn, run_id, _st.claimant_text(claimant))
        self._levels.pop(run_id, None)

    # -- reading and retention -----------------------------------------------------------------

    def list_runs(self, limit: int = 50) -> list[RunRecord]:
        """The most recently started runs first."""
        query = _st.RUN_SELECT.order_by(runs.c.started_at.desc(), runs.c.id.desc()).limit(
            max(0, int(limit))
        )
        return [run_record(tuple(row)) for row in self._read(query)]

    def resolve_run_id(self, given: str) -> str:
        """The id of the run ``given`` names: its whole id, or a prefix of at least four
        characters that exactly one run's id starts with (case-sensitive, no wildcard;
        compared in byte order whatever the database's collation).
        :class:`~nr_llm_core._audit_records.UnknownRunError` when none matches,
        :class:`~nr_llm_core._audit_records.AmbiguousRunIdError` naming up to five when several
        do."""
        shown = given[:80]
        if not encodable(given):
            raise UnknownRunError(f"no such run {shown!r}")
        if self._read(sa.select(runs.c.id).where(runs.c.id == given)):
            return given
        if len(given) < _MIN_PREFIX:
            raise UnknownRunError(
                f"no such run {shown!r} (a prefix needs at least {_MIN_PREFIX} characters)"
            )
        key = runs.c.id.collate("C")
        rows = self._read(
            sa.select(runs.c.id)
            .where(key >= given, key < given + "\U0010ffff")
            .order_by(key)
            .limit(_MAX_CANDIDATES + 1)
        )
        matches = [str(r[0]) for r in rows if str(r[0]).startswith(given)]
        return chosen_run(given, matches)

    def get_run(self, run_id: str) -> RunRecord | None:
        """One run, or ``None``."""
        if not encodable(run_id):
            return None
        rows = self._read(_st.RUN_SELECT.where(runs.c.id == run_id))
        return run_record(tuple(rows[0])) if rows else None

    def steps_of(
        self, run_ids: Collection[str], *, kind: str, first: bool = False
    ) -> dict[str, list[dict[str, Any]]]:
        """The stored ``kind`` steps of each of ``run_ids``, decoded, in sequence order, in
        one query (see :meth:`~nr_llm_core.audit.AgentRunPersister.steps_of`)."""
        ids = [i for i in dict.fromkeys(run_ids) if encodable(i)]
        if not ids:
            return {}
        query = sa.select(events.c.run_id, events.c.payload).where(
            events.c.kind == kind, events.c.run_id.in_(ids)
        )
        if first:
            query = query.where(events.c.seq == 1)
        found: dict[str, list[dict[str, Any]]] = {}
        for run_id, payload in self._read(query.order_by(events.c.run_id, events.c.seq)):
            found.setdefault(str(run_id), []).append(decode_json(payload))
        return found

    def steps(self, run_id: str) -> list[StepRecord]:
        """A run's stored steps in sequence order, exactly as stored."""
        if not encodable(run_id):
            return []
        query = (
            sa.select(
                events.c.seq,
                events.c.kind,
                events.c.round,
                events.c.duration_ms,
                events.c.recorded_at,
                events.c.payload,
            )
            .where(events.c.run_id == run_id)
            .order_by(events.c.seq)
        )
        return [
            StepRecord(
                seq=r[0],
                kind=r[1],
                round=r[2],
                duration_ms=r[3],
                recorded_at=r[4],
                payload=r[5],
                step=decode_json(r[5]),
            )
            for r in self._read(query)
        ]

    def purge(self, older_than_days: float) -> int:
        """Delete every run started more than ``older_than_days`` ago, with its steps and
        state. Returns the number of runs deleted. The rows are gone for every reader at
        once; their bytes stay in the server's files until VACUUM reuses the space, and in
        its WAL and backups (ADR 0024)."""
        if older_than_days < 0:
            raise AuditStoreError("older_than_days must be >= 0")
        cutoff = (dt.datetime.now(dt.UTC) - dt.timedelta(days=older_than_days)).strftime(
            "%Y-%m-%dT%H:%M:%S.%fZ"
        )
        old = sa.select(runs.c.id).where(runs.c.started_at < cutoff).scalar_subquery()
        with self._write() as conn:
            conn.execute(sa.delete(events).where(events.c.run_id.in_(old)))
            conn.execute(sa.delete(states).where(states.c.run_id.in_(old)))
            deleted = conn.execute(sa.delete(runs).where(runs.c.started_at < cutoff)).rowcount
        self._levels.clear()
        return int(deleted)

    # -- runs that workers execute (nr_llm_core.stores.queue) ----------------------------------

    def enqueue(
        self,
        state: Mapping[str, Any],
        *,
        meta: Mapping[str, Any] | None = None,
        privacy: PrivacyLevel | str | None = None,
        run_id: str | None = None,
    ) -> str:
        """Record a run that a worker will start (status ``queued``) with its start state
        (a :class:`~nr_llm_core.approval.SuspendedRunState` with nothing pending), signed;
        return its id. The queue carries only the id."""
        refuse_artifacts(state)
        return self._insert_run(
            run_id or state.get("run_id"), RunStatus.QUEUED, meta, privacy, state=state
        )

    def approve_queued(
        self,
        run_id: str,
        *,
        digest: str,
        decisions: Mapping[str, bool],
        claimant: str | None = None,
    ) -> None:
        """Claim a suspended run for a worker: the decisions are stored with its state
        (signed), the approver recorded as the claimant, and the run ``queued`` again. Refused
        like :meth:`claim_suspended` (:class:`~nr_llm_core.errors.AlreadyClaimedError` for the
        second approver), and with :class:`~nr_llm_core.errors.ApprovalError` for decisions a
        resume would refuse (a call id that is not pending, a value that is not a bool)."""
        who = _st.claimant_text(claimant)
        with self._write() as conn:
            found = _st.waiting(conn, run_id, digest)
            # Decisions a resume would refuse are refused here, before the commit, where the
            # approver reads the error (ADR 0036), not later in a worker.
            decisions_for(SuspendedRunState.from_dict(found.state), decisions)
            # A run whose approved calls a lost worker had begun keeps the decisions they
            # were begun under and the mark (ADR 0039): the worker that takes it answers
            # them as possibly run (denied ones as denied), whatever is decided now.
            _st.put_state(
                conn,
                run_id,
                found.state,
                decisions=dict(decisions) if found.applying is None else found.decisions,
                applying=found.applying,
            )
            at = now()
            conn.execute(
                sa.update(runs)
                .where(runs.c.id == run_id)
                .values(
                    status=RunStatus.QUEUED.value,
                    claimed_by=who,
                    claimed_at=at,
                    termination_reason=None,  # why a worker gave it back: decided again
                )
            )

    def withdraw_approval(
        self, run_id: str, *, worker: str | None = None, attempt: int | None = None
    ) -> bool:
        """Undo :meth:`approve_queued` before any approved call ran: the run waits again on
        its state, unclaimed, the decisions dropped. Without ``worker``, when no worker can
        be told of it (the queue refused the job); with ``worker`` and ``attempt`` (its take's
        number, :attr:`Taken.attempt <nr_llm_core.stores._pg_states.Taken.attempt>`), when
        that take, still the run's latest, cannot run an approved call. ``False`` when the
        run is no longer so (ADR 0036, ADR 0039). ``TypeError`` for one without the other."""
        if (worker is None) != (attempt is None):
            # A name alone cannot tell two takes of one worker process apart.
            raise TypeError("a worker's withdrawal names its take: worker= and attempt=")
        with self._write() as conn:
            return _st.withdraw_approval(conn, run_id, worker, attempt)

    def give_back(self, run_id: str, *, attempt: int | None = None) -> bool:
        """Hand a run this worker cannot take (its state fails this worker's checks: another
        host secret, altered, unreadable) back to the operator: it waits again, unclaimed,
        its state row as it is, reason ``state_not_verified`` (ADR 0038), or
        ``state_not_verified_calls_begun`` when a lost worker had begun its approved calls
        (ADR 0039). With ``attempt``: the worker took it in that take, still the latest, and
        failed before it began anything of it (reason ``worker_could_not_start``). Whether
        it was."""
        with self._write() as conn:
            return _st.give_back(conn, run_id, attempt=attempt)

    def holds(self, run_id: str, *, attempt: int) -> bool:
        """Whether the run is ``running`` in its take number ``attempt`` (the latest take:
        the queue has not handed it to another worker since, ADR 0039)."""
        # A plain read suffices (it never locked): the answer is the last committed row. A
        # lock would only make a take in flight wait to be seen, the same race as a take
        # that commits just after the check (ADR 0039's "not covered"), and the answer goes
        # stale the moment either returns. What this take writes afterwards is refused
        # under the run row's lock anyway (record_step, settle, suspend, mark_applying): the
        # check only stops a stale take before a tool call or a completion.
        with self._reading() as conn:
            return _st.holds(conn, run_id, attempt)

    def mark_applying(self, run_id: str, *, worker: str, attempt: int) -> bool:
        """Record, committed, that ``worker`` begins running the approved calls of the run it
        was handed in its take number ``attempt`` (:attr:`Taken.attempt
        <nr_llm_core.stores._pg_states.Taken.attempt>`): a worker that takes the run after
        this one is lost will not run them again. ``False`` when that take no longer holds
        the run (the queue handed it to another worker) or the calls were already begun."""
        with self._write() as conn:
            return _st.mark_applying(conn, run_id, worker, attempt)

    def take(
        self, run_id: str, *, worker: str, zone: str, privacy: PrivacyLevel | str | None = None
    ) -> _st.Taken | None:
        """Hand a queued run to ``worker`` (status ``running``), or hand it again to the
        worker the engine retries it on after the first one was lost (the run still
        ``running``, its state kept). ``None`` when the run is not one to execute (settled,
        waiting for a human, unknown). The run's trust zone and privacy level become the
        stricter of what they were and this worker's (``zone``, ``privacy``)."""
        with self._write() as conn:
            taken = _st.take(conn, run_id, worker, zone, (self.ceiling, privacy))
        if taken is not None:
            self._levels[run_id] = resolve_privacy_level(taken.privacy_level)
        return taken
