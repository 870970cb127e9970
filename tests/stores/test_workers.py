"""Two ``nr-llm worker`` processes on one real PostgreSQL server (issue 17, point 2): a mixed
load of queued runs and approvals runs every call exactly once; a worker killed with SIGKILL
mid-run loses no committed step and its run is finished by the other worker."""

from __future__ import annotations

import json
import os
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from nr_llm_core.stores import open_store
from nr_llm_core.stores.queue import enqueue_run

from ._workers import call, fleet, make_site, statuses, wait_for

#: Each run: a call that needs no approval, then one that does, then the answer.
MIXED: list[Any] = [call("note", "n1"), call("append_line", "a1"), "done"]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_site(tmp_path_factory.mktemp("worker-dist"))


def queue_payloads(url: str) -> list[Any]:
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT task_name, args FROM procrastinate_jobs")).all()
    engine.dispose()
    return [(task, args) for task, args in rows]


def test_two_workers_run_every_run_once_and_every_approved_call_once(
    tmp_path: Path, site: Path, pg_url: str
) -> None:
    """Six runs queued (two with ``nr-llm run --queue``, four with the embedding API), two
    workers: each run's unapproved call runs once and the run waits; every run is approved
    from the command line (one of them by two processes at once: one is refused, naming the
    other), and each approved call runs exactly once on whichever worker was free. The
    queue's payloads hold run ids only, never a prompt."""
    with fleet(tmp_path, site, pg_url, MIXED) as f:
        for name in ("w1", "w2"):
            f.start_worker(name)
        runs = []
        for n in range(2):
            done = f.cli("run", "--queue", f"PROMPT-CANARY-cli-{n}")
            assert done.returncode == 0, (done.stdout, done.stderr)
            runs.append(done.stdout.strip())
        runs += [enqueue_run(pg_url, f"PROMPT-CANARY-api-{n}") for n in range(4)]
        wait_for(
            lambda: set(statuses(pg_url, runs).values()) == {"suspended"},
            "every run to wait for approval",
        )
        for task, args in queue_payloads(pg_url):
            assert "CANARY" not in json.dumps(args)
            if task == "nr_llm.execute_run":
                assert set(args) == {"run_id"}
        racing = [f.start_cli("runs", "approve", runs[0], "--yes") for _ in range(2)]
        outcomes = []
        for proc in racing:
            out, err = proc.communicate(timeout=180)
            outcomes.append((proc.returncode, out, err))
        assert sorted(code for code, _, _ in outcomes) == [0, 1], outcomes
        loser = next(err for code, _, err in outcomes if code == 1)
        assert "already resumed by cli on" in loser
        for run_id in runs[1:]:
            assert f.cli("runs", "approve", run_id, "--yes").returncode == 0
        wait_for(
            lambda: set(statuses(pg_url, runs).values()) == {"completed"},
            "every run to complete",
        )
        calls = Counter((run_id, tool) for run_id, tool, _ in f.lines())
        assert calls == Counter({(r, t): 1 for r in runs for t in ("note", "append_line")})
        workers = {pid for _, _, pid in f.lines()}
        assert workers <= {p.pid for p in f.workers.values()}
        with open_store(pg_url) as store:
            for run_id in runs:
                record = store.get_run(run_id)
                assert record is not None and record["claimed_by"].startswith("cli on")
                kinds = [s["kind"] for s in store.steps(run_id)]
                assert kinds.count("approval") == 1 and kinds.count("tool") == 2
                assert [s["seq"] for s in store.steps(run_id)] == list(range(1, len(kinds) + 1))
        for _, args in queue_payloads(pg_url):
            assert "CANARY" not in json.dumps(args)


def worker_holding(f: Any, tool: str, run_id: str) -> str:
    """The name of the worker whose process logged ``tool`` for ``run_id``."""
    pids = {pid for r, t, pid in f.lines() if r == run_id and t == tool}
    return next(name for name, proc in f.workers.items() if proc.pid in pids)


