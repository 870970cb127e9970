"""The playground never loses a waiting run, and an operator can end one (ADR 0037), over real
HTTP to a real server on 127.0.0.1 recording into a real SQLite file.

A decision the loop or the store refuses (a state that fails the claim's checks, a provider
that changed, a run another process claimed or discarded) leaves a run that still waits in
the store shown, with its pending calls and the reason in host words (no byte of the state);
a run that is really gone is said to be gone, and by whom. ``POST /api/runs/{id}/discard`` is
the store's discard (the one ``nr-llm runs discard`` takes): a replay changes nothing and says
so, it races a real ``nr-llm runs approve`` process fairly (the approved call runs at most
once), it needs the token and the same origin, and it never runs a tool (the approved tool
appends a line to a log file per call)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from nr_llm_core import ScriptedProvider
from nr_llm_core.audit import AgentRunPersister
from nr_llm_core.providers.base import TrustZone

from ..store._support import (
    APPEND_TURNS,
    LOG_VAR,
    append_host,
    log_lines,
    make_site,
    start_cli,
    write_script,
)
from ..store.test_claim_checks import CANARY, rewrite_state, stored_state, unsigned
from ..store.test_claim_processes import approve_args, env_for
from ._fixtures import start_server

#: The model the switchable provider reports; a test changes it after the run paused.
MODEL: dict[str, str | None] = {"name": None}
OTHER_MODEL = "MODEL-CANARY-<img src=x onerror=alert(1)>"
HOSTILE_CLAIMANT = "<img src=x onerror=window.__pwned=1>\x1b[31m\u202eevil"


class Switchable:
    """A scripted provider whose model is :data:`MODEL`'s (``None``: none)."""

    trust_zone = TrustZone.LOCAL

    def __init__(self) -> None:
        self._script = ScriptedProvider(APPEND_TURNS)

    @property
    def model(self) -> str | None:
        return MODEL["name"]

    def complete(self, messages: Any, tools: Any) -> Any:
        return self._script.complete(messages, tools)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_site(tmp_path_factory.mktemp("dist"))


