"""Hostile exceptions: ``invoke()`` returns an error result, logs without running plugin code,
and never hangs, whatever a tool raises and however the call runs.

Every hostile exception here (see ``_hostile.py``) has code behind what a host would read: its
``__str__``/``__repr__``, a ``__getattribute__``, properties for ``__traceback__``, ``args``,
``__notes__``, ``__dict__``, a metaclass with properties or a ``__getattribute__`` for the class
names, names that are megabyte ``str`` subclasses, a class dict key that collides with
``__module__``. Each is raised in-process, in the timeout thread, from ``@tool``'s structuring
(an attrs validator) and from an isolated tool's worker. The tests assert the error result, the
trace's bounded type name, that the log has the type and the frames, and that no probe ran;
the "hang" variants make a probe that runs wait forever, so a host that ran one fails the hang
guard instead of passing by luck.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from nr_llm_core import ToolHost, ToolResult, ToolSpec, hookimpl, tool
from nr_llm_core.arguments import _noted, structuring_problems
from nr_llm_core.failures import FailureKind, ToolFailure, read_exception
from nr_llm_core.isolation import IsolationPolicy

from ..loading.distributions import add_distribution
from ._hostile import (
    ARMED,
    EXCEPTIONS,
    PROBES,
    RELEASE,
    context_cycle,
    hostile_instance_dict,
    long_chain,
    long_traceback,
    raising_from,
    returns_within,
)

FAILED = 'Error: tool "raiser" failed.'
#: The longest log message any of these failures may produce (type name and 48 frames).
MAX_LOG_CHARS = 20_000


@pytest.fixture(autouse=True)
def release_hangs() -> Iterator[None]:
    PROBES.clear()
    RELEASE.clear()
    ARMED.clear()
    yield
    ARMED.clear()
    RELEASE.set()  # a probe that did run (a failing test) stops waiting


#: The exception the tools below raise: held here, not on a plugin, so that registering the
#: tool never looks at it.
RAISED: list[BaseException] = []


class Raiser:
    """Raises the held exception (made before the call, so it outlives it)."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("raiser", "Raises what the test gives it.")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        raise RAISED[0]


def invoke_raising(exc: BaseException, timeout: float | None) -> tuple[ToolResult, Any]:
    RAISED[:] = [exc]
    host = ToolHost()
    host.register(Raiser())
    try:
        return returns_within(lambda: host.invoke_traced("raiser", {}, timeout=timeout))
    finally:
        RAISED.clear()


def assert_logged_safely(caplog: pytest.LogCaptureFixture) -> None:
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors, "the failure was not logged"
    for record in caplog.records:
        assert len(record.getMessage()) <= MAX_LOG_CHARS
    assert "Traceback (most recent call last):" in errors[0].getMessage()


# -- raised in-process and in the timeout thread ----------------------------------------------