def test_a_worker_killed_mid_run_loses_no_step_and_the_other_finishes(
    tmp_path: Path, site: Path, pg_url: str
) -> None:
    """A run's worker is SIGKILLed inside a tool call. Every step committed before the kill
    is still there, in order; the other worker takes the run once the queue sees the first one
    silent, starts it over from its start state (the unapproved calls run again: at least
    once), and completes it."""
    turns: list[Any] = [call("note", "n1"), call("block", "b1"), "done"]
    with fleet(tmp_path, site, pg_url, turns) as f:
        for name in ("w1", "w2"):
            f.start_worker(name)
        run_id = enqueue_run(pg_url, "run until killed")
        wait_for(lambda: any(t == "block" for _, t, _ in f.lines()), "the blocking call")
        victim = worker_holding(f, "block", run_id)
        with open_store(pg_url) as store:
            before = store.steps(run_id)
        os.kill(f.workers[victim].pid, signal.SIGKILL)
        f.workers[victim].wait(30)
        f.release.touch()
        wait_for(lambda: statuses(pg_url, [run_id])[run_id] == "completed", "the other worker")
        with open_store(pg_url) as store:
            after = store.steps(run_id)
            record = store.get_run(run_id)
        assert before and [s["payload"] for s in after[: len(before)]] == [
            s["payload"] for s in before
        ]
        assert [s["seq"] for s in after] == list(range(1, len(after) + 1))
        survivor = next(name for name in f.workers if name != victim)
        assert record is not None and record["status"] == "completed"
        engine = sa.create_engine(pg_url)
        with engine.connect() as conn:
            taken_by, attempts = conn.execute(
                sa.text("SELECT taken_by, attempts FROM runs WHERE id = :r"), {"r": run_id}
            ).one()
        engine.dispose()
        assert (taken_by, attempts) == (survivor, 2)
        notes = [pid for r, t, pid in f.lines() if r == run_id and t == "note"]
        assert len(notes) == 2 and notes[-1] == f.workers[survivor].pid


def test_an_approved_call_whose_worker_is_killed_is_not_run_again(
    tmp_path: Path, site: Path, pg_url: str
) -> None:
    """The approved call's worker is SIGKILLed while the call runs: the other worker takes
    the run, does not run the approved call a second time (at most once), tells the model
    so, and completes the run."""
    turns: list[Any] = [call("block_approved", "b1"), "done"]
    with fleet(tmp_path, site, pg_url, turns) as f:
        for name in ("w1", "w2"):
            f.start_worker(name)
        run_id = enqueue_run(pg_url, "approve, then kill")
        wait_for(lambda: statuses(pg_url, [run_id])[run_id] == "suspended", "the approval wait")
        assert f.cli("runs", "approve", run_id, "--yes").returncode == 0
        wait_for(lambda: any(t == "block_approved" for _, t, _ in f.lines()), "the approved call")
        victim = worker_holding(f, "block_approved", run_id)
        os.kill(f.workers[victim].pid, signal.SIGKILL)
        f.workers[victim].wait(30)
        wait_for(lambda: statuses(pg_url, [run_id])[run_id] == "completed", "the other worker")
        f.release.touch()
        approved = [pid for r, t, pid in f.lines() if r == run_id and t == "block_approved"]
        assert approved == [f.workers[victim].pid]


def test_a_run_resumed_by_a_worker_of_a_wider_zone_keeps_the_stricter_rules(
    tmp_path: Path, site: Path, pg_url: str
) -> None:
    """A run that began on a worker whose provider is external waits for approval; only a
    local-zone worker is left to resume it. The run keeps the external zone: the internal
    tool the model then asks for is not offered and does not run, and the run row says
    external."""
    turns: list[Any] = [call("append_line", "a1"), call("internal_note", "i1"), "done"]
    with fleet(tmp_path, site, pg_url, turns) as f:
        f.start_worker("external", "--trust-zone", "external")
        run_id = enqueue_run(pg_url, "begin outside")
        wait_for(lambda: statuses(pg_url, [run_id])[run_id] == "suspended", "the approval wait")
        f.workers["external"].terminate()
        f.workers["external"].wait(60)
        f.start_worker("local")  # the scripted provider's own zone: local
        assert f.cli("runs", "approve", run_id, "--yes").returncode == 0
        wait_for(lambda: statuses(pg_url, [run_id])[run_id] == "completed", "the local worker")
        tools = [t for r, t, _ in f.lines() if r == run_id]
        assert tools == ["append_line"]
        engine = sa.create_engine(pg_url)
        with engine.connect() as conn:
            zone, taken_by = conn.execute(
                sa.text("SELECT trust_zone, taken_by FROM runs WHERE id = :r"), {"r": run_id}
            ).one()
        engine.dispose()
        assert (zone, taken_by) == ("external", "local")
        with open_store(pg_url) as store:
            steps = store.steps(run_id)
        refused = [s for s in steps if s["kind"] == "tool" and s["step"].get("tool_is_error")]
        assert len(refused) == 1
