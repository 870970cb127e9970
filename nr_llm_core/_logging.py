"""Logging an exception without its message and without running its code.

An exception raised around tool or model data can carry that data in its message (a
``KeyError`` naming an argument, a provider error quoting a response, a tool's own text). Logs
get the exception's type and the stack of frames, which are code, never the message: the same
rule everywhere, so that no log line above DEBUG holds tool or model bytes.

The type and the frames are read as :mod:`nr_llm_core._inert` reads them: through the C-level
descriptors of ``type`` and ``BaseException``, never through the exception's own attributes, its
class's or its metaclass's (a tool's exception can put code behind ``__traceback__``,
``__qualname__`` or ``__module__``); names are bounded and escaped, and at most the most recent
48 frames are shown. The exception's ``__cause__`` and ``__context__`` chain is not followed.
"""

from __future__ import annotations

import logging

from nr_llm_core._inert import format_frames, printable, qualified_name, traceback_of

__all__ = ["log_exception"]


def log_exception(logger: logging.Logger, message: str, *args: object, exc: BaseException) -> None:
    """Log ``message % args`` at ERROR with ``exc``'s type and traceback frames only."""
    try:
        name = printable(qualified_name(type(exc)))
        frames = format_frames(traceback_of(exc))
    except Exception:  # pragma: no cover - the readers never raise; the log line still goes out
        name, frames = "(an exception whose type could not be read)", "  (no frames)"
    logger.error(
        f"{message}: %s\nTraceback (most recent call last):\n%s",
        *args,
        name,
        frames,
    )
