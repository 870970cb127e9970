"""The audit store's SQLite schema, its migrations, its statements, and how a connection is opened.

The schema version is ``PRAGMA user_version``. :data:`MIGRATIONS` is the schema's whole history:
migration ``i`` (0-based) takes a database from version ``i`` to ``i + 1``. An empty file gets
all of them, an older file the missing ones, in one write transaction; a file newer than this
code is refused rather than written with assumptions that no longer hold.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final

__all__ = [
    "ADD_TOKENS",
    "INSERT_AT",
    "INSERT_NEXT",
    "INSERT_STEP",
    "MIGRATIONS",
    "RESUME",
    "RUN_COLUMNS",
    "SCHEMA_VERSION",
    "STATE_OF",
    "SchemaVersionError",
    "Upgrade",
    "connect",
    "fetch_seq",
    "forks",
    "migrate",
    "now",
    "tokens",
]


class SchemaVersionError(Exception):
    """The database file's schema is newer than this version of nr-llm knows."""


#: Each entry is a list of statements: migration ``i`` moves version ``i`` to ``i + 1``.
MIGRATIONS: Final[tuple[tuple[str, ...], ...]] = (
    # 1: runs and their events. A step's seq is allocated inside its own write transaction
    # (MAX + 1 over the run's steps), so concurrent writers (threads or processes) never share
    # a number and never leave a gap.
    (
        """CREATE TABLE runs (
            id TEXT PRIMARY KEY,
            status TEXT NOT NULL,
            started_at TEXT NOT NULL,
            ended_at TEXT,
            iterations INTEGER NOT NULL DEFAULT 0,
            truncated INTEGER NOT NULL DEFAULT 0,
            termination_reason TEXT,
            tokens_in INTEGER NOT NULL DEFAULT 0,
            tokens_out INTEGER NOT NULL DEFAULT 0,
            privacy_level TEXT NOT NULL,
            suspended_state TEXT
        )""",
        """CREATE TABLE events (
            run_id TEXT NOT NULL REFERENCES runs (id),
            seq INTEGER NOT NULL,
            kind TEXT NOT NULL,
            round INTEGER,
            duration_ms REAL,
            payload TEXT NOT NULL,
            UNIQUE (run_id, seq)
        )""",
    ),
    # 2: host metadata per run, the time each step was stored, and an index for retention.
    (
        "ALTER TABLE runs ADD COLUMN meta TEXT",
        "ALTER TABLE events ADD COLUMN recorded_at TEXT",
        "CREATE INDEX runs_started_at ON runs (started_at)",
    ),
    # 3: a suspended run's state lives in a file of its own (see _audit_states); the row keeps
    # the file's name, the SHA-256 of its bytes and the state's approval digest (what a claim
    # compares). A resume or discard is a claim: who took the run, and when. The legacy
    # suspended_state column stays NULL from here on (older rows are moved out on upgrade).
    (
        "ALTER TABLE runs ADD COLUMN state_file TEXT",
        "ALTER TABLE runs ADD COLUMN state_sha256 TEXT",
        "ALTER TABLE runs ADD COLUMN state_digest TEXT",
        "ALTER TABLE runs ADD COLUMN claimed_by TEXT",
        "ALTER TABLE runs ADD COLUMN claimed_at TEXT",
        "CREATE INDEX runs_state_file ON runs (state_file) WHERE state_file IS NOT NULL",
    ),
    # 4: no new column: the states of waiting runs are re-signed with the host secret (their
    # approval digest becomes an HMAC, ADR 0024) by the upgrade hook, in this transaction.
    (),
    # 5: who runs a run (ADR 0042): the host, pid and start time of the process that began or
    # last claimed it, so that a run whose process was killed can be told from one that still
    # runs. NULL for runs recorded before: their runner is unknown.
    (
        "ALTER TABLE runs ADD COLUMN runner_host TEXT",
        "ALTER TABLE runs ADD COLUMN runner_pid INTEGER",
        "ALTER TABLE runs ADD COLUMN runner_started TEXT",
    ),
)

#: The version this code writes.
SCHEMA_VERSION: Final = len(MIGRATIONS)


#: Called inside the migration transaction with the version the file had (data moves that
#: SQL alone cannot make, such as the suspended states that version 3 moves out to files).
Upgrade = Callable[[sqlite3.Connection, int], None]


