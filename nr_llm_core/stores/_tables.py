"""The PostgreSQL audit store's schema as SQLAlchemy ``Table`` objects, and its versions.

The tables mean what the SQLite store's mean (``nr_llm_core._audit_schema``): ``runs`` and
``events`` have the same columns, types and time format (fixed-width UTC ISO-8601 text, so
retention compares strings on both), and ``tests/stores`` checks that the two agree. They
differ where the dialects must:

- a suspended (or queued) run's state is a row of ``states``, not a file beside the database:
  workers on other machines cannot see a local file (ADR 0024 says what PostgreSQL keeps after
  the row is deleted);
- ``runs.last_seq`` numbers the steps: the run row's lock orders them (see
  :mod:`nr_llm_core.stores.postgres`);
- ``runs.attempts``, ``taken_by`` and ``trust_zone`` belong to runs that workers execute.

The version is the one row of ``nr_llm_schema``. Version 1 is these tables as they are; the
first change to them is Alembic's first revision (ADR 0024), with this version as its base.
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
)

__all__ = ["SCHEMA_VERSION", "events", "metadata", "runs", "schema_version", "states"]

#: The version this code writes.
SCHEMA_VERSION: Final = 1

metadata = MetaData()

runs = Table(
    "runs",
    metadata,
    Column("id", Text, primary_key=True),
    Column("status", Text, nullable=False),
    Column("started_at", Text, nullable=False),
    Column("ended_at", Text),
    Column("iterations", Integer, nullable=False, server_default="0"),
    Column("truncated", Boolean, nullable=False, server_default="false"),
    Column("termination_reason", Text),
    Column("tokens_in", BigInteger, nullable=False, server_default="0"),
    Column("tokens_out", BigInteger, nullable=False, server_default="0"),
    Column("privacy_level", Text, nullable=False),
    Column("meta", Text),
    Column("claimed_by", Text),
    Column("claimed_at", Text),
    # PostgreSQL only: the last step's number, the executions a worker began, who runs it
    # now, and the trust zone its providers have had (never widened).
    Column("last_seq", Integer, nullable=False, server_default="0"),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("taken_by", Text),
    Column("trust_zone", Text),
    Index("runs_started_at", "started_at"),
)

events = Table(
    "events",
    metadata,
    Column("run_id", Text, ForeignKey("runs.id"), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("kind", Text, nullable=False),
    Column("round", Integer),
    Column("duration_ms", Float),
    Column("recorded_at", Text),
    Column("payload", Text, nullable=False),
    PrimaryKeyConstraint("run_id", "seq"),
)

states = Table(
    "states",
    metadata,
    # A waiting or queued run's state: the conversation, verbatim at every level. Deleted in
    # the transaction that ends the wait (claim, discard, settle, purge).
    Column("run_id", Text, ForeignKey("runs.id"), primary_key=True),
    Column("state", Text, nullable=False),
    Column("digest", Text),  # the approval digest a claim compares
    Column("decisions", Text),  # an approver's decisions, for a worker to apply
    Column("mac", Text, nullable=False),  # HMAC of run id, state and decisions (host secret)
    # Set (committed) by the worker right before it runs approved calls: a worker that takes
    # the run after that one was lost must not run them again.
    Column("applying", Text),
)

schema_version = Table(
    "nr_llm_schema",
    metadata,
    Column("version", Integer, nullable=False),
)
