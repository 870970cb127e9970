"""13.6 with real processes: two ``nr-llm runs approve`` at once, and the playground racing the
command line, on one suspended run. The approved call appends one line per run to a log file
(a real distribution's tool, found through its entry point by every process). Each test runs
on a SQLite file and on a PostgreSQL server (``store_target``), with the same assertions: the
claim is the store's, whichever store it is."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from nr_llm_core import ScriptedProvider
from nr_llm_core.playground import PlaygroundServer
from nr_llm_core.playground._store import open_store

from ..stores.fixtures import SECRET
from ._support import (
    APPEND_TURNS,
    LOG_VAR,
    append_host,
    cli_env,
    log_lines,
    make_site,
    start_cli,
    suspend_append_run,
    write_script,
)

CLAIMED_BY = r"already resumed by {} on \S+ \(pid \d+\) at \d{{4}}-\d\d-\d\dT[\d:.]+Z"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_site(tmp_path_factory.mktemp("dist"))


@pytest.fixture
def target(store_target: str) -> str:
    """The store under test: a SQLite file, then a PostgreSQL database."""
    return store_target


def env_for(site: Path, log: Path) -> dict[str, str]:
    """A command's environment: the test distribution and the log; on PostgreSQL also the
    host secret the fixture named for this process (a shared store needs one named). On
    SQLite every process finds the same secret file, as a user's processes do."""
    env = cli_env(site, log)
    if os.environ.get("NR_LLM_SECRET") == SECRET:
        env["NR_LLM_SECRET"] = SECRET
    return env


def approve_args(run_id: str, digest: str, db: str, script: Path) -> list[str]:
    return ["runs", "approve", run_id, "--digest", digest, "--script", str(script), "--db", db]


def test_two_cli_approvals_at_once_run_the_call_once(
    tmp_path: Path, site: Path, target: str
) -> None:
    """Two processes approve one run at the same time, three times over (three runs in one
    store): one line per run in the log; one process completes the run, the other exits
    non-zero naming the winner."""
    script = write_script(tmp_path / "script.json")
    for attempt in range(3):
        db = target
        log = tmp_path / f"append-{attempt}.log"
        run_id, digest = suspend_append_run(db)
        env = env_for(site, log)
        procs = [start_cli(approve_args(run_id, digest, db, script), env) for _ in range(2)]
        outcomes = []
        for proc in procs:
            out, err = proc.communicate(timeout=180)
            outcomes.append((proc.returncode, out, err))
        assert len(log_lines(log)) == 1, (attempt, outcomes)
        winners = [o for o in outcomes if o[0] == 0]
        losers = [o for o in outcomes if o[0] != 0]
        assert len(winners) == 1 and len(losers) == 1, outcomes
        assert "appended it" in winners[0][1] and "completed" in winners[0][1]
        assert re.search(CLAIMED_BY.format("cli"), losers[0][2]), losers[0][2]
        assert "Traceback" not in losers[0][2]


@pytest.fixture
def playground(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> Iterator[dict[str, Any]]:
    """A real playground on 127.0.0.1 recording into the store under test, with the append
    tool."""
    db = target
    log = tmp_path / "append.log"
    monkeypatch.setenv(LOG_VAR, str(log))  # the playground's in-process tool writes here
    store = open_store(db)
    server = PlaygroundServer(
        append_host(),
        providers={"append": lambda: ScriptedProvider(APPEND_TURNS)},
        store=store,
    ).start()
    client = httpx.Client(
        base_url=server.origin,
        headers={"X-NR-LLM-Token": server.token, "Accept": "application/json"},
        timeout=120,
    )
    try:
        yield {"db": db, "log": log, "client": client}
    finally:
        client.close()
        server.stop()
        store.close()  # the host's to close, not the playground's (its pool's connections)


def pause_in_playground(client: httpx.Client) -> tuple[str, str]:
    body = client.post("/api/runs", json={"prompt": "append once", "provider": "append"}).json()
    last = body["events"][-1]
    assert last["event"] == "awaiting_approval", body
    return last["run_id"], last["digest"]


def playground_outcome(response: httpx.Response) -> tuple[bool, str]:
    """(resumed and completed, the refusal text if not)."""
    if response.status_code != 200:
        return False, str(response.json().get("error"))
    last = response.json()["events"][-1]
    if last["event"] == "done":
        return True, ""
    return False, str(last.get("reason"))


@pytest.mark.parametrize("order", ["playground-first", "cli-first", "together"])
def test_the_playground_and_the_cli_resume_a_run_once(
    tmp_path: Path, site: Path, playground: dict[str, Any], order: str
) -> None:
    """A run paused in the playground is approved both there (HTTP, with the token) and with
    ``nr-llm runs approve`` in another process: the call runs once, and whoever comes second
    is told who resumed the run."""
    client: httpx.Client = playground["client"]
    db: str = playground["db"]
    log: Path = playground["log"]
    script = write_script(tmp_path / "script.json")
    run_id, digest = pause_in_playground(client)
    url = f"/api/runs/{run_id}/resume"
    decision = {"digest": digest, "approved": True}
    args = approve_args(run_id, digest, db, script)
    env = env_for(site, log)
    if order == "cli-first":
        proc = start_cli(args, env)
        out, err = proc.communicate(timeout=180)
        web = playground_outcome(client.post(url, json=decision))
    elif order == "playground-first":
        web = playground_outcome(client.post(url, json=decision))
        proc = start_cli(args, env)
        out, err = proc.communicate(timeout=180)
    else:
        proc = start_cli(args, env)
        web = playground_outcome(client.post(url, json=decision))
        out, err = proc.communicate(timeout=180)
    cli_won = proc.returncode == 0
    assert len(log_lines(log)) == 1, (order, log_lines(log), web, out, err)
    assert cli_won != web[0], (order, web, proc.returncode, out, err)
    if cli_won:
        assert "appended it" in out
        assert re.search(CLAIMED_BY.format("cli"), web[1]), web
    else:
        assert re.search(CLAIMED_BY.format("playground"), err), err
    record = client.get(f"/api/runs/{run_id}").json()["run"]
    assert record["status"] == "completed"
    assert record["claimed_by"].startswith("cli on" if cli_won else "playground on")
