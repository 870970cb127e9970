"""The detail of a waiting run is read once per request: one read of the run's record, one
of its saved state, one check of the state's signature (they were three reads and as many
checks before). Counted on the real SQLite store of a real server, over real HTTP."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from nr_llm_core.approval import SuspendedRunState
from nr_llm_core.playground import PlaygroundServer

from .test_waiting_runs import pause, playground

__all__ = ["playground"]  # the fixture, shared with test_waiting_runs


def _counting(counts: dict[str, int], name: str, real: Callable[..., Any]) -> Callable[..., Any]:
    def counted(*args: Any, **kwargs: Any) -> Any:
        counts[name] += 1
        return real(*args, **kwargs)

    return counted


def test_a_waiting_runs_detail_reads_the_run_once(
    playground: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tries the detail of a run this playground paused and of one it let go: each request
    reads the run's record once, its state once, and verifies the state once."""
    client: httpx.Client = playground["client"]
    server: PlaygroundServer = playground["server"]
    paused = pause(client)
    store = server.app.store
    assert store is not None
    counts = {"get_run": 0, "load_suspended": 0, "verify": 0}
    persister = store.persister
    for name in ("get_run", "load_suspended"):
        monkeypatch.setattr(persister, name, _counting(counts, name, getattr(persister, name)))
    monkeypatch.setattr(
        SuspendedRunState, "verify", _counting(counts, "verify", SuspendedRunState.verify)
    )
    detail = client.get(f"/api/runs/{paused['run_id']}").json()
    assert detail["approval"]["waiting"] is True and detail["approval"]["decidable"] is True
    assert counts == {"get_run": 1, "load_suspended": 1, "verify": 1}
