"""The tool loop: completion → tool calls → ``ToolHost.invoke()`` → tool results → completion.

Only a result's ``content`` re-enters the conversation, through
:meth:`ChatMessage.tool_result`; artifacts go to the :class:`RunTrace` alone. What is offered
to the provider is the host's enabled tools, narrowed by the caller's allow-list and by the
provider's trust zone (a tool whose data class exceeds the zone's ceiling is not offered), and
every call is checked against that offer again when it runs. What is sent is the zone's view
of the history (:func:`~nr_llm_core.exposure.zone_view`): tool output above the zone's ceiling,
and what a model wrote after it, is replaced by host sentences; the history itself stays whole.
Provider faults end the run as ``failed`` with a host-worded reason; they never raise to the
caller. A persister's failures are logged and the run's result stands, but for one: a
:class:`~nr_llm_core.audit.TakenAwayError` from a holding recorder (a worker's take whose run
the queue handed to another worker) passes through, so that the worker stops there and writes
nothing more.
"""

from __future__ import annotations

import logging
import operator
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Final, final

import attrs

from nr_llm_core._audit_records import TakenAwayError
from nr_llm_core._logging import log_exception
from nr_llm_core.approval import STALE_DIGEST, SuspendedRunState, decisions_for, digest_problem
from nr_llm_core.encoding import EncodeError, json_copy
from nr_llm_core.errors import ApprovalError, ProviderError
from nr_llm_core.exposure import ZoneConversation
from nr_llm_core.failures import (
    FailureKind,
    Phrase,
    ToolFailure,
    error_result,
    host_phrase,
    invalid_arguments,
)
from nr_llm_core.hooks import ToolContext
from nr_llm_core.host import ToolHost
from nr_llm_core.messages import ChatMessage, ToolCall
from nr_llm_core.offers import offer_decisions, offered_specs
from nr_llm_core.privacy import PrivacyLevel, kept_model_name, resolve_privacy_level
from nr_llm_core.provider_record import check_same_provider, provider_change, provider_record
from nr_llm_core.providers.base import STOP_REASONS, Completion, Provider, Usage, zone_of
from nr_llm_core.results import DataClass, ToolResult, ToolSpec
from nr_llm_core.run_result import (
    ClaimingRecorder,
    HoldingRecorder,
    RunRecorder,
    TerminationReason,
    ToolLoopResult,
)
from nr_llm_core.telemetry import RunTelemetry, RunWatch, telemetry_from_environment
from nr_llm_core.trace import RunStep, RunTrace, StepListener, ToolInvocation

__all__ = [
    "DEFAULT_MAX_ITERATIONS",
    "MAX_ITERATIONS_CAP",
    "UNANSWERED_NOTE",
    "RunRecorder",
    "TerminationReason",
    "ToolLoop",
    "ToolLoopResult",
]

logger = logging.getLogger("nr_llm.loop")

DEFAULT_MAX_ITERATIONS: Final = 5
#: The note on a model turn whose tool calls were not answered because no tool was offered
#: (the run then ends ``completed`` with that turn's text, maybe none).
UNANSWERED_NOTE: Final = "tool calls not answered: no tools were offered"
#: Any requested ``max_iterations`` is clamped to this.
MAX_ITERATIONS_CAP: Final = 20
_MAX_REASON_CHARS: Final = 300


@attrs.define(kw_only=True)
class _Run:
    run_id: str
    trace: RunTrace
    messages: list[ChatMessage]
    allowed: tuple[str, ...] | None
    iterations: int = 0
    tool_rounds: int = 0
    usage: Usage = attrs.field(factory=Usage)
    invocations: list[ToolInvocation] = attrs.field(factory=list)
    # Messages from this index on were written while this loop's provider drove the run (see
    # exposure.zone_view); those before came from the caller or a suspended state.
    written_here: int = 0
    # The zone's view of the history, read on as the history grows.
    zone: ZoneConversation | None = None
    # The messages of the last request and their records for the request step: a round builds
    # only the records of the messages it adds.
    sent: tuple[ChatMessage, ...] = ()
    records: list[dict[str, Any]] = attrs.field(factory=list)
    # Whether ending the run is still this loop's: no longer once it is suspended or settled
    # here, so that an interrupt after that changes nothing (see ToolLoop._interrupted).
    open_here: bool = True


