"""Agent runs for the playground: each in a worker thread, its steps streamed as events (see
:mod:`~nr_llm_core.playground._stream`), and the runs it paused, decided as the store allows.

The loop runs on in its thread whatever the client does: a client that goes away stops
reading, not the run (and the audit store, a trace listener of its own, records every step).
Events, in order: one ``context``, one ``step`` per step, then exactly one of ``done``,
``error`` or ``awaiting_approval``. Whether a paused run still waits is the store's to say
(ADR 0037): a decision the loop or the store refuses leaves the run held and shown, and an
``error`` event after a decision carries the run as the store has it then (``approval``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final, final

import attrs

from nr_llm_core._inert import known_type_phrase
from nr_llm_core._logging import log_exception
from nr_llm_core.approval import STALE_DIGEST, SuspendedRunState, decisions_for, digest_problem
from nr_llm_core.audit import AuditStoreError, UnknownRunError, claimant
from nr_llm_core.errors import AlreadyClaimedError, ApprovalError, ConfigurationError
from nr_llm_core.host import ToolHost
from nr_llm_core.loop import TerminationReason, ToolLoop, ToolLoopResult
from nr_llm_core.playground._store import Store, level_for
from nr_llm_core.playground._stream import Event, Stream
from nr_llm_core.playground._waiting import gone_view, held_view, refusal_words, store_view
from nr_llm_core.privacy import approver_level
from nr_llm_core.providers.base import Provider

__all__ = ["ProviderFactory", "ResumeRefused", "RunManager", "RunRequest"]

logger = logging.getLogger("nr_llm.playground")

#: Makes a fresh provider for one run.
ProviderFactory = Callable[[], Provider]
_KEEP_WAITING: Final = 500
_BUSY: Final = "a decision on this run is being applied"
#: The keys of an approval view an ``awaiting_approval`` event carries.
_PAUSE_KEYS: Final = ("digest", "privacy", "arguments_shown", "suspended_with", "pending")


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
    """A resume or discard request that cannot be honoured: ``status`` is the HTTP status to
    answer, ``reason`` host words, ``approval`` what the store says of the run now (see
    :mod:`~nr_llm_core.playground._waiting`; ``None`` when it could not be read)."""

    def __init__(self, status: int, reason: str, approval: Event | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.approval = approval


@attrs.frozen(kw_only=True)
class _Setup:
    """What a run was started with, kept to resume it the same way."""

    provider: Provider
    provider_name: str
    max_rounds: int
    privacy: str


@attrs.define(kw_only=True)
class _Held:
    """A run this playground paused, with the provider to go on with. Not the truth about
    whether it waits (the store is): ``busy`` while a decision on it is being applied."""

    setup: _Setup
    state: SuspendedRunState
    busy: bool = False


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
        self._held: OrderedDict[str, _Held] = OrderedDict()
        # Without a store, memory is the only record of a discard: a replay is told so.
        self._discarded: OrderedDict[str, str] = OrderedDict()

    def shutdown(self) -> None:
        """Stop taking work; running threads finish on their own."""
        self.executor.shutdown(wait=False, cancel_futures=True)

    def _loop(
        self, provider: Provider, max_rounds: int, privacy: str | None, stream: Stream
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
        stream = Stream(asyncio.get_running_loop(), level, context)
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

    # -- what waits, and deciding it -------------------------------------------------------------

    def approval(self, run_id: str, record: Mapping[str, Any] | None = None) -> Event:
        """What is known now of ``run_id`` waiting for approval: with a store, what the store
        says (its pending calls as stored, why a decision would be refused here, or that it is
        gone and who ended it), reconciled with the runs this playground holds (one the store
        says is gone, or waits on another turn, is let go); without a store, this memory.
        ``record`` is the run's record when the caller has just read it (it is not read
        again). Blocking (it reads the store); raises :class:`AuditStoreError` when the store
        cannot be read."""
        with self._lock:
            held = self._held.get(run_id)
        if self.store is None:
            if held is None:
                reason = self._discarded.get(run_id, "this run is not waiting for approval")
                return gone_view(run_id, reason)
            return self._memory_view(held)
        state = None if held is None else held.state
        view = store_view(self.store.persister, run_id, state, record)
        if held is not None:
            with self._lock:
                # Let go only on what the store says (gone, or another turn), never on a
                # state it could not read this time (no digest): that may pass.
                turn = view.get("digest")
                stale = not view["waiting"] or (type(turn) is str and turn != held.state.digest)
                if held.busy:
                    # A decision is being applied here: a run still waiting is not decidable
                    # meanwhile; one the store says is gone (that decision claimed it) is
                    # shown gone, and let go by the decision itself when it ends.
                    if view["waiting"]:
                        view = {**view, "decidable": False, "problem": view["problem"] or _BUSY}
                elif stale and self._held.get(run_id) is held:
                    del self._held[run_id]
        return view

    def _memory_view(self, held: _Held) -> Event:
        problem = _BUSY if held.busy else None
        return held_view(held.state, held.setup.privacy, decidable=True, problem=problem)

    def _approval_or_none(self, run_id: str) -> Event | None:
        try:
            return self.approval(run_id)
        except AuditStoreError as exc:
            log_exception(logger, "the audit store could not be read", exc=exc)
            return None

    def take_waiting(self, run_id: str, digest: object, approved: object) -> _Held:
        """Take a run this playground paused for a decision, after checking the digest, the
        decision and what the store says: a refused request (:class:`ResumeRefused`, with the
        run as the store has it now) leaves the run waiting, and shown.

        The store decides who resumes: the atomic claim itself is taken by
        :meth:`ToolLoop.resume` before any tool runs. Blocking (it reads the store): call it
        from a worker thread."""
        with self._lock:
            held = self._held.get(run_id)
        if held is None:
            raise self._refused(run_id, None)
        problem = digest_problem(digest, held.state.digest)
        if problem is not None:  # a changed turn is a conflict; a bad digest, a bad request
            raise self._refused(run_id, problem, status=409 if problem == STALE_DIGEST else 400)
        try:
            decisions_for(held.state, approved)  # type: ignore[arg-type]
        except (ApprovalError, TypeError) as exc:
            raise self._refused(run_id, str(exc)[:300], status=400) from None
        view = self._approval_or_none(run_id)
        if view is None:
            raise ResumeRefused(503, "the audit store could not be read; the run still waits")
        if not view["waiting"] or not view["decidable"]:
            raise self._refused(run_id, None, approval=view)
        with self._lock:
            if self._held.get(run_id) is not held or held.busy:  # another request took it
                raise ResumeRefused(409, _BUSY, self._memory_view(held))
            held.busy = True
        return held

    def _refused(
        self,
        run_id: str,
        reason: str | None,
        *,
        status: int | None = None,
        approval: Event | None = None,
    ) -> ResumeRefused:
        """A refusal carrying the run as the store has it now; ``reason`` ``None``: the
        store's own (why the run is gone, or why it cannot be decided here). 404 for a run
        the store (or, without one, this playground) does not know."""
        view = self._approval_or_none(run_id) if approval is None else approval
        if view is None:
            if reason is not None and status is not None:  # the request's own fault, said so
                return ResumeRefused(status, reason)
            return ResumeRefused(503, "the audit store could not be read; the run still waits")
        words = reason or (view["problem"] if view["waiting"] else view["reason"]) or _BUSY
        unknown = not view["waiting"] and view.get("status") is None
        return ResumeRefused(status or (404 if unknown else 409), words, view)

    def resume(self, held: _Held, approved: Any) -> AsyncIterator[Event]:
        """Continue a run taken by :meth:`take_waiting` with the decision; its events, in
        order."""
        setup = held.setup
        context: Event = {
            "provider": setup.provider_name,
            "privacy": setup.privacy,
            "max_rounds": setup.max_rounds,
            "resumed": True,
        }
        stream = Stream(asyncio.get_running_loop(), setup.privacy, context)
        loop = self._loop(setup.provider, setup.max_rounds, setup.privacy, stream)
        context["tools"] = [s.name for s in loop.offer(held.state.allowed)]
        state = held.state
        who = claimant("playground")
        self._submit(
            stream,
            setup,
            lambda: loop.resume(state, approved=approved, digest=state.digest, claimant=who),
            resuming=held,
        )
        return stream.events()

    def discard(self, run_id: str) -> Event:
        """End a waiting run through the store's discard (the one ``nr-llm runs discard``
        takes): settled ``cancelled``, reason ``discarded``, its state wiped; no tool runs.
        A run already discarded (by anyone) is answered ``discarded: false``, nothing
        changed; any other run that does not wait raises :class:`ResumeRefused` with the
        store's words. Blocking: call it from a worker thread."""
        if self.store is None:
            return self._discard_in_memory(run_id)
        try:
            self.store.persister.discard(run_id, claimant=claimant("playground"))
        except AlreadyClaimedError as exc:
            if not exc.discarded:
                raise self._refused(run_id, refusal_words(exc)) from None
            self._let_go(run_id)
            return _discard_answer(run_id, f"{refusal_words(exc)}; nothing changed", done=False)
        except UnknownRunError:
            raise ResumeRefused(404, f"no such run {run_id[:80]!r}", None) from None
        except ApprovalError as exc:
            raise self._refused(run_id, refusal_words(exc)) from None
        except AuditStoreError as exc:
            log_exception(logger, "the audit store refused a discard", exc=exc)
            # Its words are the database's: logged, not sent.
            raise ResumeRefused(503, "the audit store refused the discard") from None
        # A decision being applied here meanwhile is refused by the store's claim.
        self._let_go(run_id)
        return _discard_answer(run_id, f"run {run_id[:80]!r} was discarded", done=True)

    def _discard_in_memory(self, run_id: str) -> Event:
        with self._lock:
            held = self._held.get(run_id)
            if held is None:
                if run_id in self._discarded:
                    words = f"{self._discarded[run_id]}; nothing changed"
                    return _discard_answer(run_id, words, done=False)
                raise ResumeRefused(404, "this run is not waiting for approval")
            if held.busy:
                raise ResumeRefused(409, _BUSY, self._memory_view(held))
            del self._held[run_id]
            self._discarded[run_id] = f"run {run_id[:80]!r} was discarded by this playground"
            while len(self._discarded) > _KEEP_WAITING:
                self._discarded.popitem(last=False)
        return _discard_answer(run_id, f"run {run_id[:80]!r} was discarded", done=True)

    def _let_go(self, run_id: str) -> None:
        with self._lock:
            self._held.pop(run_id, None)

    def _hold(self, run_id: str, held: _Held) -> None:
        with self._lock:
            self._held[run_id] = held
            self._held.move_to_end(run_id)
            while len(self._held) > _KEEP_WAITING:  # the oldest stays in the store, discardable
                self._held.popitem(last=False)

    def _after(self, resuming: _Held | None, *, refused: bool) -> Event:
        """After a decision ended without a terminal result: the run as the store has it
        now (it may well still wait: the claim is taken after every check). ``refused``: the
        loop or the store refused it (before any tool ran); otherwise it raised part-way,
        and without a store, which would say the run was claimed, it is let go: an approved
        call that may have run is never offered again."""
        if resuming is None:
            return {}
        run_id = resuming.state.run_id
        with self._lock:
            resuming.busy = False
            if not refused and self.store is None and self._held.get(run_id) is resuming:
                del self._held[run_id]
        return {"run_id": run_id, "approval": self._approval_or_none(run_id)}

    def _submit(
        self,
        stream: Stream,
        setup: _Setup,
        work: Callable[[], ToolLoopResult],
        *,
        resuming: _Held | None = None,
    ) -> None:
        def job() -> None:
            try:
                result = work()
            except (ApprovalError, AuditStoreError) as exc:  # host-worded: who resumed it …
                after = self._after(resuming, refused=True)
                reason = refusal_words(exc)
                stream.finish({"event": "error", "run_id": None, "reason": reason, **after})
            except BaseException as exc:
                # Anything at all, SystemExit and KeyboardInterrupt included: this is a worker
                # thread (no signal reaches it), and a run that ends without a terminal event
                # leaves its client waiting forever. The reason names the kind of exception in
                # host words (a builtin or nr-llm type), never a class name some plugin chose.
                log_exception(logger, "a playground run raised", exc=exc)
                after = self._after(resuming, refused=False)
                reason = f"the run failed: {known_type_phrase(type(exc))}"
                stream.finish({"event": "error", "run_id": None, "reason": reason, **after})
            else:
                stream.finish(self._terminal(result, setup, resuming))

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

    def _terminal(self, result: ToolLoopResult, setup: _Setup, resuming: _Held | None) -> Event:
        base: Event = {"run_id": result.run_id, "iterations": result.iterations}
        state = result.suspended
        if result.termination_reason is TerminationReason.AWAITING_APPROVAL and state is not None:
            self._hold(result.run_id, _Held(setup=setup, state=state))
            # The approver sees the whole arguments, except for a run recorded at none.
            view = held_view(
                state, self._recorded_level(result.run_id, setup.privacy), decidable=True
            )
            return {
                "event": "awaiting_approval",
                **base,
                "content": result.content,
                **{k: view[k] for k in _PAUSE_KEYS},
            }
        if resuming is not None:
            self._let_go(result.run_id)
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


def _discard_answer(run_id: str, reason: str, *, done: bool) -> Event:
    """The answer to a discard: ``discarded`` whether this request ended the run."""
    return {"run_id": run_id, "discarded": done, "reason": reason[:300]}
