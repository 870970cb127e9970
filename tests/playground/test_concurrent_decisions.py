"""Two decisions on one waiting run in one playground at the same moment, as two tabs would
send them (real HTTP, one connection per thread, released together by a barrier): exactly one
wins, every other is refused with a reason, the approved call runs at most once (the append
tool's log counts its calls), and the store is consistent (one decision recorded, a final
status that matches the winner). Each pairing is tried several times, so more than one
interleaving is met."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from nr_llm_core.audit import AgentRunPersister
from nr_llm_core.playground import PlaygroundServer

from ..store._support import log_lines
from .test_waiting_runs import pause, playground

__all__ = ["playground"]  # the fixture, shared with test_waiting_runs

ROUNDS = 3


def _approve(approved: bool) -> Callable[[httpx.Client, dict[str, Any]], httpx.Response]:
    def send(client: httpx.Client, paused: dict[str, Any]) -> httpx.Response:
        body = {"digest": paused["digest"], "approved": approved}
        return client.post(f"/api/runs/{paused['run_id']}/resume", json=body)

    return send


def _discard(client: httpx.Client, paused: dict[str, Any]) -> httpx.Response:
    return client.post(f"/api/runs/{paused['run_id']}/discard", json={})


ACTIONS = {"approve": _approve(True), "deny": _approve(False), "discard": _discard}


def _at_once(
    server: PlaygroundServer, paused: dict[str, Any], names: list[str]
) -> list[httpx.Response]:
    """Send each named action from its own thread and connection, released together."""
    barrier = threading.Barrier(len(names))
    answers: list[httpx.Response | None] = [None] * len(names)

    def run(index: int, name: str) -> None:
        with httpx.Client(
            base_url=server.origin,
            headers={"X-NR-LLM-Token": server.token, "Accept": "application/json"},
            timeout=120,
        ) as client:
            barrier.wait(30)
            answers[index] = ACTIONS[name](client, paused)

    threads = [threading.Thread(target=run, args=(i, n)) for i, n in enumerate(names)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(150)
    assert all(a is not None for a in answers)
    return [a for a in answers if a is not None]


def _won(name: str, answer: httpx.Response) -> bool:
    """Whether ``answer`` says this request decided the run; a refusal must say why."""
    if name == "discard":
        if answer.status_code == 200 and answer.json()["discarded"] is True:
            return True
        refusal = answer.json()
        assert answer.status_code in (200, 409), answer.text
        assert refusal.get("reason") or refusal.get("error")
        return False
    if answer.status_code == 200:
        last = answer.json()["events"][-1]
        if last["event"] == "done":
            return True
        assert last["event"] == "error" and last["reason"], last  # refused inside the stream
        assert last["approval"] is not None
        return False
    assert answer.status_code == 409, answer.text
    assert answer.json()["error"] and answer.json()["approval"] is not None
    return False


@pytest.mark.parametrize(
    "names",
    [
        ["approve", "approve"],
        ["approve", "deny"],
        ["approve", "discard"],
        ["discard", "discard"],
        ["approve", "approve", "discard", "deny"],
    ],
    ids="+".join,
)
def test_one_decision_wins_the_others_are_refused_and_nothing_runs_twice(
    playground: dict[str, Any], names: list[str]
) -> None:
    """Tries to make a run's approved call run twice, or a run be both resumed and
    discarded, by deciding it from several tabs at once."""
    client, db, log, server = (
        playground["client"],
        playground["db"],
        playground["log"],
        playground["server"],
    )
    for _ in range(ROUNDS):
        before = len(log_lines(log))
        paused = pause(client)
        answers = _at_once(server, paused, names)
        winners = [n for n, a in zip(names, answers, strict=True) if _won(n, a)]
        shown = [(n, a.status_code, a.text[:300]) for n, a in zip(names, answers, strict=True)]
        assert len(winners) == 1, shown
        ran = len(log_lines(log)) - before
        with AgentRunPersister(db) as store:
            record = store.get_run(paused["run_id"])
            kinds = [s["kind"] for s in store.steps(paused["run_id"])]
        assert record is not None
        if winners == ["approve"]:
            assert ran == 1 and record["status"] == "completed"
            assert kinds.count("approval") == 1 and kinds.count("tool") == 1
        elif winners == ["deny"]:
            assert ran == 0 and record["status"] == "completed"
            assert kinds.count("approval") == 1
        else:
            assert ran == 0 and kinds.count("approval") == 0
            assert (record["status"], record["termination_reason"]) == ("cancelled", "discarded")
        # Nothing left that a later request could decide again.
        again = client.get(f"/api/runs/{paused['run_id']}").json()
        assert again["run"]["status"] != "suspended" and "approval" not in again
