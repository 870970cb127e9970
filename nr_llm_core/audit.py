"""The audit store: every run and each of its steps, on SQLite, through the privacy filter.

:class:`AgentRunPersister` writes one transaction per step as the step happens; a crash loses
at most the step being written. Each step is filtered at its run's privacy level, encoded with
the project's one encoder (:func:`~nr_llm_core.encoding.encode_json_str`) and inserted with a
sequence number allocated inside the same write transaction (``BEGIN IMMEDIATE``), so threads
and processes sharing one file never collide and never leave a gap.

Run life cycle::

    begin() ──▶ running ──suspend()──▶ suspended ──claim_suspended()──▶ running
                   │                      │  └──────discard()──────▶ cancelled
                   ├──── settle() ────────┴──▶ completed | failed | cancelled   (final)
                   └──── abandon() (its runner provably gone) ──▶ failed

The process that begins or claims a run is recorded as its runner (:mod:`._audit_runner`):
a run whose process was killed stays ``running`` until :meth:`~AgentRunPersister.abandon`.

A final status cannot be settled again: :class:`RunSettledError`. Steps are accepted while a
run is running or suspended; for a settled or unknown run :meth:`~AgentRunPersister.record_step`
returns ``False``. A suspended run's state is a file of its own (:mod:`._audit_states`), never
a row: it leaves the disk when the suspension ends. Leaving ``suspended`` is a claim, taken in
one write transaction: of two resumers, one gets the run and the other
:class:`~nr_llm_core.errors.AlreadyClaimedError`, naming the first and the time.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import sqlite3
import threading
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, final

from nr_llm_core import _audit_schema, _audit_states
from nr_llm_core import _audit_suspension as _suspension
from nr_llm_core._audit_records import (
    ABANDONED,
    MAX_CANDIDATES,
    MIN_RUN_ID_PREFIX,
    AmbiguousRunIdError,
    AuditStoreError,
    RunnerNotGoneError,
    RunRecord,
    RunSettledError,
    RunStatus,
    StepRecord,
    SuspendedStateError,
    TakenAwayError,
    UnknownRunError,
    chosen_run,
    encodable,
    new_run_id,
    refuse_artifacts,
    run_record,
)
from nr_llm_core._audit_runner import Runner, RunnerState, refusal, runner_state, this_runner
from nr_llm_core._audit_schema import (
    ADD_TOKENS,
    INSERT_AT,
    INSERT_NEXT,
    RUN_COLUMNS,
    fetch_seq,
    now,
    tokens,
)
from nr_llm_core._audit_store_base import StoreBase
from nr_llm_core._audit_suspension import claimant
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
from nr_llm_core.trace import RunStep, StepKind
from nr_llm_core.traceparent import with_traceparent

__all__ = [
    "DB_ENV_VAR",
    "MIN_RUN_ID_PREFIX",
    "AgentRunPersister",
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
    "claimant",
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
class AgentRunPersister(StoreBase):
    """Records runs and their steps in the SQLite file at ``path``.

    ``privacy`` is this store's level: the widest any run begun here is recorded at (``None``:
    none named; then ``NR_LLM_PRIVACY_LEVEL``, else METADATA, applies). A run may ask for a
    stricter level (:meth:`begin`), never a wider one: :func:`~nr_llm_core.privacy.effective_level`
    decides, and the level applied is stored with the run. A run begun elsewhere is recorded
    here at its stored level, or at this store's or the environment's when that is stricter
    (:func:`~nr_llm_core.privacy.run_level`, stored with the run). Suspended states are files in
    ``<path>-suspended/``. One connection per persister, guarded by a lock: a persister can be
    shared by threads. Use it as a context manager, or call :meth:`close`.
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
        #: The level this store was constructed with, ``None`` when none was named.
        self.ceiling = None if privacy is None else resolve_privacy_level(privacy)
        #: The level a run begun now gets when it asks for nothing stricter.
        self.privacy = effective_level(self.ceiling)
        self._states = _audit_states.state_dir(self.path)
        self._busy_timeout_ms = busy_timeout_ms
        self._filters = {
            level: RunStepPrivacyFilter(level, known_tools=known_tools) for level in PrivacyLevel
        }
        self._levels: dict[str, PrivacyLevel] = {}
        self._next_seq: dict[str, int] = {}
        self._lock = threading.RLock()
        self._forks = _audit_schema.forks()
        self._moved_states = False
        try:
            self._conn = self._connect()
        except _audit_schema.SchemaVersionError as exc:
            raise AuditStoreError(str(exc)) from None
        if self._moved_states:  # the upgrade cleared old states: fold the WAL in now
            self._checkpoint("upgrade")
        try:
            self._sweep()
        except (AuditStoreError, OSError) as exc:  # best effort: the next open sweeps again
            logger.warning("audit: could not sweep the state files (%s)", type(exc).__name__)

    def __repr__(self) -> str:
        return f"AgentRunPersister({str(self.path)!r}, privacy={self.privacy.value!r})"

    def close(self) -> None:
        """Close the connection (a checkpoint folds the WAL into the database file)."""
        with self._lock:
            self._conn.close()

    # -- transactions --------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        return _audit_schema.connect(
            self.path, busy_timeout_ms=self._busy_timeout_ms, on_upgrade=self._move_out_states
        )

    def _connection(self) -> sqlite3.Connection:
        # Call with the lock held. A SQLite connection must not be used across a fork.
        if _audit_schema.forks() != self._forks:
            self._conn = self._connect()
            self._forks = _audit_schema.forks()
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
        level: never put model or tool bytes in it. The run's privacy level is the stricter
        of this store's and the one the run asks for: ``privacy``, and ``meta["privacy"]``
        (how :class:`~nr_llm_core.loop.ToolLoop` passes a level it was given).
        """
        run_id = new_run_id(run_id)
        asked = None if meta is None else meta.get("privacy")
        level = self.level_for(privacy, asked)
        try:
            meta = run_meta(meta, level)
            meta_json = None if meta is None else encode_json_str(meta)
        except Exception as exc:
            raise AuditStoreError(f"run meta is not JSON: {type(exc).__name__}") from None
        runner = this_runner()  # who drives it, to tell later whether it still does
        try:
            with self._write() as conn:
                conn.execute(
                    "INSERT INTO runs (id, status, started_at, privacy_level, meta, "
                    "runner_host, runner_pid, runner_started) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        run_id,
                        RunStatus.RUNNING.value,
                        now(),
                        level.value,
                        meta_json,
                        runner.host,
                        runner.pid,
                        runner.started,
                    ),
                )
        except Exception as exc:
            raise AuditStoreError(f"could not begin run {run_id!r}: {type(exc).__name__}") from exc
        self._levels[run_id] = level
        self._next_seq[run_id] = 1
        return run_id

    def record_traceparent(self, run_id: str, traceparent: str) -> None:
        """Store ``traceparent`` in open run ``run_id``'s meta, every other key kept: the span
        of the run's latest segment, which a resumption's telemetry records (ADR 0026).
        ``ValueError`` when it is not a W3C ``traceparent``; :class:`UnknownRunError` /
        :class:`RunSettledError` when the run is unknown or has ended."""
        with_traceparent(None, traceparent)  # refused before the write lock is taken
        _known_text(run_id)
        with self._write() as conn:
            self._require_open(conn, run_id)
            row = conn.execute("SELECT meta FROM runs WHERE id = ?", (run_id,)).fetchone()
            meta = with_traceparent(None if row[0] is None else decode_json(row[0]), traceparent)
            if meta is not None:
                conn.execute(
                    "UPDATE runs SET meta = ? WHERE id = ?", (encode_json_str(meta), run_id)
                )

    def _level(self, run_id: str) -> PrivacyLevel | None:
        level = self._levels.get(run_id)
        if level is None:
            if not encodable(run_id):
                return None
            rows = self._read("SELECT privacy_level FROM runs WHERE id = ?", (run_id,))
            if not rows:
                return None
            # A run begun elsewhere: its stored level, unless this process names a stricter
            # one (run_level decides, for both stores); the stricter is stored with the run.
            level = run_level(rows[0][0], self.ceiling)
            if stored_level_update(rows[0][0], level) is not None:
                with self._write() as conn:
                    row = conn.execute(
                        "SELECT privacy_level FROM runs WHERE id = ?", (run_id,)
                    ).fetchone()
                    stored = None if row is None else row[0]
                    level = run_level(stored, level)
                    update = stored_level_update(stored, level)
                    if update is not None:
                        conn.execute(
                            "UPDATE runs SET privacy_level = ? WHERE id = ?", (update, run_id)
                        )
            self._levels[run_id] = level
        return level

    def record_step(self, run_id: str, step: RunStep) -> bool:
        """Filter, encode and store ``step``; return whether it was stored. Never raises.

        ``False`` when the run is unknown or settled, or the step cannot be filtered, encoded
        or written (logged as a warning with the exception type only: the message could hold
        step bytes). The run's sequence number advances only when a step is stored.
        Recording an ``approval`` step for a suspended run that nobody claimed claims it in the
        same transaction (status ``running``, saved state wiped after the commit).
        """
        try:
            level = self._level(run_id)
            if level is None:
                logger.warning("audit: step for unknown run %r not recorded", run_id)
                return False
            record = self._filters[level].record(step)
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
            released: str | None = None
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
                            released = _suspension.end_suspension(
                                conn, run_id, _suspension.claimant_text(None)
                            )
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
            self._wipe(released)
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
            raise UnknownRunError(f"no such run {run_id[:80]!r}")
        reason = self._filters[level].filter_reason(termination_reason)
        with self._write() as conn:
            self._require_open(conn, run_id)
            released = _suspension.state_file(conn, run_id)
            sets = [
                "status = ?",
                "ended_at = ?",
                "termination_reason = ?",
                "state_file = NULL",
                "state_sha256 = NULL",
                "state_digest = NULL",
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
        self._wipe(released)
        self._levels.pop(run_id, None)
        self._next_seq.pop(run_id, None)

    @staticmethod
    def _require_open(conn: Any, run_id: str) -> str:
        row = conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise UnknownRunError(f"no such run {run_id[:80]!r}")
        if RunStatus(row[0]).final:
            raise RunSettledError(f"run {run_id!r} is already {row[0]}")
        return str(row[0])

    # -- suspension ----------------------------------------------------------------------------

    def suspend(self, run_id: str, state: Mapping[str, Any]) -> None:
        """Store the state a suspended run resumes from and set its status to ``suspended``.

        The state is messages and pending calls only: anything that is or looks like an
        artifact (an :class:`Artifact` or :class:`ToolResult`, a key named ``artifacts`` or
        ``tool_artifacts``, a ``{type, label, data}`` artifact dict) is refused with
        :class:`AuditStoreError`, never silently dropped. It is kept as given at every privacy
        level (a run cannot resume without its messages), in a file of its own beside the
        database, never in it; the row holds the file's name and hash. The file is overwritten
        and removed when the suspension ends: a claim (:meth:`claim_suspended`, or an
        ``approval`` step recorded), :meth:`discard`, :meth:`settle` or :meth:`purge`.
        """
        _known_text(run_id)
        refuse_artifacts(state)
        try:
            data = encode_json_str(dict(state)).encode("utf-8")
        except Exception as exc:
            raise AuditStoreError(f"suspended state is not JSON: {type(exc).__name__}") from None
        written: str | None = None
        try:
            with self._write() as conn:
                self._require_open(conn, run_id)
                replaced = _suspension.state_file(conn, run_id)
                written = _suspension.set_suspended(
                    conn, self._states, run_id, data, state.get("digest")
                )
                counted = state.get("iterations")
                if type(counted) is int and counted >= 0:  # the completions so far, shown
                    conn.execute("UPDATE runs SET iterations = ? WHERE id = ?", (counted, run_id))
        except BaseException as exc:
            self._wipe(written)  # written, but the commit that would name it failed
            if isinstance(exc, OSError):
                raise AuditStoreError(
                    f"could not write the suspended state: {type(exc).__name__}"
                ) from exc
            raise
        self._wipe(replaced)

    def load_suspended(self, run_id: str) -> dict[str, Any] | None:
        """The stored state of a suspended run, or ``None`` when it is not waiting.

        Raises :class:`SuspendedStateError` when the run waits but its state file is missing
        or altered, or is not JSON (see :meth:`discard`)."""
        if not encodable(run_id):
            return None
        query = "SELECT state_file, state_sha256 FROM runs WHERE id = ? AND status = 'suspended'"
        rows = self._read(query, (run_id,))
        if not rows or rows[0][0] is None:
            return None
        try:
            data = _audit_states.read(self._states, rows[0][0], rows[0][1])
        except _audit_states.StateFileError:
            # A claim elsewhere may have ended the suspension since the row was read.
            again = self._read(query, (run_id,))
            if not again or again[0][0] != rows[0][0]:
                return None
            raise SuspendedStateError(_suspension.lost(run_id)) from None
        return _suspension.decoded(data, run_id)

    def claim_suspended(
        self, run_id: str, *, digest: str | None = None, claimant: str | None = None
    ) -> dict[str, Any]:
        """Take a suspended run for resuming: the one atomic step between two resumers.

        In one write transaction: the run must be ``suspended`` and, when ``digest`` is
        given, waiting on the turn with that approval digest; it becomes ``running``, and
        ``claimant`` (default: :func:`claimant` ``("api")``) and the time are recorded with
        it. Returns the state; its file is wiped after the commit. A run claimed (or
        discarded) first by someone else raises :class:`~nr_llm_core.errors.AlreadyClaimedError`
        naming them and when; a stale digest or a run that is not waiting raises
        :class:`~nr_llm_core.errors.ApprovalError`; an unknown run :class:`UnknownRunError`.
        Before anything is committed the state is checked as a resume checks it (ADR 0036):
        a state file that is missing or altered, or whose bytes are not a state of this run
        signed with the host secret for the turn the run waits on, raises
        :class:`SuspendedStateError`, and the run still waits with its file kept.
        """
        who = _suspension.claimant_text(claimant)
        _known_text(run_id)
        with self._write() as conn:
            name, sha256, waits_on = _suspension.waiting_state(conn, run_id, digest)
            try:
                if name is None or sha256 is None:
                    raise _audit_states.StateFileError("no state file")
                data = _audit_states.read(self._states, name, sha256)
            except _audit_states.StateFileError:
                raise SuspendedStateError(_suspension.lost(run_id)) from None
            # Checked on the bytes just read, under the write lock: what is handed back is
            # what was checked, and a state nobody can resume never leaves the run claimed.
            state = _suspension.checked(_suspension.decoded(data, run_id), run_id, waits_on)
            _suspension.end_suspension(conn, run_id, who)
        self._wipe(name)
        return state

    def mark_resumed(self, run_id: str, *, claimant: str | None = None) -> None:
        """Claim a suspended run without reading its state (see :meth:`claim_suspended`);
        :class:`AuditStoreError` when it is not suspended."""
        _known_text(run_id)
        with self._write() as conn:
            if self._require_open(conn, run_id) != RunStatus.SUSPENDED:
                raise AuditStoreError(f"run {run_id!r} is not suspended")
            name = _suspension.end_suspension(conn, run_id, _suspension.claimant_text(claimant))
        self._wipe(name)

    def discard(self, run_id: str, *, claimant: str | None = None) -> None:
        """Give up a suspended run: settled ``cancelled`` (reason ``discarded``), the claim
        recorded (``claimant``, default ``claimant("api")``), its state wiped. Refused like
        :meth:`claim_suspended` when the run is not waiting; a run whose state file is lost
        can still be discarded."""
        _known_text(run_id)
        with self._write() as conn:
            name = _suspension.discard(conn, run_id, _suspension.claimant_text(claimant))
        self._wipe(name)
        self._levels.pop(run_id, None)
        self._next_seq.pop(run_id, None)

    # -- runners -------------------------------------------------------------------------------

    def runners(self, run_ids: Collection[str]) -> dict[str, Runner]:
        """The recorded runner of each of ``run_ids`` (the process that began it or last
        claimed it, ADR 0042); a run without one (recorded before runners were) is left out."""
        ids = [i for i in dict.fromkeys(run_ids) if encodable(i)]
        found: dict[str, Runner] = {}
        for start in range(0, len(ids), 500):  # under SQLite's limit on bound parameters
            chunk = ids[start : start + 500]
            rows = self._read(
                "SELECT id, runner_host, runner_pid, runner_started FROM runs "  # noqa: S608  # only placeholders are joined
                f"WHERE runner_host IS NOT NULL AND id IN ({', '.join('?' * len(chunk))})",
                tuple(chunk),
            )
            for run_id, host, pid, started in rows:
                found[str(run_id)] = Runner(str(host), int(pid), str(started))
        return found

    def abandon(self, run_id: str, *, claimant: str | None = None) -> None:
        """End ``run_id``, which is ``running`` but whose runner is provably gone (same host;
        its pid dead, or now another process): settled ``failed``, reason ``abandoned``,
        ``claimant`` (default ``claimant("api")``) and the time recorded as its claim.

        Checked and settled in one write transaction. :class:`RunnerNotGoneError` when nothing
        proves the runner gone (alive, another host, none recorded, a live pid whose start
        time cannot be read); :class:`UnknownRunError`; :class:`AuditStoreError` when the run
        is not running. Nothing is changed when it is refused."""
        who = _suspension.claimant_text(claimant)
        _known_text(run_id)
        with self._write() as conn:
            row = conn.execute(
                "SELECT status, runner_host, runner_pid, runner_started FROM runs WHERE id = ?",
                (run_id,),
            ).fetchone()
            if row is None:
                raise UnknownRunError(f"no such run {run_id[:80]!r}")
            if row[0] != RunStatus.RUNNING:
                waiting = (
                    f"; a run waiting for approval is ended with `nr-llm runs discard "
                    f"{run_id[:80]}` (discard())"
                    if row[0] == RunStatus.SUSPENDED
                    else ""
                )
                raise AuditStoreError(
                    f"run {run_id[:80]!r} is {row[0]}, not running: only a running run is "
                    f"ended as abandoned{waiting}"
                )
            runner = None if row[1] is None else Runner(str(row[1]), int(row[2]), str(row[3]))
            state = runner_state(runner)
            if state is not RunnerState.GONE:
                raise RunnerNotGoneError(refusal(run_id, runner, state))
            at = now()
            conn.execute(
                "UPDATE runs SET status = ?, ended_at = ?, termination_reason = ?, "
                "claimed_by = ?, claimed_at = ? WHERE id = ?",
                (RunStatus.FAILED.value, at, ABANDONED, who, at, run_id),
            )
        self._levels.pop(run_id, None)
        self._next_seq.pop(run_id, None)

    def _wipe(self, name: str | None) -> None:
        if name is not None:
            try:
                _audit_states.wipe(self._states, name)
            except OSError as exc:  # the next sweep removes it
                logger.warning("audit: could not remove a state file (%s)", type(exc).__name__)

    def _sweep(self) -> None:
        """Remove state files that no suspended run names: left by a crash between writing
        and committing, or between committing a claim and wiping."""
        if not _audit_states.has_files(self._states):
            return
        with self._write() as conn:
            rows = conn.execute("SELECT state_file FROM runs WHERE state_file IS NOT NULL")
            _audit_states.sweep(self._states, {str(r[0]) for r in rows})

    def _move_out_states(self, conn: sqlite3.Connection, old_version: int) -> None:
        if _suspension.move_out_states(conn, self._states, old_version):
            self._moved_states = True
        # The replaced files are wiped by the sweep that follows the open.
        _suspension.resign_states(conn, self._states, old_version)

    # -- reading and retention -----------------------------------------------------------------

    def list_runs(self, limit: int = 50) -> list[RunRecord]:
        """The most recently started runs first."""
        rows = self._read(
            f"SELECT {RUN_COLUMNS} FROM runs ORDER BY started_at DESC, rowid DESC LIMIT ?",  # noqa: S608  # a constant column list
            (max(0, int(limit)),),
        )
        return [run_record(row) for row in rows]

    def list_runs_with_status(self, statuses: Collection[str], limit: int = 50) -> list[RunRecord]:
        """The most recently started runs whose status is one of ``statuses`` first."""
        wanted = [str(s) for s in dict.fromkeys(statuses) if encodable(str(s))]
        if not wanted:
            return []
        rows = self._read(
            f"SELECT {RUN_COLUMNS} FROM runs WHERE status IN ({', '.join('?' * len(wanted))}) "  # noqa: S608  # a constant column list and placeholders
            "ORDER BY started_at DESC, rowid DESC LIMIT ?",
            (*wanted, max(0, int(limit))),
        )
        return [run_record(row) for row in rows]

    def resolve_run_id(self, given: str) -> str:
        """The id of the run ``given`` names: its whole id, or, like a short git hash, a
        prefix of at least :data:`MIN_RUN_ID_PREFIX` characters that exactly one run's id
        starts with (case-sensitive; no character is a wildcard).

        Raises :class:`UnknownRunError` (``no such run '…'``) when no run matches, and
        :class:`AmbiguousRunIdError`, naming up to five of the runs, when several do."""
        shown = given[:80]
        if not encodable(given):  # a lone surrogate (argv bytes): no stored id has one
            raise UnknownRunError(f"no such run {shown!r}")
        if self._read("SELECT 1 FROM runs WHERE id = ?", (given,)):
            return given
        if len(given) < MIN_RUN_ID_PREFIX:
            raise UnknownRunError(
                f"no such run {shown!r} (a prefix needs at least {MIN_RUN_ID_PREFIX} characters)"
            )
        # Every id in [given, given + U+10FFFF) starts with given (ids compare as UTF-8 bytes,
        # in code point order), so the primary key's index answers it: no LIKE, no escaping.
        rows = self._read(
            "SELECT id FROM runs WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
            (given, given + "\U0010ffff", MAX_CANDIDATES + 1),
        )
        matches = [str(r[0]) for r in rows if str(r[0]).startswith(given)]
        return chosen_run(given, matches)

    def get_run(self, run_id: str) -> RunRecord | None:
        """One run, or ``None``."""
        if not encodable(run_id):
            return None
        rows = self._read(f"SELECT {RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,))  # noqa: S608  # a constant column list
        return run_record(rows[0]) if rows else None

    def steps(self, run_id: str) -> list[StepRecord]:
        """A run's stored steps in sequence order, exactly as stored."""
        if not encodable(run_id):
            return []
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

    def steps_of(
        self, run_ids: Collection[str], *, kind: str, first: bool = False
    ) -> dict[str, list[dict[str, Any]]]:
        """The stored ``kind`` steps of each of ``run_ids``, decoded, in sequence order, in
        one query (for a listing: the prompt a run's first request kept, a failed run's
        error); ``first``: only a run's first step, when it is of that kind. A run without
        one is left out."""
        ids = [i for i in dict.fromkeys(run_ids) if encodable(i)]
        found: dict[str, list[dict[str, Any]]] = {}
        # Chunks stay under SQLite's limit on bound parameters.
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            where = " AND seq = 1" if first else ""
            rows = self._read(
                f"SELECT run_id, payload FROM events WHERE kind = ?{where} "  # noqa: S608  # only fixed text and placeholders are joined
                f"AND run_id IN ({marks}) ORDER BY run_id, seq",
                (kind, *chunk),
            )
            for run_id, payload in rows:
                found.setdefault(str(run_id), []).append(decode_json(payload))
        return found

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
            states = conn.execute(
                "SELECT state_file FROM runs WHERE started_at < ? AND state_file IS NOT NULL",
                (cutoff,),
            ).fetchall()
            conn.execute(
                "DELETE FROM events WHERE run_id IN (SELECT id FROM runs WHERE started_at < ?)",
                (cutoff,),
            )
            deleted = conn.execute("DELETE FROM runs WHERE started_at < ?", (cutoff,)).rowcount
        for (name,) in states:
            self._wipe(str(name))
        self._checkpoint("purge")
        self._levels.clear()
        self._next_seq.clear()
        return int(deleted)

    def _checkpoint(self, after: str) -> None:
        with self._lock:
            # Best effort: a reader in another process can hold the WAL; the next checkpoint
            # (at the latest when the last connection closes) overwrites it.
            try:
                self._connection().execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            except sqlite3.Error as exc:
                logger.warning(
                    "audit: WAL checkpoint after %s failed (%s)", after, type(exc).__name__
                )


def _known_text(run_id: str) -> None:
    """:class:`UnknownRunError` for an id no database can be asked about (see
    :func:`~nr_llm_core._audit_records.encodable`), before a write transaction begins."""
    if not encodable(run_id):
        raise UnknownRunError(f"no such run {run_id[:80]!r}")
