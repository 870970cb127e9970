"""Fixtures: one real playground server per module, on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from nr_llm_core.playground import PlaygroundServer

from ._fixtures import GATE, HANG, start_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlaygroundServer]:
    db: Path = tmp_path_factory.mktemp("playground") / "audit.db"
    srv = start_server(db)
    yield srv
    GATE.set()
    srv.stop()


@pytest.fixture
def client(server: PlaygroundServer) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=server.origin, headers={"X-NR-LLM-Token": server.token}, timeout=30
    ) as c:
        yield c


@pytest.fixture(autouse=True, scope="session")
def _release_blocked_tools() -> Iterator[None]:
    yield
    GATE.set()
    HANG.set()
