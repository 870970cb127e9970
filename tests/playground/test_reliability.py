"""Many runs at once, clients that leave, tools that hang: the playground keeps its promises."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from nr_llm_core.encoding import decode_json
from nr_llm_core.playground import PlaygroundServer

from ._fixtures import GATE, start_server

RUNS = 50
ECHO_KINDS = ["request", "llm", "tool"] * 3 + ["request", "llm"]
HANG_TIMEOUT = 3.0


@pytest.fixture(scope="module")
def slow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlaygroundServer]:
    """A server whose tool calls time out after a few seconds."""
    db: Path = tmp_path_factory.mktemp("reliability") / "audit.db"
    srv = start_server(db, tool_timeout=HANG_TIMEOUT, workers=16)
    yield srv
    srv.stop()


def _client(server: PlaygroundServer) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=server.origin,
        headers={"X-NR-LLM-Token": server.token},
        timeout=120,
        limits=httpx.Limits(max_connections=RUNS + 10),
    )


async def _stream(client: httpx.AsyncClient, provider: str) -> list[dict]:
    events = []
    # At full: the live steps carry the results these tests read (a level below shows counts).
    body = {"prompt": "go", "provider": provider, "privacy": "full"}
    async with client.stream("POST", "/api/runs", json=body) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line:
                events.append(decode_json(line))
    return events


def _wait_for(predicate, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def test_fifty_concurrent_streams_each_deliver_every_step_once_in_order(
    server: PlaygroundServer,
) -> None:
    async def main() -> list[list[dict]]:
        async with _client(server) as client:
            return await asyncio.gather(*(_stream(client, "echoes") for _ in range(RUNS)))

    results = asyncio.run(main())
    run_ids = set()
    for events in results:
        assert events[0]["event"] == "context"
        assert [e["event"] for e in events[1:-1]] == ["step"] * len(ECHO_KINDS)
        assert events[-1]["event"] == "done"
        steps = events[1:-1]
        assert [s["index"] for s in steps] == list(range(len(ECHO_KINDS)))
        assert [s["step"]["kind"] for s in steps] == ECHO_KINDS
        results_seen = [s["step"]["tool_result"] for s in steps if s["step"]["kind"] == "tool"]
        assert results_seen == ["echo: t0", "echo: t1", "echo: t2"]
        run_ids.add(events[0]["run_id"])
        assert {e["run_id"] for e in events} == {events[0]["run_id"]}
    assert len(run_ids) == RUNS
    store = server.app.store
    assert store is not None
    for run_id in run_ids:
        detail = store.run(run_id)
        assert detail is not None and detail["run"]["status"] == "completed"
        assert [s["step"]["kind"] for s in detail["steps"]] == ECHO_KINDS


def test_a_client_that_disconnects_does_not_stop_the_run(server: PlaygroundServer) -> None:
    GATE.clear()
    try:
        with (
            httpx.Client(
                base_url=server.origin, headers={"X-NR-LLM-Token": server.token}, timeout=30
            ) as client,
            client.stream("POST", "/api/runs", json={"prompt": "go", "provider": "gated"}) as resp,
        ):
            seen = []
            for line in resp.iter_lines():
                seen.append(decode_json(line))
                calls = seen[-1].get("step", {}).get("requested_tool_names") or [None]
                if calls[0] == "gate":
                    break  # the gate tool is about to run: leave
        run_id = seen[0]["run_id"]
        # The client is gone; the run is still blocked in the gate tool.
        assert server.app.store is not None
        assert server.app.store.run(run_id)["run"]["status"] == "running"
    finally:
        GATE.set()
    store = server.app.store

    def settled() -> bool:
        detail = store.run(run_id)
        return detail is not None and detail["run"]["status"] == "completed"

    _wait_for(settled)
    kinds = [s["step"]["kind"] for s in store.run(run_id)["steps"]]
    assert kinds == ["request", "llm", "tool"] * 2 + ["request", "llm"]


def test_a_hanging_tool_does_not_block_other_runs(slow_server: PlaygroundServer) -> None:
    async def main() -> tuple[float, list[float], list[list[dict]]]:
        async with _client(slow_server) as client:
            hang_done: list[float] = []
            hang_events: list[list[dict]] = []
            started = asyncio.Event()
            waiting = 0

            async def hang_run() -> None:
                nonlocal waiting
                events = []
                body = {"prompt": "go", "provider": "hang", "privacy": "full"}
                async with client.stream("POST", "/api/runs", json=body) as response:
                    async for line in response.aiter_lines():
                        if not line:
                            continue
                        events.append(decode_json(line))
                        step = events[-1].get("step", {})
                        if step.get("requested_tool_calls"):
                            waiting += 1
                            if waiting == 3:
                                started.set()
                hang_done.append(time.monotonic())
                hang_events.append(events)

            hangs = [asyncio.create_task(hang_run()) for _ in range(3)]
            await asyncio.wait_for(started.wait(), 30)
            await asyncio.sleep(0.2)  # the three calls are now inside the hanging tool
            invoked = client.post("/api/tools/echo/invoke", json={"arguments": {"text": "hi"}})
            others = await asyncio.gather(*(_stream(client, "echoes") for _ in range(5)), invoked)
            others_done = time.monotonic()
            assert others[-1].json()["content"] == "echo: hi"
            for events in others[:-1]:
                assert events[-1]["event"] == "done"
            await asyncio.gather(*hangs)
            return others_done, hang_done, hang_events

    others_done, hang_done, hang_events = asyncio.run(main())
    assert others_done < min(hang_done), "the other runs waited for the hanging tool"
    for events in hang_events:
        tool = next(e["step"] for e in events if e.get("step", {}).get("kind") == "tool")
        assert tool["tool_result"] == 'Error: tool "hang" timed out.'
        assert events[-1]["event"] == "done"


def test_a_hanging_tool_in_the_tool_runner_times_out(slow_server: PlaygroundServer) -> None:
    with httpx.Client(
        base_url=slow_server.origin, headers={"X-NR-LLM-Token": slow_server.token}, timeout=30
    ) as client:
        started = time.monotonic()
        body = client.post("/api/tools/hang/invoke", json={"arguments": {}}).json()
        assert body["is_error"] and body["content"] == 'Error: tool "hang" timed out.'
        assert time.monotonic() - started < HANG_TIMEOUT + 5
