"""Runs that meet a slow provider or a dying isolated worker end with the right reason."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from nr_llm_core import OpenAIChatProvider, ScriptedProvider, ToolLoop
from nr_llm_core.loop import TerminationReason
from nr_llm_core.messages import ChatMessage
from nr_llm_core.providers.base import Completion
from nr_llm_core.results import ToolSpec

from ._tools import soak_host


class _Stalls(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        time.sleep(8.0)  # far past the provider's deadline; the server stops by itself
        self.send_response(500)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def stalling_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Stalls)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_a_provider_past_its_deadline_fails_the_run(stalling_server: str) -> None:
    provider = OpenAIChatProvider(stalling_server, "m", api_key="k", timeout=0.3, max_retries=0)
    started = time.monotonic()
    with provider:
        result = ToolLoop(provider, soak_host()).run("hello")
    assert result.termination_reason is TerminationReason.FAILED
    assert "did not answer within 0.3 s" in (result.error or "")
    assert time.monotonic() - started < 5.0  # the deadline, not the server, ended it


class _SlowThenTimeout:
    """A provider adapter of someone else's: sleeps, then raises the standard TimeoutError."""

    trust_zone = "local"

    def complete(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> Completion:
        time.sleep(0.2)
        raise TimeoutError("deadline passed")


def test_a_provider_raising_a_timeout_fails_the_run() -> None:
    result = ToolLoop(_SlowThenTimeout(), soak_host()).run("hello")  # type: ignore[arg-type]
    assert result.termination_reason is TerminationReason.FAILED
    assert result.error == "provider error: the provider raised TimeoutError"


def test_a_dying_worker_is_an_error_result_and_the_run_goes_on(on_path: Path) -> None:
    from tests.isolation.conftest import isolated_host

    provider = ScriptedProvider(
        [
            {"content": "", "tool_calls": [{"name": "exits"}]},
            {"content": "", "tool_calls": [{"name": "segv"}, {"name": "hang"}]},
            {"content": "", "tool_calls": [{"name": "calm"}]},
            "the tools misbehaved, but here is an answer",
        ]
    )
    with isolated_host() as host:
        result = ToolLoop(provider, host, tool_timeout=1.0).run("go")
    assert result.termination_reason is TerminationReason.COMPLETED
    assert [i.result.content for i in result.invocations[:3]] == [
        'Error: tool "exits" failed.',
        'Error: tool "segv" failed.',
        'Error: tool "hang" timed out.',
    ]
    assert not result.invocations[3].result.is_error  # a fresh worker answered


def test_a_model_that_keeps_calling_a_dying_tool_hits_the_round_cap(on_path: Path) -> None:
    from tests.isolation.conftest import isolated_host

    turns = [{"content": "", "tool_calls": [{"name": "exits"}]}] * 3 + ["giving up"]
    with isolated_host() as host:
        result = ToolLoop(ScriptedProvider(turns), host, max_iterations=3).run("go")
    assert result.termination_reason is TerminationReason.MAX_ITERATIONS
    assert result.truncated
    assert all(i.result.content == 'Error: tool "exits" failed.' for i in result.invocations)
