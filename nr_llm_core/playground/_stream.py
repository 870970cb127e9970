"""One run's events for one response: a trace listener on the worker side, an async iterator on
the event-loop side.

Each step becomes a ``step`` event (the record the audit store keeps of it at the run's privacy
level, and nothing more) the moment it is recorded, handed to the request's event loop through
a thread-safe call; the response reads them from an ``asyncio.Queue``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any, final

from nr_llm_core._logging import log_exception
from nr_llm_core.playground._store import persisted_record
from nr_llm_core.trace import RunStep, RunTrace

__all__ = ["Event", "Stream"]

logger = logging.getLogger("nr_llm.playground")

#: One event of a run's stream (a JSON object).
Event = dict[str, Any]


@final
class Stream:
    """One response's events: a trace listener on the worker side, an async iterator on the
    event-loop side."""

    def __init__(self, loop: asyncio.AbstractEventLoop, level: str, context: Event) -> None:
        self._loop = loop
        self._level = level
        self._context = context
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._index = 0
        self._context_sent = False
        self.trace: RunTrace | None = None

    def _emit(self, event: Event | None) -> None:
        # A closed event loop (the server stopped) raises RuntimeError; the run still completes.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._queue.put_nowait, event)

    def _send_context(self, run_id: str | None) -> None:
        if not self._context_sent:
            self._context_sent = True
            self._emit({"event": "context", "run_id": run_id, **self._context})

    def __call__(self, trace: RunTrace, step: RunStep) -> None:
        self.trace = trace
        self._send_context(trace.run_id)
        record = step.to_dict()
        # The live view shows the record the store keeps at the run's level, through the same
        # filter: a level that keeps no content shows none either (docs/privacy.md).
        try:
            shown = persisted_record(record, self._level)
        except Exception as exc:  # the filter does not raise; if it ever did, show the frame only
            log_exception(logger, "the privacy filter raised on a %s step", step.kind, exc=exc)
            shown = {
                "kind": record.get("kind"),
                "round": record.get("round"),
                "duration_ms": record.get("duration_ms"),
                "unavailable": "the privacy filter failed on this step",
            }
        self._emit({"event": "step", "run_id": trace.run_id, "index": self._index, "step": shown})
        self._index += 1

    def finish(self, event: Event) -> None:
        if event.get("run_id") is None and self.trace is not None:
            event = {**event, "run_id": self.trace.run_id}
        self._send_context(event.get("run_id"))
        self._emit(event)
        self._emit(None)

    async def events(self) -> AsyncIterator[Event]:
        while True:
            event = await self._queue.get()
            if event is None:
                return
            yield event