def connect(
    path: Path, *, busy_timeout_ms: int, on_upgrade: Upgrade | None = None
) -> sqlite3.Connection:
    """Open ``path`` (creating it owner-only, with its directory) in WAL mode.

    ``isolation_level=None``: the persister issues ``BEGIN IMMEDIATE`` itself, so the write
    lock is taken before any read inside a write transaction (no upgrade deadlocks).
    """
    if str(path) != ":memory:":
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # Created owner-only before SQLite sees it; SQLite gives -wal/-shm the same mode.
        # O_EXCL matters: opening and closing an existing database file would drop every
        # POSIX lock this process holds on it (other connections' locks too) and corrupt it.
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600))
    conn = sqlite3.connect(
        path,
        timeout=busy_timeout_ms / 1000,
        isolation_level=None,
        check_same_thread=False,  # one connection per persister, guarded by its lock
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        conn.execute("PRAGMA journal_mode = WAL")
        # WAL + NORMAL: a commit survives a process crash (SIGKILL); only an OS crash or power
        # loss can roll back the last commits. FULL would fsync every step.
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        # Deleted rows (purge, cleared suspended states) are overwritten, not left in free pages.
        conn.execute("PRAGMA secure_delete = ON")
        migrate(conn, on_upgrade=on_upgrade)
    except BaseException:
        conn.close()
        raise
    return conn


def migrate(
    conn: sqlite3.Connection, *, target: int = SCHEMA_VERSION, on_upgrade: Upgrade | None = None
) -> int:
    """Apply the missing migrations up to ``target`` in one transaction; return the version.

    ``on_upgrade(conn, old_version)`` runs in the same transaction after the statements, when
    there were any to apply."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"the audit database has schema version {version}; this nr-llm knows "
                f"{SCHEMA_VERSION} at most: upgrade nr-llm"
            )
        for number in range(version, target):
            for statement in MIGRATIONS[number]:
                conn.execute(statement)
        if target > version:
            if on_upgrade is not None:
                on_upgrade(conn, version)
            conn.execute(f"PRAGMA user_version = {int(target)}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return max(version, target)


_second: tuple[int, str] = (0, "")


def now() -> str:
    # Fixed-width UTC ISO-8601: text order is time order, so purge compares strings. The
    # formatted second is cached: this runs once per recorded step.
    global _second
    second, nanos = divmod(time.time_ns(), 1_000_000_000)
    if _second[0] != second:
        _second = (second, time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(second)))
    return f"{_second[1]}{nanos // 1000:06d}Z"


_forks = 0


def _forked() -> None:
    global _forks
    _forks += 1


os.register_at_fork(after_in_child=_forked)


def forks() -> int:
    """How many forks lie between this process and the one that imported this module: a
    connection opened at another count must not be used (SQLite connections do not survive a
    fork). Cheaper than comparing ``os.getpid()``, a system call, once per step."""
    return _forks


# The sequence number is allocated by the insert itself, from the run's own steps; the run
# must exist and be open. ?1 is the run id.
INSERT_STEP: Final = (
    "INSERT INTO events (run_id, seq, kind, round, duration_ms, recorded_at, payload) "
    "SELECT ?1, COALESCE((SELECT MAX(seq) FROM events WHERE run_id = ?1), 0) + 1, "
    "?2, ?3, ?4, ?5, ?6 "
    "WHERE EXISTS (SELECT 1 FROM runs WHERE id = ?1 AND status IN ('running', 'suspended'))"
)
INSERT_NEXT: Final = INSERT_STEP + " RETURNING seq"
INSERT_AT: Final = (
    "INSERT INTO events (run_id, seq, kind, round, duration_ms, recorded_at, payload) "
    "SELECT ?1, ?7, ?2, ?3, ?4, ?5, ?6 "
    "WHERE EXISTS (SELECT 1 FROM runs WHERE id = ?1 AND status IN ('running', 'suspended'))"
)
# Ends a suspension: the state's columns cleared, the claim (?2 who, ?3 when) recorded, and
# the claiming process as the run's runner (?4 host, ?5 pid, ?6 start). ?1 is the run id; the
# caller wipes the state file after the commit.
RESUME: Final = (
    "UPDATE runs SET status = 'running', state_file = NULL, state_sha256 = NULL, "
    "state_digest = NULL, claimed_by = ?2, claimed_at = ?3, runner_host = ?4, runner_pid = ?5, "
    "runner_started = ?6 WHERE id = ?1 AND status = 'suspended'"
)
STATE_OF: Final = "SELECT state_file FROM runs WHERE id = ? AND status = 'suspended'"
ADD_TOKENS: Final = (
    "UPDATE runs SET tokens_in = tokens_in + ?, tokens_out = tokens_out + ? WHERE id = ?"
)


def fetch_seq(cursor: sqlite3.Cursor) -> int | None:
    # fetchall: the statement must run to completion so that its implicit transaction ends.
    rows = cursor.fetchall()
    return int(rows[0][0]) if rows else None


def tokens(usage: object) -> tuple[int, int]:
    if not isinstance(usage, Mapping):
        return 0, 0

    def first(*names: str) -> int:
        for name in names:
            value = usage.get(name)
            if type(value) is int and value >= 0:
                return value
        return 0

    return first("input_tokens", "prompt_tokens"), first("output_tokens", "completion_tokens")


RUN_COLUMNS: Final = (
    "id, status, started_at, ended_at, iterations, truncated, termination_reason, tokens_in, "
    "tokens_out, privacy_level, state_file IS NOT NULL, "
    "(SELECT COUNT(*) FROM events WHERE events.run_id = runs.id), meta, claimed_by, claimed_at"
)
