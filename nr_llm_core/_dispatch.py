"""Calling one loaded tool, and settling what it did into host values before anything else.

The seam, :meth:`~nr_llm_core.host.ToolHost.invoke`, decides what to call; :func:`dispatch`
makes the call (in a timeout thread when there is a limit) and turns whatever came back or was
raised into host values: the bounded result, the failure for the trace, and the log lines.
Everything that reads a plugin's object happens inside the call: in the timeout thread when
there is one, so that the call's deadline bounds it too, and the caller receives host values
only. The tool's exception or return value is let go in that thread after the caller has its
answer, so a ``__del__`` that does not return holds no one but the abandoned thread.

Which ``BaseException`` propagates: an exact ``KeyboardInterrupt`` raised while the call runs
in the main thread is the user's Ctrl-C (Python delivers signals to the main thread only, and
its SIGINT handler raises exactly that class). Any other, in any thread, is the tool's: an
error result like any exception (ADR 0019).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

import attrs

from nr_llm_core._inert import (
    format_frames,
    is_users_interrupt,
    printable,
    qualified_name,
    traceback_of,
)
from nr_llm_core.bounding import bound_result
from nr_llm_core.errors import TimedOut
from nr_llm_core.failures import (
    FailureKind,
    InvalidArguments,
    ToolFailed,
    ToolFailure,
    error_result,
    exception_failure,
    invalid_arguments,
    own_field,
)
from nr_llm_core.hooks import ToolContext
from nr_llm_core.results import ToolResult

if TYPE_CHECKING:
    from nr_llm_core._registry import Tool

__all__ = ["call_tool", "dispatch"]

logger = logging.getLogger("nr_llm.host")

#: A log line: level, format, arguments.
_Line = tuple[int, str, tuple[object, ...]]


def call_tool(tool: Tool, arguments: dict[str, Any], context: ToolContext | None) -> object:
    """Call a tool's ``execute`` with the parameters it takes, in the order it takes them."""
    if not tool.takes_context:
        return tool.execute(arguments)
    if tool.argnames[0] == "arguments":
        return tool.execute(arguments, context)
    return tool.execute(context, arguments)


@attrs.frozen
class _Outcome:
    """What one call came to, in host values only, and its log lines (host text, bounded and
    escaped plugin names: run by :meth:`report` in the caller's thread)."""

    result: ToolResult
    failure: ToolFailure | None
    lines: tuple[_Line, ...] = ()

    def report(self) -> None:
        for level, message, args in self.lines:
            logger.log(level, message, *args)


def dispatch(
    tool: Tool,
    name: str,
    arguments: dict[str, Any],
    context: ToolContext | None,
    limit: float | None,
) -> tuple[ToolResult, ToolFailure | None]:
    """Call ``tool`` under ``limit`` seconds (``None``: no limit) and return the bounded
    result and, when the host wrote the result, its failure; log what happened. Never raises
    but for the user's Ctrl-C."""
    remote = tool.remote
    if limit is not None and remote is None:
        outcome = _in_thread(tool, name, arguments, context, limit)
    else:
        # In this thread: without a limit, or for a tool in another process (it stops what
        # it waits for at the limit). The common path: no closure, no box, no outcome object.
        try:
            if remote is not None and limit is not None:
                value = remote.call(arguments, context, limit)
            elif not tool.takes_context:
                value = tool.execute(arguments)
            else:
                value = call_tool(tool, arguments, context)
        except BaseException as exc:
            if is_users_interrupt(exc):
                raise
            outcome = _raised(name, limit, exc)
        else:
            try:
                result = bound_result(value)
            except Exception:  # pragma: no cover - bounding fails closed; _returned logs it
                result = None
            if result is not None:
                return result, None
            outcome = _returned(name, value)
    outcome.report()
    return outcome.result, outcome.failure


