"""Agent runs for the playground: each in a worker thread, its steps streamed as events.

A run's :class:`~nr_llm_core.trace.RunTrace` listener turns each step into a ``step`` event (the
record the audit store keeps of it at the run's privacy level, and nothing more) the moment it
is recorded and hands it to the request's event loop through a thread-safe call; the
response reads them from an ``asyncio.Queue``. The loop runs on in its thread whatever the
client does: a client that goes away stops reading, not the run (and the audit store, a trace
listener of its own, records every step). Events, in order: one ``context``, one ``step`` per
step, then exactly one of ``done``, ``error`` or ``awaiting_approval``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final, final

import attrs

from nr_llm_core._inert import known_type_phrase
from nr_llm_core._logging import log_exception
from nr_llm_core.approval import SuspendedRunState, approver_view, decisions_for
from nr_llm_core.audit import AuditStoreError, claimant
from nr_llm_core.errors import AlreadyClaimedError, ApprovalError, ConfigurationError
from nr_llm_core.host import ToolHost
from nr_llm_core.loop import TerminationReason, ToolLoop, ToolLoopResult
from nr_llm_core.playground._store import Store, level_for, persisted_record
from nr_llm_core.privacy import approver_level
from nr_llm_core.providers.base import Provider
from nr_llm_core.trace import RunStep, RunTrace

__all__ = ["ProviderFactory", "ResumeRefused", "RunManager", "RunRequest"]

logger = logging.getLogger("nr_llm.playground")

#: Makes a fresh provider for one run.
ProviderFactory = Callable[[], Provider]
_KEEP_WAITING: Final = 500
Event = dict[str, Any]


def _setup_failure(exc: Exception) -> str:
    """The reason a run's provider could not be built: a setting's error is host-worded (it
    names the setting, never a URL or a key); anything else is logged, not shown."""
    if isinstance(exc, ConfigurationError):
        return f"the provider could not be set up: {str(exc)[:300]}"
    log_exception(logger, "a provider factory raised", exc=exc)
    return "the provider could not be set up"


@final
@attrs.frozen(kw_only=True)
class RunRequest:
    """A validated agent-run request."""

    prompt: str
    provider: str
    allowed: tuple[str, ...] | None
    max_rounds: int
    #: The level the request names; ``None`` asks for nothing (the store's level applies).
    privacy: str | None


@final
class ResumeRefused(Exception):
    """A resume request that cannot be honoured; ``status`` is the HTTP status to answer."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@attrs.frozen(kw_only=True)
class _Setup:
    """What a run was started with, kept to resume it the same way."""

    provider: Provider
    provider_name: str
    max_rounds: int
    privacy: str


@attrs.frozen(kw_only=True)
class _Waiting:
    setup: _Setup
    state: SuspendedRunState


class _Stream:
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