@pytest.mark.parametrize("behaviour", ["raise", "hang"])
@pytest.mark.parametrize("timeout", [None, 60.0], ids=["in-process", "timeout-thread"])
@pytest.mark.parametrize("case", sorted(EXCEPTIONS))
def test_a_hostile_exception_is_a_failed_result_and_none_of_its_code_runs(
    case: str, timeout: float | None, behaviour: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Tries every hostile exception class raised by ``execute``, run inline and in the timeout
    thread: the host must read the type name and frames without running any of its code."""
    exc = EXCEPTIONS[case](behaviour)
    with caplog.at_level(logging.DEBUG, logger="nr_llm"):
        result, failure = invoke_raising(exc, timeout)
    assert result.content == FAILED and result.is_error
    assert PROBES == []
    assert failure.kind is FailureKind.FAILED
    assert type(failure.exception_type) is str and 0 < len(failure.exception_type) <= 200
    assert_logged_safely(caplog)


@pytest.mark.parametrize("timeout", [None, 60.0], ids=["in-process", "timeout-thread"])
def test_an_exception_whose_instance_dict_is_hostile_is_read_without_it(
    timeout: float | None, caplog: pytest.LogCaptureFixture
) -> None:
    """Tries an exception whose ``__dict__`` is a dict subclass with probing methods and keys
    that collide with ``__notes__``, and whose message is a ``str`` subclass."""
    with caplog.at_level(logging.DEBUG, logger="nr_llm"):
        result, failure = invoke_raising(hostile_instance_dict("hang"), timeout)
    assert result.content == FAILED
    assert PROBES == []
    assert failure == ToolFailure(kind=FailureKind.FAILED, exception_type="ValueError")
    assert_logged_safely(caplog)


@pytest.mark.parametrize("timeout", [None, 60.0], ids=["in-process", "timeout-thread"])
@pytest.mark.parametrize("make", [context_cycle, long_chain], ids=["cycle", "100000-long"])
def test_a_cause_and_context_chain_that_is_a_cycle_or_very_long_is_not_walked(
    make: Any, timeout: float | None, caplog: pytest.LogCaptureFixture
) -> None:
    """Tries ``__cause__``/``__context__`` chains that are a cycle and 100,000 links long."""
    with caplog.at_level(logging.DEBUG, logger="nr_llm"):
        result, failure = invoke_raising(make(), timeout)
    assert result.content == FAILED
    assert failure.exception_type == "RuntimeError"
    assert_logged_safely(caplog)


def test_a_50000_frame_traceback_is_logged_bounded(caplog: pytest.LogCaptureFixture) -> None:
    """Tries an exception carrying a traceback of 50,000 frames: the log keeps the most
    recent ones and says how many it left out."""
    with caplog.at_level(logging.INFO, logger="nr_llm"):
        result, _ = invoke_raising(long_traceback(RuntimeError("deep")), None)
    assert result.content == FAILED
    (error,) = caplog.records
    message = error.getMessage()
    assert len(message) <= MAX_LOG_CHARS
    assert "frames not shown" in message


def test_a_frame_whose_source_is_a_fifo_is_logged_without_reading_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Tries a traceback frame whose code claims a FIFO as its file and whose name is a
    hostile ``str`` subclass: a traceback printer that opened the file would block forever."""
    from ._hostile import HangingStr

    fifo = tmp_path / "source.py"
    os.mkfifo(fifo)
    thrower = raising_from(str(fifo), HangingStr("thrower"))

    class Thrower(Raiser):
        @hookimpl
        def execute(self, arguments: dict[str, Any]) -> ToolResult:
            thrower(RuntimeError("x"))
            raise AssertionError("unreachable")

    host = ToolHost()
    host.register(Thrower())
    try:
        with caplog.at_level(logging.INFO, logger="nr_llm"):
            result = returns_within(lambda: host.invoke("raiser", {}), 30)
    finally:
        # A reader blocked in open() on the FIFO (a failing host) is let go.
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert result.content == FAILED
    assert PROBES == []
    assert str(fifo) in caplog.text and "thrower" in caplog.text


#: Lets a ``__del__`` that waits go. Set once and never cleared: a host that keeps the exception
#: in a reference cycle lets the collector run its ``__del__`` later, in any test.
DEL_RELEASE = threading.Event()


class Deleted(Exception):
    """An exception whose ``__del__`` raises (when ``hang`` is false) or waits until the test
    is over."""

    hang = False

    def __del__(self) -> None:
        if type(self).hang:
            DEL_RELEASE.wait()
            return
        raise RuntimeError("raised from __del__")


class Stuck(Deleted):
    hang = True


class RaisesFresh(Raiser):
    """Raises a fresh exception of a class, so that the host holds the only reference."""

    def __init__(self, cls: type[BaseException]) -> None:
        self.cls = cls

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        raise self.cls()


def _tool_threads_end() -> None:
    """Wait until the timeout threads of this file's tool have ended (bounded)."""
    for thread in threading.enumerate():
        if thread.name == "nr-llm-tool-raiser":
            thread.join(30)


def test_an_exception_whose_del_raises_is_a_failed_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Tries an exception whose ``__del__`` raises when the host lets it go: Python reports
    that as unraisable; ``invoke()`` still returns its error result, and the host lets the
    exception go during the call (no reference cycle keeps it for the collector)."""
    unraisable: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    host = ToolHost()
    host.register(RaisesFresh(Deleted))
    assert returns_within(lambda: host.invoke("raiser", {})).content == FAILED
    assert len(unraisable) == 1
    assert returns_within(lambda: host.invoke("raiser", {}, timeout=60)).content == FAILED
    _tool_threads_end()
    assert len(unraisable) == 2


def test_an_exception_whose_del_never_returns_does_not_hold_a_timed_call() -> None:
    """Tries an exception whose ``__del__`` does not return, raised in the timeout thread: the
    exception is let go in that thread, after the caller has its answer."""
    host = ToolHost()
    host.register(RaisesFresh(Stuck))
    try:
        result = returns_within(lambda: host.invoke("raiser", {}, timeout=60))
    finally:
        DEL_RELEASE.set()
        _tool_threads_end()
    assert result.content == FAILED


# -- raised by an argument type's code, through @tool's structuring ----------------------------

HELD: list[BaseException] = []


def _raise_held(instance: object, attribute: object, value: object) -> None:
    raise HELD[0]


@attrs.define
class Item:
    """An argument type whose validator raises the held exception."""

    x: int = attrs.field(validator=_raise_held)


@tool
def shaped(item: Item) -> str:
    """Takes an item."""
    return "structured"


@pytest.mark.parametrize("behaviour", ["raise", "hang"])
@pytest.mark.parametrize("timeout", [None, 60.0], ids=["in-process", "timeout-thread"])
@pytest.mark.parametrize("case", [*sorted(EXCEPTIONS), "instance-dict"])
def test_a_hostile_exception_from_structuring_is_an_invalid_arguments_result(
    case: str, timeout: float | None, behaviour: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Tries every hostile exception class raised by an attrs validator while ``@tool``
    structures the arguments."""
    make = EXCEPTIONS.get(case, hostile_instance_dict)
    exc = make(behaviour)
    HELD[:] = [exc]
    host = ToolHost()
    host.register(shaped)
    with caplog.at_level(logging.DEBUG, logger="nr_llm"):
        result, failure = returns_within(
            lambda: host.invoke_traced("shaped", {"item": {"x": 1}}, timeout=timeout)
        )
    assert result.content.startswith('Error: invalid arguments for tool "shaped": invalid value')
    assert PROBES == []
    assert failure.kind is FailureKind.INVALID_ARGUMENTS
    assert type(failure.exception_type) is str and 0 < len(failure.exception_type) <= 200


def test_noted_reads_and_writes_notes_without_plugin_code() -> None:
    """Tries ``@tool``'s own item-path note on an exception whose ``__notes__`` is a probing
    property and whose instance dict is a probing dict subclass."""
    for exc in (EXCEPTIONS["properties"]("hang"), hostile_instance_dict("hang")):
        noted = returns_within(lambda exc=exc: _noted(exc, 3, int))  # type: ignore[misc]
        problems, foreign = returns_within(lambda noted=noted: structuring_problems(noted))
        assert problems == (("invalid value", (3,)),)
        assert foreign is exc
    assert PROBES == []


def test_an_exponential_group_of_structuring_errors_is_walked_bounded() -> None:
    """Tries a validator raising cattrs' own group exception nested 60 deep, each level
    holding the next twice (2**60 leaves if walked as a tree)."""
    from cattrs.errors import ClassValidationError

    group: BaseException = ValueError("leaf")
    for _ in range(60):
        group = ClassValidationError("x", [group, group], Item)  # type: ignore[list-item]
    problems, _ = returns_within(lambda: structuring_problems(group))
    assert 0 < len(problems) <= 10_000


# -- read_exception on its own -------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(EXCEPTIONS))
def test_read_exception_runs_no_plugin_code(case: str) -> None:
    """Tries ``read_exception`` (the reader the host, ``@tool`` and the worker share) on every
    hostile class."""
    exc = EXCEPTIONS[case]("hang")
    name, message = returns_within(lambda: read_exception(exc))
    assert PROBES == []
    assert type(name) is str and 0 < len(name) <= 200
    assert message in ("message", None)


# -- raised by an isolated tool: the worker reads it --------------------------------------------

ISOLATED_MODULE = """
import threading
from nr_llm_core import ToolSpec, hookimpl

HANG = threading.Event()

def hang(*args, **kwargs):
    HANG.wait()

class GetAttribute(Exception):
    __getattribute__ = hang
    __str__ = __repr__ = hang

class Meta(type):
    __getattribute__ = hang
    __hash__ = hang
    __name__ = property(hang)

class MetaNamed(Exception, metaclass=Meta):
    pass

class Properties(Exception):
    __traceback__ = args = __notes__ = __dict__ = property(hang)

def tool(name, cls):
    class Tool:
        @hookimpl
        def tool_spec(self):
            return ToolSpec(name, "Raises a hostile exception in its worker.")

        @hookimpl
        def execute(self, arguments):
            raise cls("message")
    return Tool

RaisesGetAttribute = tool("raises_getattribute", GetAttribute)
RaisesMetaNamed = tool("raises_metanamed", MetaNamed)
RaisesProperties = tool("raises_properties", Properties)
"""

ISOLATED = {
    "raises_getattribute": "adv_hostile_exc.GetAttribute",
    "raises_metanamed": "adv_hostile_exc.MetaNamed",
    "raises_properties": "adv_hostile_exc.Properties",
}


def test_a_hostile_exception_in_an_isolated_tool_is_read_by_its_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tries hostile exceptions raised by isolated tools: the worker reads them without their
    code (a worker that ran any would hang until the policy's timeout, and the call would be
    ``timed out``, not ``failed`` with the type name)."""
    site = tmp_path / "site"
    add_distribution(
        site,
        "adv-hostile-exc",
        {
            "raises_getattribute": "adv_hostile_exc:RaisesGetAttribute",
            "raises_metanamed": "adv_hostile_exc:RaisesMetaNamed",
            "raises_properties": "adv_hostile_exc:RaisesProperties",
        },
        {"adv_hostile_exc": ISOLATED_MODULE},
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("NR_LLM_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("NR_LLM_PLUGINS", ",".join(ISOLATED))
    policy = IsolationPolicy(distributions=["adv-hostile-exc"], timeout=20.0)
    with ToolHost.discover(isolate=policy) as host:
        assert sorted(host.names()) == sorted(ISOLATED), host.load_errors
        for name, type_name in ISOLATED.items():
            result, failure = returns_within(lambda name=name: host.invoke_traced(name, {}))
            assert result.content == f'Error: tool "{name}" failed.'
            assert failure == ToolFailure(
                kind=FailureKind.FAILED, exception_type=type_name, message="message"
            )


def test_the_hang_guard_fails_on_a_hang() -> None:
    """The guard these tests rely on does fail on a call that never returns."""
    stop = threading.Event()
    try:
        with pytest.raises(AssertionError, match="hangs"):
            returns_within(stop.wait, 0.1)
    finally:
        stop.set()
