"""The stores' fixtures: one real PostgreSQL server per test session (started here, torn down
after; see pg_server.py), a fresh database per test, and ``store_target``, which runs a test
once on a SQLite file and once on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .pg_server import Server, running_server

#: The host secret every test process shares (a shared store needs one named).
SECRET = "test-secret-0123456789abcdef0123456789abcdef"


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Server]:
    # fsync off: the tests kill workers, never the server, and a test's data need not
    # survive a power cut.
    with running_server(fsync="off", full_page_writes="off") as server:
        yield server


@pytest.fixture
def pg_url(pg_server: Server, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh, empty database's URL, with a password in it (trust ignores it), and the host
    secret set for this process and the ones it starts."""
    monkeypatch.setenv("NR_LLM_SECRET", SECRET)
    return pg_server.url(pg_server.database(), password="PG-PASSWORD-CANARY")


@pytest.fixture(params=["sqlite", "postgresql"])
def store_target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a store is: a SQLite file, then a PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "audit" / "audit.db")
    url: str = request.getfixturevalue("pg_url")
    return url
