"""The audit store: every run and each of its steps, on SQLite, through the privacy filter.

:class:`AgentRunPersister` writes one transaction per step as the step happens; a crash loses
at most the step being written. Each step is filtered at its run's privacy level, encoded with
the project's one encoder (:func:`~nr_llm_core.encoding.encode_json_str`) and inserted with a
sequence number allocated inside the same write transaction (``BEGIN IMMEDIATE``), so threads
and processes sharing one file never collide and never leave a gap.

Run life cycle::

    begin() ──▶ running ──suspend()──▶ suspended ──mark_resumed()──▶ running
                   │                      │
                   └──── settle() ────────┴──▶ completed | failed | cancelled   (final)

A final status cannot be settled again: :class:`RunSettledError`. Steps are accepted while a
run is running or suspended; for a settled or unknown run :meth:`~AgentRunPersister.record_step`
returns ``False``.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import sqlite3
import threading
import uuid
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, final

from nr_llm_core import _audit_schema
from nr_llm_core._audit_records import (
    AuditStoreError,
    RunRecord,
    RunSettledError,
    RunStatus,
    StepRecord,
    UnknownRunError,
    refuse_artifacts,
    run_record,
)
from nr_llm_core._audit_schema import (
    ADD_TOKENS,
    INSERT_AT,
    INSERT_NEXT,
    RESUME,
    RUN_COLUMNS,
    fetch_seq,
    now,
    tokens,
)
from nr_llm_core.encoding import decode_json, encode_json_str
from nr_llm_core.privacy import PrivacyLevel, RunStepPrivacyFilter, resolve_privacy_level
from nr_llm_core.trace import RunStep, RunTrace, StepKind, StepListener

__all__ = [
    "DB_ENV_VAR",
    "AgentRunPersister",
    "AuditStoreError",
    "RunRecord",
    "RunSettledError",
    "RunStatus",
    "StepRecord",
    "UnknownRunError",
    "default_db_path",
]

logger = logging.getLogger("nr_llm.audit")

#: The environment variable naming the audit database file.
DB_ENV_VAR: Final = "NR_LLM_DB"
_DEFAULT_DB: Final = Path(".nr-llm") / "audit.db"


def default_db_path() -> Path:
    """``$NR_LLM_DB`` if set, else ``./.nr-llm/audit.db``."""
    value = os.environ.get(DB_ENV_VAR, "").strip()
    return Path(value) if value else _DEFAULT_DB


@final
class AgentRunPersister:
    """Records runs and their steps in the SQLite file at ``path``.

    ``privacy`` is the default level for runs begun here (``None``: ``NR_LLM_PRIVACY_LEVEL``,
    else METADATA); :meth:`begin` can set a run's own level, which is stored with the run.
    One connection per persister, guarded by a lock: a persister can be shared by threads.
    Use it as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        privacy: PrivacyLevel | str | None = None,
        known_tools: Collection[str] | None = None,
        busy_timeout_ms: int = 30_000,
    ) -> None:
        self.path = Path(path)
        self.privacy = resolve_privacy_level(privacy)
        self._busy_timeout_ms = busy_timeout_ms
        self._filters = {
            level: RunStepPrivacyFilter(level, known_tools=known_tools) for level in PrivacyLevel
        }
        self._levels: dict[str, PrivacyLevel] = {}
        self._next_seq: dict[str, int] = {}
        self._lock = threading.RLock()
        self._pid = os.getpid()
        try:
            self._conn = _audit_schema.connect(self.path, busy_timeout_ms=busy_timeout_ms)
        except _audit_schema.SchemaVersionError as exc:
            raise AuditStoreError(str(exc)) from None

    def __repr__(self) -> str:
        return f"AgentRunPersister({str(self.path)!r}, privacy={self.privacy.value!r})"

    def __enter__(self) -> AgentRunPersister:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (a checkpoint folds the WAL into the database file)."""
        with self._lock:
            self._conn.close()

    # -- transactions --------------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        # Call with the lock held. A SQLite connection must not be used across a fork.
        if os.getpid() != self._pid:
            self._conn = _audit_schema.connect(self.path, busy_timeout_ms=self._busy_timeout_ms)
            self._pid = os.getpid()
        return self._conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; SQLite errors become :class:`AuditStoreError`."""
        with self._lock:
            try:
                conn = self._connection()
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise AuditStoreError(f"audit database error: {type(exc).__name__}") from exc

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        with self._lock:
            try:
                return self._connection().execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise AuditStoreError(f"audit database error: {type(exc).__name__}") from exc

    # -- runs ----------------------------------------------------------------------------------

    def begin(
        self,
        run_id: str | None = None,
        *,
        meta: Mapping[str, Any] | None = None,
        privacy: PrivacyLevel | str | None = None,
    ) -> str:
        """Start a run (status ``running``) and return its id (a new UUID when not given).

        ``meta`` is host metadata (model name, allowed tools …), stored as JSON at every
        level: never put model or tool bytes in it. The run's privacy level is ``privacy``,
        else ``meta["privacy"]`` (how :class:`~nr_llm_core.loop.ToolLoop` passes its level),
        else the persister's.
        """
        run_id = run_id or uuid.uuid4().hex
        if privacy is None and meta is not None and "privacy" in meta:
            privacy = meta["privacy"]  # ToolLoop(privacy=...) passes its level in meta
        level = self.privacy if privacy is None else resolve_privacy_level(privacy)
        try:
            meta_json = None if meta is None else encode_json_str(dict(meta))
        except Exception as exc:
            raise AuditStoreError(f"run meta is not JSON: {type(exc).__name__}") from None
        try:
            with self._write() as conn:
                conn.execute(
                    "INSERT INTO runs (id, status, started_at, privacy_level, meta) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (run_id, RunStatus.RUNNING.value, now(), level.value, meta_json),
                )
        except Exception as exc:
            raise AuditStoreError(f"could not begin run {run_id!r}: {type(exc).__name__}") from exc
        self._levels[run_id] = level
        self._next_seq[run_id] = 1
        return run_id

    def _level(self, run_id: str) -> PrivacyLevel | None:
        level = self._levels.get(run_id)
        if level is None:
            rows = self._read("SELECT privacy_level FROM runs WHERE id = ?", (run_id,))
            if not rows:
                return None
            # A stored level this code does not know is read as METADATA, never as more.
            level = self._levels[run_id] = resolve_privacy_level(rows[0][0])
        return level

    def record_step(self, run_id: str, step: RunStep) -> bool:
        """Filter, encode and store ``step``; return whether it was stored. Never raises.

        ``False`` when the run is unknown or settled, or the step cannot be filtered, encoded
        or written (logged as a warning with the exception type only: the message could hold
        step bytes). The run's sequence number advances only when a step is stored.
        Recording an ``approval`` step for a suspended run resumes it in the same transaction
        (status ``running``, saved state cleared).
        """
        try:
            level = self._level(run_id)
            if level is None:
                logger.warning("audit: step for unknown run %r not recorded", run_id)
                return False
            record = self._filters[level].filter(step.to_dict())
            payload = encode_json_str(record)
            tokens_in, tokens_out = (
                tokens(step.fields.get("usage")) if step.kind is StepKind.LLM else (0, 0)
            )
            params = (
                run_id,
                record.get("kind", "other"),
                record.get("round"),
                record.get("duration_ms"),
                now(),
                payload,
            )
            with self._lock:
                conn = self._connection()
                resumes = step.kind is StepKind.APPROVAL
                if tokens_in or tokens_out or resumes:
                    conn.execute("BEGIN IMMEDIATE")
                    try:
                        seq = fetch_seq(conn.execute(INSERT_NEXT, params))
                        if seq is not None and (tokens_in or tokens_out):
                            conn.execute(ADD_TOKENS, (tokens_in, tokens_out, run_id))
                        if seq is not None and resumes:
                            # The decision is recorded: the run is running again and its
                            # saved state is gone, so the same approval cannot be replayed.
                            conn.execute(RESUME, (run_id,))
                        conn.execute("COMMIT")
                    except BaseException:
                        if conn.in_transaction:
                            conn.execute("ROLLBACK")
                        raise
                else:
                    seq = self._insert(conn, run_id, params)
                stored = seq is not None
                if seq is not None:
                    self._next_seq[run_id] = seq + 1
            if not stored:
                logger.warning("audit: run %r is settled; step not recorded", run_id)
            return stored
        except Exception as exc:
            logger.warning(
                "audit: could not record a step for run %r (%s)", run_id, type(exc).__name__
            )
            return False

    def _insert(self, conn: sqlite3.Connection, run_id: str, params: tuple[Any, ...]) -> int | None:
        # Each statement is its own transaction, and takes the write lock before it reads.
        # Fast path: the number after the last one this persister stored. If another writer
        # took it, UNIQUE(run_id, seq) refuses the row and the allocating insert (MAX + 1,
        # atomically) is used. Only a number that is MAX + 1 can be inserted without a
        # conflict, because the numbers below it all exist: the sequence stays gap-free.
        seq = self._next_seq.get(run_id)
        if seq is not None:
            try:
                inserted = conn.execute(INSERT_AT, (*params, seq)).rowcount == 1
            except sqlite3.IntegrityError as exc:
                if exc.sqlite_errorcode != sqlite3.SQLITE_CONSTRAINT_UNIQUE:
                    raise
            else:
                return seq if inserted else None  # not inserted: the run is not open
        return fetch_seq(conn.execute(INSERT_NEXT, params))

    def listener(self, run_id: str | None = None) -> StepListener:
        """A :meth:`RunTrace.add_listener` callback recording each step (``run_id`` defaults
        to the trace's own id)."""

        def record(trace: RunTrace, step: RunStep) -> None:
            self.record_step(run_id or trace.run_id, step)

        return record

    def attach(self, trace: RunTrace, *, meta: Mapping[str, Any] | None = None) -> str:
        """Begin a run with ``trace.run_id`` and record every step the trace records from now."""
        run_id = self.begin(trace.run_id, meta=meta)
        trace.add_listener(self.listener(run_id))
        return run_id

    def settle(
        self,
        run_id: str,
        status: RunStatus | str,
        *,
        termination_reason: str | None = None,
        iterations: int | None = None,
        truncated: bool | None = None,
        usage: Mapping[str, int] | None = None,
    ) -> None:
        """Give a run its final ``status`` and clear any suspended state.

        ``usage`` (``input_tokens``/``output_tokens``), when given, replaces the token totals
        summed from the run's llm steps. ``termination_reason`` is stored under the run's
        privacy rule for reasons (see :mod:`nr_llm_core.privacy`). Raises
        :class:`UnknownRunError`, :class:`RunSettledError` (already final), or
        :class:`AuditStoreError` (``status`` not final, or the write failed).
        """
        final_status = RunStatus(status)
        if not final_status.final:
            raise AuditStoreError(f"{final_status.value!r} is not a final status")
        level = self._level(run_id)
        if level is None:
            raise UnknownRunError(f"no run {run_id!r}")
        reason = self._filters[level].filter_reason(termination_reason)
        with self._write() as conn:
            self._require_open(conn, run_id)
            sets = [
                "status = ?",
                "ended_at = ?",
                "termination_reason = ?",
                "suspended_state = NULL",
            ]
            params: list[Any] = [final_status.value, now(), reason]
            if iterations is not None:
                sets.append("iterations = ?")
                params.append(int(iterations))
            if truncated is not None:
                sets.append("truncated = ?")
                params.append(bool(truncated))
            if usage is not None:
                sets.extend(["tokens_in = ?", "tokens_out = ?"])
                params.extend(tokens(usage))
            conn.execute(f"UPDATE runs SET {', '.join(sets)} WHERE id = ?", (*params, run_id))  # noqa: S608  # only fixed column names are joined
        self._levels.pop(run_id, None)
        self._next_seq.pop(run_id, None)

    def settle_completed(self, run_id: str, **kwargs: Any) -> None:
        """:meth:`settle` with ``completed``."""
        self.settle(run_id, RunStatus.COMPLETED, **kwargs)

    def settle_failed(self, run_id: str, **kwargs: Any) -> None:
        """:meth:`settle` with ``failed``."""
        self.settle(run_id, RunStatus.FAILED, **kwargs)

    def settle_cancelled(self, run_id: str, **kwargs: Any) -> None:
        """:meth:`settle` with ``cancelled``."""
        self.settle(run_id, RunStatus.CANCELLED, **kwargs)

    @staticmethod
    def _require_open(conn: Any, run_id: str) -> str:
        row = conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise UnknownRunError(f"no run {run_id!r}")
        if RunStatus(row[0]).final:
            raise RunSettledError(f"run {run_id!r} is already {row[0]}")
        return str(row[0])

    # -- suspension ----------------------------------------------------------------------------

    def suspend(self, run_id: str, state: Mapping[str, Any]) -> None:
        """Store the state a suspended run resumes from and set its status to ``suspended``.

        The state is messages and pending calls only: anything that is or looks like an
        artifact (an :class:`Artifact` or :class:`ToolResult`, a key named ``artifacts`` or
        ``tool_artifacts``, a ``{type, label, data}`` artifact dict) is refused with
        :class:`AuditStoreError`, never silently dropped. It is stored as given at every
        privacy level (a run cannot resume without its messages) and cleared when the run is
        resumed (an ``approval`` step is recorded, or :meth:`mark_resumed`) or settled.
        """
        refuse_artifacts(state)
        try:
            state_json = encode_json_str(dict(state))
        except Exception as exc:
            raise AuditStoreError(f"suspended state is not JSON: {type(exc).__name__}") from None
        with self._write() as conn:
            self._require_open(conn, run_id)
            conn.execute(
                "UPDATE runs SET status = ?, suspended_state = ? WHERE id = ?",
                (RunStatus.SUSPENDED.value, state_json, run_id),
            )

    def load_suspended(self, run_id: str) -> dict[str, Any] | None:
        """The stored state of a suspended run, or ``None`` when it has none."""
        rows = self._read(
            "SELECT suspended_state FROM runs WHERE id = ? AND status = ?",
            (run_id, RunStatus.SUSPENDED.value),
        )
        if not rows or rows[0][0] is None:
            return None
        state: dict[str, Any] = decode_json(rows[0][0])
        return state

    def mark_resumed(self, run_id: str) -> None:
        """Set a suspended run back to ``running`` and clear its stored state."""
        with self._write() as conn:
            if self._require_open(conn, run_id) != RunStatus.SUSPENDED:
                raise AuditStoreError(f"run {run_id!r} is not suspended")
            conn.execute(
                "UPDATE runs SET status = ?, suspended_state = NULL WHERE id = ?",
                (RunStatus.RUNNING.value, run_id),
            )

    # -- reading and retention -----------------------------------------------------------------

    def list_runs(self, limit: int = 50) -> list[RunRecord]:
        """The most recently started runs first."""
        rows = self._read(
            f"SELECT {RUN_COLUMNS} FROM runs ORDER BY started_at DESC, rowid DESC LIMIT ?",  # noqa: S608  # a constant column list
            (max(0, int(limit)),),
        )
        return [run_record(row) for row in rows]

    def get_run(self, run_id: str) -> RunRecord | None:
        """One run, or ``None``."""
        rows = self._read(f"SELECT {RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,))  # noqa: S608  # a constant column list
        return run_record(rows[0]) if rows else None

    def steps(self, run_id: str) -> list[StepRecord]:
        """A run's stored steps in sequence order, exactly as stored."""
        rows = self._read(
            "SELECT seq, kind, round, duration_ms, recorded_at, payload FROM events "
            "WHERE run_id = ? ORDER BY seq",
            (run_id,),
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
            for r in rows
        ]

    def purge(self, older_than_days: float) -> int:
        """Delete every run started more than ``older_than_days`` ago, with its steps.

        Returns the number of runs deleted. Deleted pages are overwritten (``secure_delete``)
        and the WAL is checkpointed and truncated, so the bytes leave the files too.
        """
        if older_than_days < 0:
            raise AuditStoreError("older_than_days must be >= 0")
        cutoff = (dt.datetime.now(dt.UTC) - dt.timedelta(days=older_than_days)).strftime(
            "%Y-%m-%dT%H:%M:%S.%fZ"
        )
        with self._write() as conn:
            conn.execute(
                "DELETE FROM events WHERE run_id IN (SELECT id FROM runs WHERE started_at < ?)",
                (cutoff,),
            )
            deleted = conn.execute("DELETE FROM runs WHERE started_at < ?", (cutoff,)).rowcount
        with self._lock:
            # Best effort: a reader in another process can hold the WAL; the next checkpoint
            # (at the latest when the last connection closes) overwrites it.
            try:
                self._connection().execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            except sqlite3.Error as exc:
                logger.warning("audit: WAL checkpoint after purge failed (%s)", type(exc).__name__)
        self._levels.clear()
        self._next_seq.clear()
        return int(deleted)