def _bounded(text: str) -> str:
    return text if len(text) <= _MAX_REASON_CHARS else text[: _MAX_REASON_CHARS - 1] + "…"


def _clamp_iterations(value: int) -> int:
    if type(value) is not int:
        raise TypeError("max_iterations must be an int")
    return max(1, min(value, MAX_ITERATIONS_CAP))


def _allow_list(allowed: Collection[str] | None) -> tuple[str, ...] | None:
    if allowed is None:
        return None
    if isinstance(allowed, str):  # "a,b" would be read as the characters a, ",", b
        raise TypeError("allowed must be a collection of tool names, not a str")
    names = tuple(sorted(set(allowed)))
    for name in names:
        if type(name) is not str:
            raise TypeError("allowed must hold tool names (str)")
    return names


@final
class ToolLoop:
    """Runs a conversation against ``provider`` with the tools of ``host``.

    ``max_iterations`` (default 5, clamped to 1..20) bounds the rounds of tool calls; when the
    model still asks for tools after that, one final completion is requested without tools and
    the result is ``truncated``. ``token_budget`` (input + output tokens, summed over the run)
    stops a run that asks for more tools after spending it. ``tool_timeout`` is the per-call
    limit passed to the host. ``persister`` (a :class:`RunRecorder`) receives every step and
    suspended state; ``privacy`` is the level this loop asks the persister to record its runs
    at: the persister applies the stricter of it and its own
    (:func:`~nr_llm_core.privacy.effective_level`). ``None`` (the default) asks for nothing
    and never widens a store; an invalid value asks for METADATA.
    ``trace_listeners`` are called with every step, unfiltered. ``telemetry`` (a
    :class:`~nr_llm_core.telemetry.RunTelemetry`, such as ``nr_llm_core.otel.OtelTelemetry``)
    watches every run; ``None`` (the default) means what ``NR_LLM_OTEL`` says, off when unset.
    """

    def __init__(
        self,
        provider: Provider,
        host: ToolHost,
        *,
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        privacy: PrivacyLevel | str | None = None,
        persister: RunRecorder | None = None,
        trace_listeners: Iterable[StepListener] = (),
        token_budget: int | None = None,
        tool_timeout: float | None = None,
        telemetry: RunTelemetry | None = None,
    ) -> None:
        self.provider = provider
        self.host = host
        self.max_iterations = _clamp_iterations(max_iterations)
        #: The level this loop asks for, ``None`` when none was named.
        self.privacy = None if privacy is None else resolve_privacy_level(privacy)
        self.persister = persister
        self.trace_listeners = tuple(trace_listeners)
        if token_budget is not None and (type(token_budget) is not int or token_budget < 1):
            raise ValueError("token_budget must be a positive int or None")
        self.token_budget = token_budget
        self.tool_timeout = tool_timeout
        self.telemetry = telemetry if telemetry is not None else telemetry_from_environment()

    # -- what is offered ----------------------------------------------------------------------

    def offer(self, allowed: Collection[str] | None = None) -> tuple[ToolSpec, ...]:
        """The specs a run with ``allowed`` offers: enabled, allowed, and within the
        provider's trust-zone ceiling (undeclared data class = secret-adjacent). Why each
        other tool is not offered: :func:`~nr_llm_core.offers.offer_decisions`."""
        return offered_specs(self.host, self.provider, allowed)

    # -- running ------------------------------------------------------------------------------

    def run(
        self, messages: Sequence[ChatMessage] | str, *, allowed: Collection[str] | None = None
    ) -> ToolLoopResult:
        """Run the conversation to an answer, a failure, or a pause for approval.

        ``messages`` is a sequence of :class:`ChatMessage` (or one prompt string, sent as a
        user message); ``allowed`` narrows the tools offered (``None``: every enabled tool).
        """
        if isinstance(messages, str):
            messages = [ChatMessage.user(messages)]
        msgs = list(messages)
        if not msgs:
            raise ValueError("a run needs at least one message")
        for m in msgs:
            if type(m) is not ChatMessage:
                raise TypeError(f"messages must be ChatMessage values, not {type(m).__name__}")
        allow = _allow_list(allowed)
        watch = self._watch(None)
        run_id = self._begin(watch)
        run = _Run(run_id=run_id, trace=self._trace(run_id, watch), messages=msgs, allowed=allow)
        return self._watched(run, watch, lambda: self._drive(run))

    def resume(
        self,
        state: SuspendedRunState | str,
        *,
        approved: bool | Mapping[str, bool],
        digest: str | None = None,
        claimant: str | None = None,
        allow_provider_change: bool = False,
    ) -> ToolLoopResult:
        """Continue a suspended run with a human decision.

        ``state`` is the :class:`SuspendedRunState` (or a run id, loaded from the persister;
        with a persister, a state passed in must also be the one the persister holds).
        ``approved`` is one bool for every call that needs approval, or a mapping call id →
        bool (a call left out is refused). ``digest`` is the digest the approver was shown;
        when given it must equal the state's. With a persister that can claim
        (:class:`~nr_llm_core.run_result.ClaimingRecorder`, as ``AgentRunPersister``), the
        run is claimed in the store before any tool runs, recording ``claimant`` (default:
        ``api`` on this host and process): of two resumers, one goes on and the other gets
        :class:`~nr_llm_core.errors.AlreadyClaimedError` naming the first. The gate is
        applied again (a denied call whose tool is no longer offered is answered as not
        permitted); approved calls run,
        refused ones are answered with a refusal text; then the loop continues. Raises
        :class:`ApprovalError` for a stale or mismatched digest, an altered state, an unknown
        call id, an approved call whose tool this loop does not offer (before anything is
        claimed: the run still waits), or a run that is not (or no longer) waiting.

        The run goes on with this loop's provider. When that is not the provider that wrote
        the pending turn (another adapter kind or model, as the state records it), the resume
        raises :class:`~nr_llm_core.errors.ProviderChangedError` before anything is claimed,
        unless ``allow_provider_change`` is true; an allowed change is recorded in the
        approval step (``provider_changed``, and ``provider_change``: the provider the run was
        suspended with and the one it goes on with, ADR 0036). A state saved before states
        recorded their provider is not checked.
        """
        if isinstance(state, str):
            state = self._load(state)
        elif type(state) is not SuspendedRunState:
            raise TypeError("state must be a SuspendedRunState or a run id")
        elif self.persister is not None:
            # With a store, its copy is the one that is waiting: an approval cannot be replayed
            # on a run that was already resumed, or applied to a turn that has changed.
            stored = self._stored(state.run_id)
            if stored.get("digest") != state.digest:
                raise ApprovalError("stale approval: the run's pending turn has changed")
        state.verify()
        problem = None if digest is None else digest_problem(digest, state.digest)
        if problem is not None:
            raise ApprovalError(
                problem
                if problem == STALE_DIGEST
                else f"{problem}; nothing ran and the run still waits"
            )
        decisions = decisions_for(state, approved)
        check_same_provider(state.provider, self.provider, allow_change=allow_provider_change)
        # Which provider the run was suspended with and which goes on, when they differ (the
        # change was allowed, or it would have raised): recorded with the decision.
        changed = provider_change(state.provider, self.provider)
        self._refuse_unrunnable(state, decisions)
        self._claim(state, claimant)
        watch = self._watch(state.run_id)
        run = _Run(
            run_id=state.run_id,
            trace=self._trace(state.run_id, watch),
            messages=list(state.messages),
            allowed=state.allowed,
            iterations=state.iterations,
            tool_rounds=state.tool_rounds,
            usage=state.usage,
        )
        return self._watched(run, watch, lambda: self._resumed(run, state, decisions, changed))

    def _refuse_unrunnable(self, state: SuspendedRunState, decisions: Mapping[str, bool]) -> None:
        """:class:`ApprovalError` when a call approved in ``decisions`` names a tool this loop
        does not offer (not loaded, disabled, not allowed, or withheld from its provider's
        zone): the approval would run nothing. Raised before the run is claimed, so it still
        waits for a resumer that offers the tool, or for a denial."""
        decided = {d.name: d for d in offer_decisions(self.host, self.provider, state.allowed)}
        approved = {c.name for c in state.pending if decisions.get(c.id) is True}
        missing = sorted(n for n in approved if not (n in decided and decided[n].offered))
        if missing:
            # The names were offered when the run was suspended (only such calls need
            # approval): host names, shown through the CLI's escaping all the same. Each
            # with why it is not offered here and the fix, as `nr-llm run` says it.
            whys = []
            for name in missing[:5]:
                why = decided.get(name)
                said = "no tool of this name is loaded" if why is None else why.reason
                if why is not None and why.fix:
                    said += f" (fix: {why.fix})"
                whys.append(f'"{name[:80]}" is not offered here: {said}')
            raise ApprovalError(
                f"an approved call's tool {'; '.join(whys)}; nothing ran and the run still "
                "waits: resume it where the tool is offered, or deny"
            )

    def _resumed(
        self,
        run: _Run,
        state: SuspendedRunState,
        decisions: Mapping[str, bool],
        change: Mapping[str, Any] | None,
    ) -> ToolLoopResult:
        """Record the decision (and which provider goes on, when it changed), answer the
        pending calls, and drive the run on."""
        run.trace.record(
            RunStep.approval(
                round=state.iterations,
                decisions=decisions,
                digest=state.digest,
                provider_change=change,
            )
        )
        offered = frozenset(s.name for s in self.offer(run.allowed))
        refused: set[str] = set()
        for call in state.pending:
            # Fail closed: a call needs an explicit yes if its tool requires approval now,
            # even if it did not when the run was suspended.
            needs = call.id in state.needs_approval or (
                call.name in offered and self.host.spec(call.name).requires_approval
            )
            if needs and decisions.get(call.id) is not True:
                refused.add(call.id)
        self._answer(run, state.pending, offered, refused)
        run.tool_rounds += 1
        return self._drive(run)

    def _drive(self, run: _Run) -> ToolLoopResult:
        # Messages from here on are written while this loop's provider drives the run (see
        # exposure.zone_view); those before came from the caller or a suspended state.
        run.written_here = len(run.messages)
        run.zone = None
        offer = self.offer(run.allowed)
        offered = frozenset(s.name for s in offer)
        while True:
            at_cap = bool(offer) and run.tool_rounds >= self.max_iterations
            tools = () if at_cap else offer
            self._check_held(run)
            completion = self._complete(run, tools)
            if isinstance(completion, str):
                return self._finish(run, TerminationReason.FAILED, "", error=completion)
            text = completion.content
            if completion.stop_reason == "length":
                return self._cut(run, completion, answer_calls=bool(tools), at_cap=at_cap)
            if not tools or not completion.tool_calls:
                # With nothing offered, tool calls the model makes anyway are not answered.
                run.messages.append(ChatMessage.assistant(text))
                reason = TerminationReason.MAX_ITERATIONS if at_cap else TerminationReason.COMPLETED
                return self._finish(run, reason, text, truncated=at_cap)
            calls = completion.tool_calls
            run.messages.append(ChatMessage.assistant_tool_calls(calls, text=text or None))
            if self.token_budget is not None and run.usage.total >= self.token_budget:
                for call in calls:
                    run.messages.append(
                        ChatMessage.tool_result(call.id, "Not run: the token budget is spent.")
                    )
                return self._finish(run, TerminationReason.BUDGET_EXHAUSTED, text)
            needing = tuple(
                c.id
                for c in calls
                if c.name in offered and self.host.spec(c.name).requires_approval
            )
            if needing:
                return self._suspend(run, calls, needing, text)
            self._answer(run, calls, offered, set())
            run.tool_rounds += 1

    def _complete(self, run: _Run, tools: Sequence[ToolSpec]) -> Completion | str:
        """The next completion, or the host-worded reason the provider failed."""
        round_no = run.iterations + 1
        # Every request is built from the zone's view of the history, never the history itself.
        zone = zone_of(self.provider)
        if run.zone is None or run.zone.zone is not zone:
            run.zone = ZoneConversation(zone, self._data_class_of, written_here=run.written_here)
        view = run.zone.view(run.messages)
        run.trace.record(
            RunStep.request(
                round=round_no, messages=_records(run, view.messages), notes=view.notes()
            )
        )
        started = time.perf_counter()
        reason: str | None = None
        completion: Any = None
        try:
            completion = self.provider.complete(view.messages, tuple(tools))
        except ProviderError as exc:
            # Our adapters write these messages in host words (no key, URL or body).
            reason = _bounded(f"provider error: {exc}")
        except Exception as exc:
            log_exception(logger, "provider %s raised", type(self.provider).__name__, exc=exc)
            reason = f"provider error: the provider raised {type(exc).__name__}"
        else:
            if not _valid_completion(completion):
                reason = "provider error: the provider returned an invalid completion"
        run.iterations += 1
        elapsed = (time.perf_counter() - started) * 1000
        if reason is not None:
            run.trace.record(RunStep.error(round=round_no, reason=reason, duration_ms=elapsed))
            return reason
        assert isinstance(completion, Completion)  # narrowed by _valid_completion
        run.usage = run.usage + completion.usage
        notes = []
        if completion.dropped_tool_calls:
            notes.append(f"dropped {completion.dropped_tool_calls} tool call(s) without a name")
        if completion.tool_calls and not tools:
            notes.append(UNANSWERED_NOTE)
        run.trace.record(
            RunStep.llm(
                round=round_no,
                duration_ms=elapsed,
                content=completion.content,
                requested_tool_calls=[c.to_dict() for c in completion.tool_calls],
                usage=completion.usage.to_dict(),
                notes=notes,
                stop_reason=completion.stop_reason,
            )
        )
        return completion

    def _data_class_of(self, name: str) -> DataClass | None:
        """An installed tool's data class (undeclared: the strictest); ``None`` if none is."""
        try:
            return self.host.spec(name).effective_data_class
        except KeyError:
            return None

    def _answer(
        self, run: _Run, calls: Sequence[ToolCall], offered: frozenset[str], refused: set[str]
    ) -> None:
        """Answer every call of a turn: run it through the host, or say why it did not run."""
        round_no = run.iterations
        for call in calls:
            self._check_held(run)
            started = time.perf_counter()
            result: ToolResult
            failure: ToolFailure | None
            if call.name not in offered:
                # The host words it: unknown tool, or not permitted.
                result, failure = self.host.invoke_traced(call.name, {}, allowed=offered)
            elif call.id in refused:
                result, failure = error_result(FailureKind.NOT_APPROVED, call.name)
            elif call.arguments_error is not None:
                # The provider adapter's words, read through the host's vocabulary.
                result, failure = invalid_arguments(
                    call.name, ((host_phrase(call.arguments_error), ()),)
                )
            elif (arguments := _own_copy(call.arguments)) is None:
                result, failure = invalid_arguments(call.name, ((Phrase.NOT_JSON.value, ()),))
            else:
                result, failure = self.host.invoke_traced(
                    call.name,
                    arguments,
                    allowed=offered,
                    context=ToolContext(run_id=run.run_id, call_id=call.id, round=round_no),
                    timeout=self.tool_timeout,
                )
            run.messages.append(ChatMessage.tool_result(call.id, result.content))
            invocation = ToolInvocation(
                name=call.name,
                arguments=call.arguments,
                result=result,
                call_id=call.id,
                failure=failure,
            )
            run.invocations.append(invocation)
            elapsed = (time.perf_counter() - started) * 1000
            run.trace.record(
                RunStep.tool(round=round_no, duration_ms=elapsed, invocation=invocation)
            )

    def _suspend(
        self, run: _Run, calls: tuple[ToolCall, ...], needing: tuple[str, ...], text: str
    ) -> ToolLoopResult:
        state = SuspendedRunState.create(
            run_id=run.run_id,
            messages=tuple(run.messages),
            pending=calls,
            needs_approval=needing,
            iterations=run.iterations,
            tool_rounds=run.tool_rounds,
            usage=run.usage,
            allowed=run.allowed,
            provider=provider_record(self.provider),
        )
        if self.persister is not None:
            try:
                # Before the call: an interrupt landing after its commit must not cancel the
                # waiting run (one landing before it leaves the run running, as before).
                run.open_here = False
                self.persister.suspend(run.run_id, state.to_dict())
            except Exception as exc:
                self._raise_if_taken_away(exc)
                run.open_here = True
                log_exception(logger, "the persister could not store run %s", run.run_id, exc=exc)
        return self._result(run, TerminationReason.AWAITING_APPROVAL, text, suspended=state)

    def _cut(
        self, run: _Run, completion: Completion, *, answer_calls: bool, at_cap: bool
    ) -> ToolLoopResult:
        """End a run whose answer was cut at the token limit. Its tool calls are not run: the
        cut may have fallen inside their arguments, or before calls the model meant to make.
        Each is answered, so the conversation stays one a provider accepts."""
        text = completion.content
        if answer_calls and completion.tool_calls:
            run.messages.append(
                ChatMessage.assistant_tool_calls(completion.tool_calls, text=text or None)
            )
            for call in completion.tool_calls:
                run.messages.append(
                    ChatMessage.tool_result(
                        call.id, "Not run: the answer was cut at the token limit."
                    )
                )
        else:
            run.messages.append(ChatMessage.assistant(text))
        return self._finish(run, TerminationReason.MAX_TOKENS, text, truncated=at_cap)

    def _finish(
        self,
        run: _Run,
        reason: TerminationReason,
        content: str,
        *,
        truncated: bool = False,
        error: str | None = None,
    ) -> ToolLoopResult:
        if self.persister is not None:
            status = "failed" if reason is TerminationReason.FAILED else "completed"
            run.open_here = False  # as for a suspension, before the call
            try:
                self.persister.settle(
                    run.run_id,
                    status,
                    termination_reason=reason.value,
                    iterations=run.iterations,
                    truncated=truncated,
                    usage=run.usage.to_dict(),
                )
            except Exception as exc:
                self._raise_if_taken_away(exc)
                run.open_here = True
                log_exception(logger, "the persister could not settle run %s", run.run_id, exc=exc)
        return self._result(run, reason, content, truncated=truncated, error=error)

    def _result(
        self,
        run: _Run,
        reason: TerminationReason,
        content: str,
        *,
        truncated: bool = False,
        error: str | None = None,
        suspended: SuspendedRunState | None = None,
    ) -> ToolLoopResult:
        return ToolLoopResult(
            content=content,
            invocations=tuple(run.invocations),
            iterations=run.iterations,
            truncated=truncated,
            termination_reason=reason,
            suspended=suspended,
            run_id=run.run_id,
            usage=run.usage,
            error=error,
            messages=tuple(run.messages),
            trace=run.trace,
        )

    # -- the persister ------------------------------------------------------------------------

    def _begin(self, watch: RunWatch | None = None) -> str:
        if self.persister is None:
            return uuid.uuid4().hex
        meta: dict[str, Any] = {"provider": type(self.provider).__name__}
        try:
            model = getattr(self.provider, "model", None)
        except Exception:  # a property that raises names no model
            model = None
        if type(model) is str:  # the model name the operator configured (host metadata)
            # A key pasted as the model never reaches a store, even a third party's.
            meta["model"] = kept_model_name(model[:200])
        if self.privacy is not None:  # a level nobody named asks for nothing
            meta["privacy"] = self.privacy.value
        if watch is not None:  # its trace context, so `runs show` can name the trace
            try:
                meta.update({str(k): str(v) for k, v in watch.meta().items()})
            except Exception as exc:
                log_exception(logger, "the run's telemetry gave no metadata", exc=exc)
        try:
            return self.persister.begin(None, meta=meta)
        except Exception as exc:
            log_exception(logger, "the persister could not open a run; unrecorded", exc=exc)
            return uuid.uuid4().hex

    def _trace(self, run_id: str, watch: RunWatch | None = None) -> RunTrace:
        listeners = list(self.trace_listeners)
        persister = self.persister
        if persister is not None:

            def record(trace: RunTrace, step: RunStep) -> None:
                persister.record_step(trace.run_id, step)

            listeners.append(record)
        if watch is not None:
            listeners.append(watch)
        return RunTrace(run_id, listeners)

    # -- telemetry ----------------------------------------------------------------------------

    def _watch(self, resumed: str | None) -> RunWatch | None:
        """The telemetry's watch over this run, or ``None``: telemetry never stops a run."""
        if self.telemetry is None:
            return None
        try:
            return self.telemetry.watch(
                provider=self.provider,
                tools=self.host.names(),
                persister=self.persister,
                privacy=self.privacy,
                resumed=resumed,
            )
        except Exception as exc:
            log_exception(logger, "telemetry could not watch a run", exc=exc)
            return None

    def _watched(
        self, run: _Run, watch: RunWatch | None, body: Callable[[], ToolLoopResult]
    ) -> ToolLoopResult:
        """``body()``, with ``watch`` told how it ended, however it ended; a run the host
        interrupts is settled first (:meth:`_interrupted`)."""
        try:
            result = body()
        except (KeyboardInterrupt, SystemExit):
            self._interrupted(run)
            if watch is not None:
                self._unwatch(run, watch, None)
            raise
        except BaseException:
            if watch is not None:
                self._unwatch(run, watch, None)
            raise
        if watch is not None:
            self._unwatch(run, watch, result)
        return result

    def _interrupted(self, run: _Run) -> None:
        # Ctrl-C or a stop signal (the CLI turns SIGTERM and SIGHUP into KeyboardInterrupt):
        # the run ends here, `cancelled` for the reason `interrupted`. Left `running`, no
        # command could end it (approve, deny and discard take only a waiting run). Other
        # exceptions leave it as it is: a worker's run is handed over by its queue.
        if self.persister is None or not run.open_here:
            return
        try:
            self.persister.settle(
                run.run_id,
                "cancelled",
                termination_reason="interrupted",
                iterations=run.iterations,
                truncated=False,
                usage=run.usage.to_dict(),
            )
        except Exception as exc:
            log_exception(logger, "the persister could not settle run %s", run.run_id, exc=exc)

    def _unwatch(self, run: _Run, watch: RunWatch, result: ToolLoopResult | None) -> None:
        try:
            watch.end(run.run_id, result)
        except Exception as exc:
            log_exception(logger, "telemetry could not end run %s", run.run_id, exc=exc)

    def _load(self, run_id: str) -> SuspendedRunState:
        if self.persister is None:
            raise ApprovalError("resuming by run id needs a persister")
        state = SuspendedRunState.from_dict(self._stored(run_id))
        if state.run_id != run_id:
            raise ApprovalError("the stored state belongs to another run")
        return state

    def _stored(self, run_id: str) -> dict[str, Any]:
        """The state the persister holds for the waiting run ``run_id``, as a plain dict;
        :class:`ApprovalError` in host words when it holds none, or something that is not a
        mapping (a store of someone else's: nothing of it is quoted, nothing is claimed)."""
        if self.persister is None:
            raise ApprovalError("resuming by run id needs a persister")
        data = self.persister.load_suspended(run_id)
        if data is None:
            raise self._not_waiting(run_id)
        if not isinstance(data, Mapping):
            raise ApprovalError(
                f"the store's saved state of run {run_id[:80]!r} is not a mapping; nothing "
                "ran and the run still waits: discard it"
            )
        return dict(data)

    def _raise_if_taken_away(self, exc: Exception) -> None:
        """Let ``exc`` through when it says the run is another worker's now (ADR 0041): only a
        holding recorder's (a worker's take) can; any other persister's is a failure like the
        rest, logged while the run's result stands (an application's persister passing on an
        inner store's error must not make ``run()`` raise after its tools ran)."""
        if isinstance(exc, TakenAwayError) and isinstance(self.persister, HoldingRecorder):
            raise exc

    def _check_held(self, run: _Run) -> None:
        """Stop here, by the persister's exception, when the run was taken from it (a
        worker the queue gave up on while it was only paused, ADR 0039): at each step
        boundary, before a tool call or a completion, so no call runs in two places."""
        if isinstance(self.persister, HoldingRecorder):
            self.persister.check_held(run.run_id)

    def _not_waiting(self, run_id: str) -> Exception:
        """Why the persister holds no waiting state for ``run_id``: who took it, when it can
        tell."""
        if isinstance(self.persister, ClaimingRecorder):
            return self.persister.resume_refusal(run_id)
        return ApprovalError(f"run {run_id[:80]!r} is not waiting for approval")

    def _claim(self, state: SuspendedRunState, claimant: str | None) -> None:
        """Take the run from the store before any tool runs (the compare-and-set on its
        status and digest): two resumers cannot both get past this."""
        if not isinstance(self.persister, ClaimingRecorder):
            return
        claimed = self.persister.claim_suspended(
            state.run_id, digest=state.digest, claimant=claimant
        )
        if isinstance(claimed, Mapping) and claimed.get("digest") == state.digest:
            return  # the digest covers every field
        # A store that does not check what its claim hands over (nr-llm's do, ADR 0036) has
        # committed the claim of another turn, or of nothing: no tool runs, and the run is
        # put back to wait on what the store held (else the turn checked here), where it can
        # be decided again or discarded, never left claimed with its state gone (ADR 0038).
        back = dict(claimed) if isinstance(claimed, Mapping) else state.to_dict()
        try:
            self.persister.suspend(state.run_id, back)
            outcome = "the run waits again"
        except Exception:
            outcome = "the store did not take the run back: discard it"
        raise ApprovalError(
            f"stale approval: the run's pending turn has changed; nothing ran and {outcome}"
        )


def _records(run: _Run, messages: tuple[ChatMessage, ...]) -> list[dict[str, Any]]:
    """The record of each message sent, built once per message: the zone's view of a run
    only grows, so the last request's messages are where this one's start."""
    sent, records = run.sent, run.records
    if len(sent) > len(messages) or not all(map(operator.is_, sent, messages)):
        sent, records = (), []
    records.extend(m.to_dict() for m in messages[len(sent) :])
    run.sent, run.records = messages, records
    return records


def _valid_completion(value: object) -> bool:
    return (
        type(value) is Completion
        and type(value.content) is str
        and type(value.tool_calls) is tuple
        and all(type(c) is ToolCall for c in value.tool_calls)
        and type(value.usage) is Usage
        and type(value.stop_reason) is str
        and value.stop_reason in STOP_REASONS
    )


def _own_copy(arguments: dict[str, Any]) -> dict[str, Any] | None:
    """A deep copy of the model's arguments for the tool to have: a tool that changes its
    arguments then changes neither the conversation sent back to the model nor the record of
    what the model asked. ``None`` if they are not plain JSON (a script's set, NaN …)."""
    try:
        copied = json_copy(arguments)
    except EncodeError:
        return None
    return copied if type(copied) is dict else None
