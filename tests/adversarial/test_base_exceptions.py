"""``KeyboardInterrupt``, ``SystemExit``, ``GeneratorExit`` and other ``BaseException``
subclasses a tool raises: ``invoke()`` returns an error result, except for the user's Ctrl-C.

The rule (``ToolHost.invoke``, ADR 0019): an exact ``KeyboardInterrupt`` that reaches the seam
in the main thread, while the call runs in that thread, is the user's Ctrl-C and propagates.
Anything else is the tool's: a ``KeyboardInterrupt`` raised in the timeout thread or in any
thread but the main one (a signal is only ever delivered to the main thread), a subclass of it,
``SystemExit``, ``GeneratorExit``, a custom ``BaseException``. In the playground, whose calls
all run in worker threads, such a tool ends its call with an error result, the NDJSON stream
closes with its terminal event, and the server keeps serving; a run whose loop itself raises a
``BaseException`` ends with an ``error`` event.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import pytest

from nr_llm_core import ChatMessage, ToolHost, ToolResult, ToolSpec, hookimpl
from nr_llm_core.encoding import decode_json
from nr_llm_core.playground import PlaygroundServer
from nr_llm_core.providers import Completion, ScriptedProvider
from nr_llm_core.providers.base import TrustZone

from ._hostile import returns_within


class CustomBase(BaseException):
    """A ``BaseException`` that is not an ``Exception``."""


class OwnInterrupt(KeyboardInterrupt):
    """A tool's own ``KeyboardInterrupt`` subclass: never the user's Ctrl-C."""


RAISED: dict[str, type[BaseException]] = {
    "raises_keyboard_interrupt": KeyboardInterrupt,
    "raises_own_interrupt": OwnInterrupt,
    "raises_system_exit": SystemExit,
    "raises_generator_exit": GeneratorExit,
    "raises_custom_base": CustomBase,
}


def raiser(name: str, cls: type[BaseException]) -> object:
    class Raiser:
        @hookimpl
        def tool_spec(self) -> ToolSpec:
            return ToolSpec(name, f"Raises {cls.__name__}.", data_class="public")

        @hookimpl
        def execute(self, arguments: dict[str, Any]) -> ToolResult:
            raise cls()

    return Raiser()


def host_with_raisers() -> ToolHost:
    host = ToolHost()
    for name, cls in RAISED.items():
        host.register(raiser(name, cls))
    return host


def failed(name: str) -> str:
    return f'Error: tool "{name}" failed.'


# -- the seam ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(RAISED))
def test_in_the_timeout_thread_every_base_exception_is_an_error_result(name: str) -> None:
    """Tries each ``BaseException`` raised in the timeout thread, ``KeyboardInterrupt``
    included: no signal reaches that thread, so it is the tool's, and the caller gets an
    error result."""
    result = host_with_raisers().invoke(name, {}, timeout=60)
    assert result.content == failed(name)


@pytest.mark.parametrize("name", sorted(RAISED))
def test_in_another_thread_every_base_exception_is_an_error_result(name: str) -> None:
    """Tries each ``BaseException`` raised by a tool called without a timeout from a thread
    that is not the main one (a server's worker): it is the tool's, not the user's."""
    host = host_with_raisers()
    result = returns_within(lambda: host.invoke(name, {}))
    assert result.content == failed(name)


@pytest.mark.parametrize(
    "name", sorted(set(RAISED) - {"raises_keyboard_interrupt"}), ids=lambda n: n[7:]
)
def test_in_the_main_thread_only_an_exact_keyboard_interrupt_propagates(name: str) -> None:
    """Tries each ``BaseException`` but an exact ``KeyboardInterrupt`` in the main thread
    (a ``KeyboardInterrupt`` subclass included: the default SIGINT handler never raises one)."""
    assert threading.current_thread() is threading.main_thread()
    assert host_with_raisers().invoke(name, {}).content == failed(name)


def test_the_users_ctrl_c_propagates_from_a_call_in_the_main_thread() -> None:
    """An exact ``KeyboardInterrupt`` in the main thread, the call running there: the user's
    Ctrl-C, which ``invoke()`` never swallows."""
    assert threading.current_thread() is threading.main_thread()
    with pytest.raises(KeyboardInterrupt):
        host_with_raisers().invoke("raises_keyboard_interrupt", {})


class InterruptsMain:
    """Presses Ctrl-C (a real SIGINT to the main thread) while the main thread waits for this
    call in the timeout thread, until the main thread has received it, then waits to be let
    go. (One signal is not enough: one that arrives after the main thread's last check and
    before its lock wait begins is handled only when the wait ends, a race of CPython's.)"""

    received = threading.Event()
    stopped = threading.Event()
    release = threading.Event()

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("interrupts_main", "Presses Ctrl-C for the user.")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        try:
            while not self.received.wait(0.05):
                signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
        finally:
            self.stopped.set()
        self.release.wait(60)
        return ToolResult.text("late")


def test_the_users_ctrl_c_while_waiting_for_a_timed_call_propagates() -> None:
    """Ctrl-C while the main thread waits for a call in the timeout thread interrupts the
    wait: it is the user's. The handler is Python's own (``default_int_handler`` raises
    ``KeyboardInterrupt``) for the first SIGINT and ignores the ones the tool sent after it;
    it is installed by the test (a suite started with ``nohup … &`` inherits SIGINT ignored,
    and then no Ctrl-C can arrive)."""

    def first_only(signum: int, frame: Any) -> None:
        if not InterruptsMain.received.is_set():
            InterruptsMain.received.set()
            signal.default_int_handler(signum, frame)

    previous = signal.signal(signal.SIGINT, first_only)
    host = ToolHost()
    host.register(InterruptsMain())
    try:
        with pytest.raises(KeyboardInterrupt):
            host.invoke("interrupts_main", {}, timeout=60)
        assert InterruptsMain.received.is_set()
    finally:
        InterruptsMain.received.set()
        InterruptsMain.stopped.wait(10)  # no SIGINT is sent after this
        InterruptsMain.release.set()
        signal.signal(signal.SIGINT, previous)


# -- the playground over real HTTP ---------------------------------------------------------------


class ExitingProvider:
    """A provider whose completion raises ``SystemExit``: the loop itself raises."""

    trust_zone = TrustZone.LOCAL

    def complete(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> Completion:
        raise SystemExit(3)


def _script(name: str) -> list[Any]:
    return [{"content": f"calling {name}", "tool_calls": [{"name": name, "arguments": {}}]}, "ok"]


@pytest.fixture(scope="module", params=[None, 30.0], ids=["no-timeout", "timeout"])
def server(request: pytest.FixtureRequest) -> Iterator[PlaygroundServer]:
    providers: dict[str, Any] = {
        name: (lambda name=name: ScriptedProvider(_script(name))) for name in RAISED
    }
    providers["exits"] = ExitingProvider
    srv = PlaygroundServer(
        host_with_raisers(), providers=providers, tool_timeout=request.param
    ).start()
    yield srv
    srv.stop()


@pytest.fixture
def client(server: PlaygroundServer) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=server.origin, headers={"X-NR-LLM-Token": server.token}, timeout=60
    ) as c:
        yield c


def _run(client: httpx.Client, provider: str) -> list[dict[str, Any]]:
    # At full: the live steps are the stored record, and only full keeps the tool's result
    # (ADR 0028).
    body = {"prompt": "go", "provider": provider, "privacy": "full"}
    response = client.post("/api/runs", json=body)
    assert response.status_code == 200
    return [decode_json(line) for line in response.text.splitlines() if line]


def _still_serving(client: httpx.Client) -> None:
    response = client.get("/api/tools")
    assert response.status_code == 200
    assert {t["name"] for g in response.json()["groups"] for t in g["tools"]} == set(RAISED)


@pytest.mark.parametrize("name", sorted(RAISED))
def test_a_playground_run_whose_tool_raises_a_base_exception_closes_its_stream(
    client: httpx.Client, name: str
) -> None:
    """Tries each ``BaseException`` raised by a tool during an agent run: the tool step is an
    error result, the run goes on to its ``done`` event, the stream closes, and the server
    keeps serving."""
    events = _run(client, name)
    assert events[-1]["event"] == "done"
    (step,) = [e["step"] for e in events if e["event"] == "step" and e["step"]["kind"] == "tool"]
    assert step["tool_result"] == failed(name) and step["tool_is_error"] is True
    _still_serving(client)


@pytest.mark.parametrize("name", sorted(RAISED))
def test_the_tool_runner_answers_a_base_exception_with_an_error_result(
    client: httpx.Client, name: str
) -> None:
    """Tries each ``BaseException`` raised by a tool run from the tool runner."""
    response = client.post(f"/api/tools/{name}/invoke", json={"arguments": {}})
    assert response.status_code == 200
    body = response.json()
    assert body["content"] == failed(name) and body["is_error"] is True
    _still_serving(client)


def test_a_run_whose_loop_raises_a_base_exception_ends_with_an_error_event(
    client: httpx.Client,
) -> None:
    """Tries a run whose provider raises ``SystemExit`` (the loop catches ``Exception`` only):
    the stream closes with an ``error`` event in host words, and the server keeps serving."""
    events = _run(client, "exits")
    assert events[0]["event"] == "context"
    assert events[-1]["event"] == "error"
    assert events[-1]["reason"] == "the run failed: SystemExit"
    _still_serving(client)
