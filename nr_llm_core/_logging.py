"""Logging an exception without its message.

An exception raised around tool or model data can carry that data in its message (a
``KeyError`` naming an argument, a provider error quoting a response, a tool's own text). Logs
get the exception's type and the stack of frames, which are code, never the message: the same
rule everywhere, so that no log line above DEBUG holds tool or model bytes.
"""

from __future__ import annotations

import logging
import traceback

__all__ = ["log_exception"]


def log_exception(logger: logging.Logger, message: str, *args: object, exc: BaseException) -> None:
    """Log ``message % args`` at ERROR with ``exc``'s type and traceback frames only."""
    frames = "".join(traceback.format_tb(exc.__traceback__)).rstrip()
    logger.error(
        f"{message}: %s\nTraceback (most recent call last):\n%s",
        *args,
        type(exc).__qualname__,
        frames,
    )
