"""Calling one loaded tool: the optional timeout, logging a failure.

The seam itself, :meth:`~nr_llm_core.host.ToolHost.invoke`, decides what to call and bounds
what comes back; these helpers make the call.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from nr_llm_core._logging import log_exception
from nr_llm_core._registry import Tool, plain_message, short
from nr_llm_core.errors import TimedOut
from nr_llm_core.hooks import ToolContext

__all__ = ["call_tool", "call_with_timeout", "log_failure"]

logger = logging.getLogger("nr_llm.host")


def call_tool(tool: Tool, arguments: dict[str, Any], context: ToolContext | None) -> object:
    if not tool.takes_context:
        return tool.execute(arguments)
    if tool.argnames[0] == "arguments":
        return tool.execute(arguments, context)
    return tool.execute(context, arguments)


def call_with_timeout(
    tool: Tool, arguments: dict[str, Any], context: ToolContext | None, limit: float
) -> object:
    """Run the call in a daemon thread and stop waiting after ``limit`` seconds.

    A Python thread cannot be killed: a tool that never returns keeps its thread (and whatever
    it holds) until the process ends; its eventual result is discarded. Process isolation is
    the remedy for tools that must be stopped.
    """
    if tool.remote is not None:  # a worker process can be killed: no thread needed
        return tool.remote.call(arguments, context, limit)
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, call_tool(tool, arguments, context)))
        except BaseException as exc:
            outcome.append((False, exc))

    worker = threading.Thread(target=run, name=f"nr-llm-tool-{tool.spec.name}", daemon=True)
    worker.start()
    worker.join(limit)
    if not outcome:
        raise TimedOut
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


def log_failure(name: str, exc: BaseException) -> None:
    """Log the exception type and the stack. The exception's message is tool bytes (it may
    hold a secret or be megabytes long): it is logged only at DEBUG, bounded."""
    log_exception(logger, "tool %r raised", name, exc=exc)
    if logger.isEnabledFor(logging.DEBUG) and plain_message(exc):
        logger.debug("tool %r exception message: %s", name, short(exc.args[0], 500))