def _in_thread(
    tool: Tool,
    name: str,
    arguments: dict[str, Any],
    context: ToolContext | None,
    limit: float,
) -> _Outcome:
    """Run and settle the call in a daemon thread and stop waiting after ``limit`` seconds.

    A Python thread cannot be killed: a tool that never returns keeps its thread (and
    whatever it holds) until the process ends; its eventual result is discarded. Process
    isolation is the remedy for tools that must be stopped.
    """
    box: list[_Outcome] = []
    done = threading.Event()

    def deliver(outcome: _Outcome) -> None:
        box.append(outcome)
        done.set()

    def run() -> None:
        # The tool's value or exception is held here until the caller has its outcome: a
        # ``__del__`` that never returns holds this abandoned thread only.
        try:
            try:
                value = call_tool(tool, arguments, context)
            except BaseException as exc:  # no signal reaches this thread: it is the tool's
                deliver(_raised(name, limit, exc))
                return
            deliver(_returned(name, value))
        finally:
            done.set()

    worker = threading.Thread(target=run, name=f"nr-llm-tool-{tool.spec.name}", daemon=True)
    worker.start()
    if not done.wait(limit):
        return _timed_out(name, limit)
    if not box:  # pragma: no cover - run() delivers or the thread died of a host fault
        return _Outcome(*error_result(FailureKind.FAILED, name))
    return box[0]


def _timed_out(name: str, limit: float | None) -> _Outcome:
    line: _Line = (logging.ERROR, "tool %r did not return in time (limit %s s)", (name, limit))
    return _Outcome(*error_result(FailureKind.TIMED_OUT, name), lines=(line,))


def _raised(name: str, limit: float | None, exc: BaseException) -> _Outcome:
    """The outcome of a call that raised ``exc``; no code of ``exc`` runs."""
    try:
        if issubclass(type(exc), TimedOut):  # an isolated tool's worker was stopped at the limit
            return _timed_out(name, limit)
        if type(exc) is InvalidArguments:  # @tool could not structure the arguments
            return _Outcome(
                *invalid_arguments(
                    name,
                    own_field(exc, "problems"),
                    exception_type=own_field(exc, "exception_type"),
                    message=own_field(exc, "message"),
                )
            )
        failure = exception_failure(FailureKind.FAILED, exc)
        head: _Line
        if type(exc) is ToolFailed:  # read in the worker; its frames there are not ours
            head = (logging.ERROR, "tool %r raised in its worker: %s", (name, _shown(failure)))
        else:
            head = (
                logging.ERROR,
                "tool %r raised: %s\nTraceback (most recent call last):\n%s",
                (name, _shown(failure), format_frames(traceback_of(exc))),
            )
    except Exception:  # pragma: no cover - the readers do not raise; the call still fails
        return _Outcome(*error_result(FailureKind.FAILED, name), lines=(_unreadable(name),))
    lines: list[_Line] = [head]
    if failure.message is not None:
        # The message is tool bytes (a secret, megabytes): only at DEBUG, bounded.
        lines.append((logging.DEBUG, "tool %r exception message: %s", (name, failure.message)))
    return _Outcome(*error_result(FailureKind.FAILED, name, failure), lines=tuple(lines))


def _shown(failure: ToolFailure) -> str:
    return printable(failure.exception_type or "?")


def _unreadable(name: str) -> _Line:  # pragma: no cover
    return (logging.ERROR, "tool %r failed, and what it raised could not be read", (name,))


def _returned(name: str, value: object) -> _Outcome:
    """The outcome of a call that returned ``value``: the bounded result, or the
    invalid-result error; no code of ``value`` runs."""
    line: _Line
    try:
        result = bound_result(value)
        if result is not None:
            return _Outcome(result, None)
        shown = printable(qualified_name(type(value)))
        line = (logging.ERROR, "tool %r returned %s, not a valid ToolResult", (name, shown))
    except Exception as exc:  # pragma: no cover - bounding fails closed on its own
        line = (
            logging.ERROR,
            "tool %r returned a value the host could not bound: %s\n%s",
            (name, printable(qualified_name(type(exc))), format_frames(traceback_of(exc))),
        )
    return _Outcome(*error_result(FailureKind.INVALID_RESULT, name), lines=(line,))