@final
class RunManager:
    """Starts and resumes runs in a bounded pool of worker threads, and keeps the suspended
    ones (with their provider, so a scripted run continues where it paused)."""

    def __init__(
        self,
        host: ToolHost,
        providers: Mapping[str, ProviderFactory],
        *,
        store: Store | None,
        tool_timeout: float | None,
        workers: int,
    ) -> None:
        self.host = host
        self.providers = dict(providers)
        self.store = store
        self.tool_timeout = tool_timeout
        self.executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="nr-llm-run")
        self._lock = threading.Lock()
        self._waiting: OrderedDict[str, _Waiting] = OrderedDict()

    def shutdown(self) -> None:
        """Stop taking work; running threads finish on their own."""
        self.executor.shutdown(wait=False, cancel_futures=True)

    def _loop(
        self, provider: Provider, max_rounds: int, privacy: str | None, stream: _Stream
    ) -> ToolLoop:
        return ToolLoop(
            provider,
            self.host,
            max_iterations=max_rounds,
            privacy=privacy,
            persister=None if self.store is None else self.store.persister,
            trace_listeners=[stream],
            tool_timeout=self.tool_timeout,
        )

    def start(self, request: RunRequest) -> AsyncIterator[Event]:
        """Begin a run; its events, in order (the run itself goes on in a worker). A provider
        that cannot be built ends the events at once with an ``error`` event."""
        # The level shown is the level stored: the stricter of the request and the store.
        level = level_for(self.store, request.privacy)
        context: Event = {
            "provider": request.provider,
            "privacy": level,
            "max_rounds": request.max_rounds,
            "resumed": False,
        }
        stream = _Stream(asyncio.get_running_loop(), level, context)
        try:
            provider = self.providers[request.provider]()
        except Exception as exc:  # a setting that went bad after start-up (checked there)
            stream.finish({"event": "error", "run_id": None, "reason": _setup_failure(exc)})
            return stream.events()
        loop = self._loop(provider, request.max_rounds, request.privacy, stream)
        context["tools"] = [s.name for s in loop.offer(request.allowed)]
        setup = _Setup(
            provider=provider,
            provider_name=request.provider,
            max_rounds=request.max_rounds,
            privacy=level,
        )
        self._submit(stream, setup, lambda: loop.run(request.prompt, allowed=request.allowed))
        return stream.events()

    def take_waiting(self, run_id: str, digest: object, approved: object) -> _Waiting:
        """Take a suspended run for resuming, checking the digest and the decision first
        (a refused request leaves the run waiting).

        With a store, the store decides who resumes: a run another process (the CLI, another
        playground) already resumed is refused with 409, naming who and when; the atomic
        claim itself is taken by :meth:`ToolLoop.resume` before any tool runs. Blocking
        (it reads the store): call it from a worker thread."""
        with self._lock:
            waiting = self._waiting.get(run_id)
        if waiting is None:
            raise self._not_waiting(run_id)
        if type(digest) is not str or not hmac.compare_digest(
            digest.encode("utf-8", "replace"), waiting.state.digest.encode("ascii")
        ):
            raise ResumeRefused(409, "stale approval: the digest does not match")
        try:
            decisions_for(waiting.state, approved)  # type: ignore[arg-type]
        except (ApprovalError, TypeError) as exc:
            raise ResumeRefused(400, str(exc)[:300]) from None
        with self._lock:
            if self._waiting.get(run_id) is not waiting:  # another request took it meanwhile
                raise self._not_waiting(run_id)
            del self._waiting[run_id]
        if self.store is not None:
            store = self.store.persister
            record = store.get_run(run_id)
            if record is None or record["status"] != "suspended":
                raise ResumeRefused(409, str(store.resume_refusal(run_id))[:300])
        return waiting

    def _not_waiting(self, run_id: str) -> ResumeRefused:
        """404 for a run this playground does not hold; 409 naming who resumed (or
        discarded) it when the store recorded a claim."""
        if self.store is not None:
            refusal = self.store.persister.resume_refusal(run_id)
            if isinstance(refusal, AlreadyClaimedError):
                return ResumeRefused(409, str(refusal)[:300])
        return ResumeRefused(404, "this run is not waiting for approval")

    def resume(self, waiting: _Waiting, approved: Any) -> AsyncIterator[Event]:
        """Continue a claimed run with the decision; its events, in order."""
        setup = waiting.setup
        context: Event = {
            "provider": setup.provider_name,
            "privacy": setup.privacy,
            "max_rounds": setup.max_rounds,
            "resumed": True,
        }
        stream = _Stream(asyncio.get_running_loop(), setup.privacy, context)
        loop = self._loop(setup.provider, setup.max_rounds, setup.privacy, stream)
        context["tools"] = [s.name for s in loop.offer(waiting.state.allowed)]
        state = waiting.state
        who = claimant("playground")
        self._submit(
            stream,
            setup,
            lambda: loop.resume(state, approved=approved, digest=state.digest, claimant=who),
        )
        return stream.events()

    def _submit(self, stream: _Stream, setup: _Setup, work: Callable[[], ToolLoopResult]) -> None:
        def job() -> None:
            try:
                result = work()
            except (ApprovalError, AuditStoreError) as exc:  # host-worded: who resumed it …
                stream.finish({"event": "error", "run_id": None, "reason": str(exc)[:300]})
            except BaseException as exc:
                # Anything at all, SystemExit and KeyboardInterrupt included: this is a worker
                # thread (no signal reaches it), and a run that ends without a terminal event
                # leaves its client waiting forever. The reason names the kind of exception in
                # host words (a builtin or nr-llm type), never a class name some plugin chose.
                log_exception(logger, "a playground run raised", exc=exc)
                reason = f"the run failed: {known_type_phrase(type(exc))}"
                stream.finish({"event": "error", "run_id": None, "reason": reason})
            else:
                stream.finish(self._terminal(result, setup))

        self.executor.submit(job)

    def _recorded_level(self, run_id: str, requested: str) -> str | None:
        # The level the store recorded the run at (it may be stricter than the one asked for);
        # None, which shows no arguments, when the store cannot be read.
        try:
            record = None if self.store is None else self.store.persister.get_run(run_id)
        except AuditStoreError:
            return None
        if record is None:
            return requested
        level = approver_level(record["privacy_level"])  # NR_LLM_PRIVACY_LEVEL when stricter
        return level if type(level) is str else None

    def _terminal(self, result: ToolLoopResult, setup: _Setup) -> Event:
        base: Event = {"run_id": result.run_id, "iterations": result.iterations}
        state = result.suspended
        if result.termination_reason is TerminationReason.AWAITING_APPROVAL and state is not None:
            with self._lock:
                self._waiting[result.run_id] = _Waiting(setup=setup, state=state)
                while len(self._waiting) > _KEEP_WAITING:
                    self._waiting.popitem(last=False)
            # The approver sees the whole arguments, except for a run recorded at none.
            view = approver_view(state, self._recorded_level(result.run_id, setup.privacy))
            return {
                "event": "awaiting_approval",
                **base,
                "digest": state.digest,
                "content": result.content,
                "privacy": view["privacy_level"],
                "arguments_shown": view["arguments_shown"],
                "suspended_with": view["provider"],
                "pending": view["calls"],
            }
        if result.termination_reason is TerminationReason.FAILED:
            return {"event": "error", **base, "reason": result.error or "the run failed"}
        return {
            "event": "done",
            **base,
            "termination_reason": result.termination_reason.value,
            "content": result.content,
            "truncated": result.truncated,
            "usage": result.usage.to_dict(),
        }