@pytest.fixture
def playground(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """A playground with the in-process append tool, recording into a fresh SQLite file."""
    db = str(tmp_path / "audit.db")
    log = tmp_path / "append.log"
    monkeypatch.setenv(LOG_VAR, str(log))
    MODEL["name"] = None
    server = start_server(
        Path(db),
        host=append_host(),
        providers={"append": lambda: ScriptedProvider(APPEND_TURNS), "switchable": Switchable},
    )
    client = httpx.Client(
        base_url=server.origin,
        headers={"X-NR-LLM-Token": server.token, "Accept": "application/json"},
        timeout=120,
    )
    try:
        yield {"db": db, "log": log, "client": client, "server": server}
    finally:
        client.close()
        server.stop()
        assert server.app.store is not None
        server.app.store.close()


def pause(client: httpx.Client, provider: str = "append") -> dict[str, Any]:
    body = client.post("/api/runs", json={"prompt": "append once", "provider": provider}).json()
    last = body["events"][-1]
    assert last["event"] == "awaiting_approval", body
    return dict(last)


def decide(client: httpx.Client, run_id: str, digest: str, approved: bool = True) -> Any:
    return client.post(f"/api/runs/{run_id}/resume", json={"digest": digest, "approved": approved})


def discard(client: httpx.Client, run_id: str) -> httpx.Response:
    return client.post(f"/api/runs/{run_id}/discard", json={})


def record(db: str, run_id: str) -> Any:
    with AgentRunPersister(db) as store:
        return store.get_run(run_id)


def test_a_state_that_fails_the_claims_checks_leaves_the_run_shown_waiting(
    playground: dict[str, Any],
) -> None:
    """A state rewritten so that its bytes match the row but it is not signed for the turn:
    every decision is refused with the store's words, and the run is still shown waiting,
    however often it is asked, with no byte of the state (not even its calls: they are not
    what the host wrote); discard ends it. (Before ADR 0037 the first refusal made the
    playground forget the run: 404.)"""
    client, db = playground["client"], playground["db"]
    paused = pause(client)
    run_id = paused["run_id"]
    rewrite_state(db, run_id, unsigned(stored_state(db, run_id)))
    for _ in range(2):
        refused = decide(client, run_id, paused["digest"])
        assert refused.status_code == 409, refused.text
        assert CANARY not in refused.text
        body = refused.json()
        assert "cannot be resumed" in body["error"] and "still waits" in body["error"]
        view = body["approval"]
        assert view["waiting"] is True and view["decidable"] is False
        assert view["problem"] == body["error"]
        assert view["pending"] == [] and view["digest"] is None
    detail = client.get(f"/api/runs/{run_id}").json()
    assert detail["run"]["status"] == "suspended"
    assert detail["approval"]["waiting"] is True
    assert CANARY not in json.dumps(detail["approval"])
    assert discard(client, run_id).json()["discarded"] is True
    assert record(db, run_id)["termination_reason"] == "discarded"
    assert log_lines(playground["log"]) == []


def test_a_provider_change_the_loop_refuses_leaves_the_run_decidable(
    playground: dict[str, Any],
) -> None:
    """The provider reports another model when the decision comes: the loop refuses before
    the claim, the error event says so in host words (never the recorded or the new model
    name) and carries the run, still waiting; once the model is the one that paused it, the
    same playground approves it and the call runs once."""
    client, db = playground["client"], playground["db"]
    paused = pause(client, "switchable")
    run_id = paused["run_id"]
    MODEL["name"] = OTHER_MODEL
    refused = decide(client, run_id, paused["digest"])
    assert refused.status_code == 200  # the refusal came from the loop, in the stream
    assert OTHER_MODEL not in refused.text and "MODEL-CANARY" not in refused.text
    last = refused.json()["events"][-1]
    assert last["event"] == "error"
    assert "not the one (or not the model) that wrote the pending turn" in last["reason"]
    assert last["run_id"] == run_id
    view = last["approval"]
    assert view["waiting"] is True and view["decidable"] is True
    assert view["digest"] == paused["digest"]
    assert record(db, run_id)["status"] == "suspended"
    MODEL["name"] = None
    done = decide(client, run_id, paused["digest"]).json()["events"][-1]
    assert done["event"] == "done", done
    assert len(log_lines(playground["log"])) == 1


def test_a_run_another_process_approved_is_shown_gone(
    playground: dict[str, Any], site: Path, tmp_path: Path
) -> None:
    """A real ``nr-llm runs approve`` resumes the run the playground paused: the playground's
    decision and its discard are refused naming the command line, the run is shown gone, and
    the call ran once (in the other process)."""
    client, db, log = playground["client"], playground["db"], playground["log"]
    paused = pause(client)
    run_id = paused["run_id"]
    script = write_script(tmp_path / "script.json")
    proc = start_cli(approve_args(run_id, paused["digest"], db, script), env_for(site, log))
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, (out, err)
    refused = decide(client, run_id, paused["digest"])
    assert refused.status_code == 409
    assert "already resumed by cli on" in refused.json()["error"]
    view = refused.json()["approval"]
    assert view["waiting"] is False and view["status"] == "completed"
    assert view["reason"] == refused.json()["error"]
    again = discard(client, run_id)
    assert again.status_code == 409 and "already resumed by cli on" in again.json()["error"]
    assert "approval" not in client.get(f"/api/runs/{run_id}").json()
    assert [line.split()[1] for line in log_lines(log)] == ["once"]
    assert record(db, run_id)["status"] == "completed"


def test_discard_ends_the_run_and_a_replay_changes_nothing(playground: dict[str, Any]) -> None:
    """Discard settles the run cancelled (discarded) for the playground and wipes its state;
    a replayed discard is answered ``discarded: false`` naming who discarded it, a replayed
    approval is refused the same way, and no tool ever ran."""
    client, db = playground["client"], playground["db"]
    paused = pause(client)
    run_id = paused["run_id"]
    first = discard(client, run_id)
    assert first.status_code == 200
    assert first.json() == {
        "run_id": run_id,
        "discarded": True,
        "reason": f"run {run_id!r} was discarded",
    }
    stored = record(db, run_id)
    assert (stored["status"], stored["termination_reason"]) == ("cancelled", "discarded")
    assert stored["claimed_by"].startswith("playground on ")
    assert os.listdir(db + "-suspended") == []
    replay = discard(client, run_id)
    assert replay.status_code == 200
    assert replay.json()["discarded"] is False
    assert "was discarded by playground on" in replay.json()["reason"]
    assert replay.json()["reason"].endswith("; nothing changed")
    approve = decide(client, run_id, paused["digest"])
    assert approve.status_code == 409
    assert "was discarded by playground on" in approve.json()["error"]
    assert approve.json()["approval"]["waiting"] is False
    assert record(db, run_id) == stored
    assert log_lines(playground["log"]) == []


def test_a_second_store_connection_decides_first(playground: dict[str, Any]) -> None:
    """Another connection to the store claims one run and discards another, with a hostile
    claimant: the playground's discard and decision are refused with the store's words (the
    claimant as data), a discard by someone else is answered as already done, and nothing
    ran here."""
    client, db = playground["client"], playground["db"]
    claimed, discarded = pause(client), pause(client)
    with AgentRunPersister(db) as other:
        other.claim_suspended(claimed["run_id"], claimant=HOSTILE_CLAIMANT)
        other.discard(discarded["run_id"], claimant=HOSTILE_CLAIMANT)
    refused = discard(client, claimed["run_id"])
    assert refused.status_code == 409
    assert f"already resumed by {HOSTILE_CLAIMANT} at " in refused.json()["error"]
    assert record(db, claimed["run_id"])["status"] == "running"
    replay = discard(client, discarded["run_id"])
    assert replay.status_code == 200 and replay.json()["discarded"] is False
    assert f"was discarded by {HOSTILE_CLAIMANT} at " in replay.json()["reason"]
    approve = decide(client, discarded["run_id"], discarded["digest"])
    assert approve.status_code == 409
    assert f"was discarded by {HOSTILE_CLAIMANT}" in approve.json()["error"]
    assert log_lines(playground["log"]) == []


@pytest.mark.parametrize("first", ["playground", "cli"])
def test_a_discard_and_a_cli_approval_one_wins_the_call_runs_at_most_once(
    playground: dict[str, Any], site: Path, tmp_path: Path, first: str
) -> None:
    """``nr-llm runs approve`` in another process and the playground's discard, each one
    first in turn (a real race is left to the store's claim, tested on its own: the CLI
    starts far slower than a discard, so racing them here would test one order only). The
    discard that comes first leaves no line in the log and the command names the
    playground; the one that comes second is refused naming the command line."""
    client, db, log = playground["client"], playground["db"], playground["log"]
    paused = pause(client)
    run_id = paused["run_id"]
    script = write_script(tmp_path / "script.json")
    args, env = approve_args(run_id, paused["digest"], db, script), env_for(site, log)
    if first == "playground":
        answer = discard(client, run_id)
        proc = start_cli(args, env)
        out, err = proc.communicate(timeout=180)
    else:
        proc = start_cli(args, env)
        out, err = proc.communicate(timeout=180)
        answer = discard(client, run_id)
    stored = record(db, run_id)
    if first == "cli":
        assert proc.returncode == 0, (out, err)
        assert answer.status_code != 200 and "already resumed by cli on" in answer.json()["error"]
        assert len(log_lines(log)) == 1 and stored["status"] == "completed"
    else:
        assert proc.returncode != 0 and answer.status_code == 200, (answer.text, out, err)
        assert answer.json()["discarded"] is True
        assert "was discarded by playground on" in err
        assert log_lines(log) == [] and stored["termination_reason"] == "discarded"


def test_discard_needs_the_token_the_origin_and_a_json_body(playground: dict[str, Any]) -> None:
    """A discard without the token, with it only in the query, from another origin, or
    without a JSON body is refused, and the run still waits."""
    client, db, server = playground["client"], playground["db"], playground["server"]
    run_id = pause(client)["run_id"]
    url = f"{server.origin}/api/runs/{run_id}/discard"
    with httpx.Client(timeout=30) as bare:
        assert bare.post(url, json={}).status_code == 401
        assert bare.post(url + f"?token={server.token}", json={}).status_code == 401
        foreign = {"X-NR-LLM-Token": server.token, "Origin": "http://evil.example"}
        assert bare.post(url, json={}, headers=foreign).status_code == 403
        form = {"X-NR-LLM-Token": server.token, "Content-Type": "text/plain"}
        assert bare.post(url, content=b"{}", headers=form).status_code == 400
    assert record(db, run_id)["status"] == "suspended"
    assert discard(client, "no-such-run-id").status_code == 404
    assert discard(client, run_id).json()["discarded"] is True


def test_without_a_store_a_discard_is_remembered(tmp_path: Path) -> None:
    """With no audit store the playground's memory is the record: a discarded run is gone,
    a replay is told so, and a decision on it is refused."""
    server = start_server(
        None, host=append_host(), providers={"append": lambda: ScriptedProvider(APPEND_TURNS)}
    )
    try:
        with httpx.Client(
            base_url=server.origin,
            headers={"X-NR-LLM-Token": server.token, "Accept": "application/json"},
            timeout=60,
        ) as client:
            paused = pause(client)
            run_id = paused["run_id"]
            assert discard(client, run_id).json()["discarded"] is True
            replay = discard(client, run_id).json()
            assert replay["discarded"] is False
            assert replay["reason"].endswith("was discarded by this playground; nothing changed")
            refused = decide(client, run_id, paused["digest"])
            assert refused.status_code == 404
            assert "was discarded by this playground" in refused.json()["error"]
    finally:
        server.stop()


def test_a_missing_or_cut_digest_says_so_and_the_run_still_waits(
    playground: dict[str, Any],
) -> None:
    """A decision without its digest, or with the digest cut short, is told what is wrong
    with it (the operator pass got "stale approval" for both, as if the turn had changed);
    nothing runs and the run still waits for the whole digest."""
    client, db = playground["client"], playground["db"]
    paused = pause(client)
    run_id, digest = paused["run_id"], paused["digest"]
    missing = client.post(f"/api/runs/{run_id}/resume", json={"approved": True})
    assert missing.status_code == 400, missing.text
    assert missing.json()["error"].startswith("the decision has no digest: give the whole digest")
    cut = decide(client, run_id, digest[:8])
    assert cut.status_code == 400, cut.text
    assert cut.json()["error"].startswith("the digest is cut short: give the whole digest")
    assert record(db, run_id)["status"] == "suspended"
    assert decide(client, run_id, digest).status_code == 200
