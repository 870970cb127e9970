"""Every command that runs tools closes its host and its store however it ends: the worker's
process group (a tool's own children included) is gone and the audit database is closed
(SQLite removes the ``-wal`` file when the last connection closes) after a provider error,
Ctrl-C, SIGTERM or SIGHUP.

Real ``nr-llm`` processes against a loopback OpenAI-compatible server. The isolated probe
starts a child of its own, which only the host's ``close()`` (a kill of the worker's process
group) stops: a worker whose pipe just closes exits, but its child lives on.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from nr_llm_core.audit import AgentRunPersister
from tests.loop._wire import Reply, WireServer
from tests.loop.test_openai_wire import tool_call_reply

from ._probe import alive, cli_env, nr_llm, run_nr_llm, spawned, write_probe_site, write_user_config


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    write_user_config('[isolation]\ndistributions = ["nr-llm-probe"]\n')
    return cli_env(write_probe_site(tmp_path / "site"), OPENAI_API_KEY="sk-cleanup")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "audit.db"


@pytest.fixture
def children() -> Iterator[list[int]]:
    """Pids a test found; killed afterwards if the test left them behind."""
    found: list[int] = []
    yield found
    for pid in found:
        if alive(pid):
            subprocess.run(["kill", "-9", str(pid)], check=False)


def eventually(condition: Callable[[], bool]) -> bool:
    """``condition()`` within a generous bound (a kill is seen a moment later in /proc)."""
    deadline = time.monotonic() + 15
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def wait_for(server: WireServer, count: int) -> None:
    assert eventually(lambda: len(server.requests) >= count), "the CLI never asked"


def tool_result_of(server: WireServer, index: int) -> str:
    messages = server.requests[index].json()["messages"]
    return str(next(m["content"] for m in messages if m["role"] == "tool"))


def assert_closed(child: int, worker: int, db: Path) -> None:
    assert eventually(lambda: not alive(child)), "the tool's child outlived the command"
    assert not alive(worker)
    assert db.exists()
    assert not Path(f"{db}-wal").exists(), "the audit store was not closed"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_while_waiting_for_the_model_closes_everything(
    signum: signal.Signals, env: dict[str, str], db: Path, tmp_path: Path, children: list[int]
) -> None:
    """The tool ran (its worker and child are up), the model is slow, the command is told to
    stop: it unwinds, kills the worker's group, closes the store, and exits 128 + signal
    (Ctrl-C: click's `Aborted!`, status 1). The run is settled `cancelled` for the reason
    `interrupted`: left `running`, no command could ever end it."""
    replies = [tool_call_reply(("c1", "probe_spawn", "{}")), Reply(hang=True)]
    with WireServer(replies) as server:
        args = [
            "run",
            "go",
            "--provider",
            "openai",
            "--base-url",
            server.url,
            "--trust-zone",
            "local",
            "--db",
            str(db),
        ]
        with nr_llm(
            *args,
            env=env,
            modules=tmp_path / "modules",
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as proc:
            try:
                wait_for(server, 2)
                child, worker = spawned(tool_result_of(server, 1))
                children.append(child)
                assert alive(child) and alive(worker)
                proc.send_signal(signum)
                _, err = proc.communicate(timeout=60)
            finally:
                proc.kill()
                server.release.set()
    assert proc.returncode == (1 if signum == signal.SIGINT else 128 + signum), err
    assert_closed(child, worker, db)
    with AgentRunPersister(db) as store:
        (run,) = store.list_runs()
    assert (run["status"], run["termination_reason"]) == ("cancelled", "interrupted")


def test_a_provider_error_after_a_tool_call_closes_everything(
    env: dict[str, str], db: Path, children: list[int]
) -> None:
    replies = [tool_call_reply(("c1", "probe_spawn", "{}")), Reply(401, {"error": {}})]
    with WireServer(replies) as server:
        ran = run_nr_llm(
            "run",
            "go",
            "--provider",
            "openai",
            "--base-url",
            server.url,
            "--trust-zone",
            "local",
            "--db",
            str(db),
            env=env,
        )
        child, worker = spawned(tool_result_of(server, 1))
    children.append(child)
    assert ran.code == 1 and "HTTP 401" in ran.out
    assert_closed(child, worker, db)


def test_a_resumed_run_that_fails_closes_everything(
    env: dict[str, str], db: Path, children: list[int]
) -> None:
    """`runs approve` runs the approved tool, then the provider fails."""
    with WireServer([tool_call_reply(("c1", "probe_spawn_gated", "{}"))]) as server:
        base = [
            "--provider",
            "openai",
            "--base-url",
            server.url,
            "--trust-zone",
            "local",
            "--db",
            str(db),
        ]
        ran = run_nr_llm("run", "go", *base, env=env)
        assert ran.code == 0 and "awaiting_approval" in ran.out, ran.err
        run_id = re.search(r"runs approve\|deny (\w+)", ran.out).group(1)  # type: ignore[union-attr]
        server.replies.append(Reply(500, b"down"))
        ran = run_nr_llm("runs", "approve", run_id, *base, env=env)
        child, worker = spawned(tool_result_of(server, 1))
    children.append(child)
    assert ran.code == 1 and "failed" in ran.out, ran.err
    assert_closed(child, worker, db)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_the_playground_closes_its_host_and_store_when_stopped(
    signum: signal.Signals, env: dict[str, str], db: Path, tmp_path: Path, children: list[int]
) -> None:
    command = ["playground", "--no-open", "--db", str(db)]
    with nr_llm(
        *command,
        env=env,
        modules=tmp_path / "modules",
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    ) as proc:
        try:
            assert proc.stdout is not None
            match = re.search(r"(http://\S+)/\?token=(\S+)$", proc.stdout.readline().strip())
            assert match
            origin, token = match.groups()
            headers = {"X-NR-LLM-Token": token, "Accept": "application/json"}
            reply = httpx.post(
                f"{origin}/api/tools/probe_spawn/invoke", json={}, headers=headers, timeout=60
            ).json()
            child, worker = spawned(reply["content"])
            children.append(child)
            run = httpx.post(
                f"{origin}/api/runs", json={"prompt": "x"}, headers=headers, timeout=60
            )
            assert json.dumps(run.json()["events"][-1]).count("done") == 1
            assert Path(f"{db}-wal").exists()  # the store is open and has written
            proc.send_signal(signum)
            proc.wait(60)
        finally:
            proc.kill()
    assert_closed(child, worker, db)
