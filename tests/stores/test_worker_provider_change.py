"""A run that another worker takes over says which provider goes on (ADR 0036), with real
``nr-llm worker`` processes on a real PostgreSQL server and an OpenAI-compatible provider over
real HTTP on 127.0.0.1: the approved call's worker (scripted) is SIGKILLed while the call runs,
and the only worker left talks to another provider and model. It does not run the call again,
and its ``resume`` step records the lost call and both providers, as an approval step records an
allowed change; ``nr-llm runs show --json`` lists the change."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from nr_llm_core.stores import open_store
from nr_llm_core.stores.queue import enqueue_run

from ..loop._wire import WireServer
from ..loop.test_openai_wire import text_reply
from ._workers import call, fleet, make_site, statuses, wait_for

KEY = "sk-worker-change-canary"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_site(tmp_path_factory.mktemp("worker-change-dist"))


def test_a_run_taken_over_on_another_provider_records_both(
    tmp_path: Path, site: Path, pg_url: str
) -> None:
    """Scripted worker ``w1`` runs the approved ``block_approved`` call and is killed in it;
    worker ``other`` (OpenAI adapter, model ``other-model``) takes the run over: the call is
    not run again, the run completes on ``other``'s provider, and the stored steps hold one
    ``resume`` step (``lost_calls`` 1) naming the provider the run was suspended with and the
    one that went on; the key is in no row of the store."""
    turns: list[Any] = [call("block_approved", "b1"), "done"]
    with (
        WireServer([text_reply("Done elsewhere.")]) as server,
        fleet(tmp_path, site, pg_url, turns) as f,
    ):
        f.start_worker("w1")
        run_id = enqueue_run(pg_url, "approve, then kill")
        wait_for(lambda: statuses(pg_url, [run_id])[run_id] == "suspended", "the wait")
        assert f.cli("runs", "approve", run_id, "--yes").returncode == 0
        wait_for(lambda: any(t == "block_approved" for _, t, _ in f.lines()), "the call")
        os.kill(f.workers["w1"].pid, signal.SIGKILL)
        f.workers["w1"].wait(30)
        f.start_worker(
            "other",
            "--provider",
            "openai",
            "--model",
            "other-model",
            "--base-url",
            f"{server.url}/v1",
            scripted=False,
            env={"OPENAI_API_KEY": KEY},
        )
        wait_for(
            lambda: statuses(pg_url, [run_id])[run_id] == "completed",
            "the other worker to finish the run",
        )
        f.release.touch()
        approved = [pid for r, t, pid in f.lines() if r == run_id and t == "block_approved"]
        assert approved == [f.workers["w1"].pid]  # run once, by the worker that was lost
        shown = f.cli("runs", "show", run_id, "--json")
    assert len(server.requests) == 1
    with open_store(pg_url) as store:
        steps = [s["step"] for s in store.steps(run_id)]
    resumes = [s for s in steps if s["kind"] == "resume"]
    change = {
        "suspended_with": {"kind": "ScriptedProvider", "model": None},
        "resumed_with": {"kind": "OpenAIChatProvider", "model": "other-model"},
    }
    assert len(resumes) == 1
    assert resumes[0]["lost_calls"] == 1
    assert resumes[0]["provider_changed"] is True
    assert resumes[0]["provider_change"] == change
    (approval,) = [s for s in steps if s["kind"] == "approval"]
    assert "provider_change" not in approval  # w1 went on with the provider that suspended it
    assert shown.returncode == 0, shown.stderr
    out = json.loads(shown.stdout)
    assert [
        (c["kind"], c["suspended_with"], c["resumed_with"]) for c in out["provider_changes"]
    ] == [("resume", change["suspended_with"], change["resumed_with"])]
    assert KEY not in json.dumps(steps) and KEY not in shown.stdout


def test_a_denied_call_of_a_taken_over_run_is_answered_as_denied_not_as_lost(
    tmp_path: Path, site: Path, pg_url: str
) -> None:
    """The pending turn has two calls that need approval: ``b1`` approved (its worker is
    killed in it), ``a1`` denied. The worker that takes over tells its model that ``b1`` may
    or may not have run, and that ``a1`` was not approved (a denied call never runs: telling
    the model it may have run would be false); its ``resume`` step counts one lost call."""
    from nr_llm_core.stores._runner import LOST
    from nr_llm_core.stores.queue import approve_for_worker

    both = {
        "content": "",
        "tool_calls": [
            {"id": "b1", "name": "block_approved", "arguments": {}},
            {"id": "a1", "name": "append_line", "arguments": {}},
        ],
    }
    with (
        WireServer([text_reply("Told.")]) as server,
        fleet(tmp_path, site, pg_url, [both, "done"]) as f,
    ):
        f.start_worker("w1")
        run_id = enqueue_run(pg_url, "one yes, one no")
        wait_for(lambda: statuses(pg_url, [run_id])[run_id] == "suspended", "the wait")
        with open_store(pg_url) as store:
            digest = (store.load_suspended(run_id) or {})["digest"]
            approve_for_worker(store, run_id, digest=digest, decisions={"b1": True, "a1": False})
        wait_for(lambda: any(t == "block_approved" for _, t, _ in f.lines()), "the call")
        os.kill(f.workers["w1"].pid, signal.SIGKILL)
        f.workers["w1"].wait(30)
        f.start_worker(
            "other",
            "--provider",
            "openai",
            "--base-url",
            f"{server.url}/v1",
            scripted=False,
            env={"OPENAI_API_KEY": KEY},
        )
        wait_for(lambda: statuses(pg_url, [run_id])[run_id] == "completed", "the other worker")
        f.release.touch()
        assert "append_line" not in [t for r, t, _ in f.lines() if r == run_id]
    (request,) = server.requests
    answers = {
        m["tool_call_id"]: m["content"] for m in request.json()["messages"] if m["role"] == "tool"
    }
    assert answers == {
        "b1": LOST,
        "a1": 'Error: the user did not approve the call to "append_line".',
    }
    with open_store(pg_url) as store:
        (resume,) = [s["step"] for s in store.steps(run_id) if s["kind"] == "resume"]
    assert resume["lost_calls"] == 1
