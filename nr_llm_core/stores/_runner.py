"""What a worker does with one run id: take the run from the shared store and drive it with
the tool loop, under the stricter of the run's trust zone and privacy level and its own.

The queue (:mod:`nr_llm_core.stores.queue`) hands over a run id and nothing else; everything
the run needs is in the store: its start state (``nr-llm run --queue``) or its suspended state
and the approver's decisions, each signed with the host secret. A run is taken under its row's
lock (:meth:`PostgresStore.take <nr_llm_core.stores.postgres.PostgresStore.take>`); when the
queue hands it again after its worker was lost, it starts over from that state:

- calls that need no approval may run again (at least once under a crash);
- approved calls run at most once: the worker records, committed, that it begins them, and a
  worker that takes the run after that answers them with :data:`LOST` instead of running
  them again (exactly once when no worker is lost).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, final

from nr_llm_core._audit_records import RunRecord, SuspendedStateError, TakenAwayError
from nr_llm_core._logging import log_exception
from nr_llm_core.approval import SuspendedRunState
from nr_llm_core.errors import ApprovalError
from nr_llm_core.failures import FailureKind, error_result
from nr_llm_core.host import ToolHost
from nr_llm_core.loop import ToolLoop
from nr_llm_core.messages import ChatMessage
from nr_llm_core.provider_record import provider_change, provider_record
from nr_llm_core.providers.base import Completion, Provider, TrustZone, zone_of
from nr_llm_core.results import ToolSpec
from nr_llm_core.stores._pg_states import Taken
from nr_llm_core.stores.postgres import PostgresStore
from nr_llm_core.trace import RunStep
from nr_llm_core.traceparent import TRACEPARENT

__all__ = ["LOST", "RunExecutor", "stricter_zone"]

logger = logging.getLogger("nr_llm.worker")

#: The answer to an approved call whose worker was lost after it began the approved calls.
LOST: Final = (
    "Not run again: the worker that was running this approved call stopped; it may or may "
    "not have run."
)
_RANK: Final = {TrustZone.LOCAL: 0, TrustZone.PRIVATE_HOSTED: 1, TrustZone.EXTERNAL: 2}


def stricter_zone(*zones: object) -> TrustZone:
    """The zone that may see least of those named (anything unknown counts as external)."""
    known = [zone_of(_Declared(z)) for z in zones]
    return max(known or [TrustZone.EXTERNAL], key=_RANK.__getitem__)


@final
class _Declared:
    # zone_of reads a declaration the way it reads a provider's: unknown means external.
    def __init__(self, zone: object) -> None:
        self.trust_zone = zone


@final
class _Zoned:
    """The worker's provider, declaring the zone the run may be shown in (never wider than
    the provider's own)."""

    def __init__(self, provider: Provider, zone: TrustZone) -> None:
        self._provider = provider
        self.trust_zone = zone

    @property
    def provider_kind(self) -> str:
        """The adapter this stands for, as a suspended state records it."""
        return provider_record(self._provider).kind

    def complete(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> Completion:
        return self._provider.complete(messages, tools)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._provider, name)


@final
class _TakenRun:
    """The store as the loop sees it while a worker drives a run it was handed: the run
    already exists (``begin`` names it) and the take was the claim, but for the approved
    calls: the loop's claim, which comes after every check a resume makes (ADR 0029's
    included), records that this worker begins them (:meth:`PostgresStore.mark_applying`).
    ``claimed`` says whether it did."""

    def __init__(self, store: PostgresStore, taken: Taken, worker: str) -> None:
        self._store = store
        self._taken = taken
        self._worker = worker
        self.claimed = False
        #: Whether this take wrote anything of the run (a step, a settle, a suspension, the
        #: approved calls begun): before that, a failure gives the run back (ADR 0039).
        self.began = False
        #: Whether the run was settled or suspended through this take: it is no longer this
        #: take's to end (ADR 0041).
        self.ended = False

    def begin(self, run_id: str | None = None, *, meta: Mapping[str, Any] | None = None) -> str:
        # The run exists; of what the loop would store with a new one, only the trace context
        # of this segment's span is news (ADR 0026).
        traceparent = None if meta is None else meta.get(TRACEPARENT)
        if type(traceparent) is str:
            try:
                self._store.record_traceparent(self._taken.run_id, traceparent)
            except Exception as exc:
                log_exception(
                    logger, "worker: no trace context for run %s", self._taken.run_id, exc=exc
                )
        return self._taken.run_id

    def get_run(self, run_id: str) -> RunRecord | None:
        return self._store.get_run(run_id)

    def record_traceparent(self, run_id: str, traceparent: str) -> None:
        self._store.record_traceparent(run_id, traceparent)

    # Every write is this take's: refused once the queue handed the run to another worker
    # (ADR 0039), in the transaction that writes, so a paused worker that wakes writes nothing.
    def record_step(self, run_id: str, step: RunStep) -> bool:
        self.began = True
        return self._store.record_step(run_id, step, attempt=self._taken.attempt)

    def settle(self, run_id: str, status: str, **kwargs: Any) -> None:
        self.began = True
        self._store.settle(run_id, status, attempt=self._taken.attempt, **kwargs)
        self.ended = True

    def suspend(self, run_id: str, state: Mapping[str, Any]) -> None:
        self.began = True
        self._store.suspend(run_id, state, attempt=self._taken.attempt)
        self.ended = True

    def check_held(self, run_id: str) -> None:
        """Raise :class:`~nr_llm_core.audit.TakenAwayError` once this take is not the run's
        latest: the loop asks before each tool call and each completion (ADR 0039)."""
        if not self._store.holds(run_id, attempt=self._taken.attempt):
            raise TakenAwayError(f"run {run_id[:80]!r} was taken from this worker")

    def load_suspended(self, run_id: str) -> Mapping[str, Any] | None:
        return self._taken.state if run_id == self._taken.run_id else None

    def claim_suspended(
        self, run_id: str, *, digest: str | None = None, claimant: str | None = None
    ) -> Mapping[str, Any]:
        # Committed before any approved call runs: a worker that takes the run after this
        # one is lost answers them as lost instead of running them again.
        if not self._store.mark_applying(run_id, worker=self._worker, attempt=self._taken.attempt):
            raise TakenAwayError(f"run {run_id[:80]!r} was taken from this worker")
        self.claimed = self.began = True
        return self._taken.state

    def resume_refusal(self, run_id: str) -> Exception:
        return self._store.resume_refusal(run_id)


ProviderFactory = Callable[[SuspendedRunState], Provider]


def _taken_over(
    state: SuspendedRunState, decisions: Mapping[str, bool]
) -> tuple[list[ChatMessage], int]:
    """The answers to the pending calls of a run whose worker was lost after it began them,
    and how many are :data:`LOST`: a call the approver denied never runs, so it is answered
    as denied, as the lost worker answered it; every other call may or may not have run."""
    answers: list[ChatMessage] = []
    lost = 0
    for call in state.pending:
        if call.id in state.needs_approval and decisions.get(call.id) is not True:
            text = error_result(FailureKind.NOT_APPROVED, call.name)[0].content
        else:
            text, lost = LOST, lost + 1
        answers.append(ChatMessage.tool_result(call.id, text))
    return answers, lost


@final
class RunExecutor:
    """Executes the runs a worker is handed, with ``host`` and a provider made per run by
    ``provider_for(state)`` (its zone is this worker's). ``name`` is recorded as who took
    each run; ``privacy`` is this worker's level (the stricter of it and the run's applies)."""

    def __init__(
        self,
        store: PostgresStore,
        host: ToolHost,
        provider_for: ProviderFactory,
        *,
        name: str,
        zone: TrustZone,
        privacy: str | None = None,
        max_iterations: int = 5,
        tool_timeout: float | None = None,
    ) -> None:
        self.store = store
        self.host = host
        self.provider_for = provider_for
        self.name = name
        self.zone = zone
        self.privacy = privacy
        self.max_iterations = max_iterations
        self.tool_timeout = tool_timeout

    def execute(self, run_id: str) -> str:
        """Take ``run_id`` and drive it until it ends or waits again; return what happened
        (``completed``, ``awaiting_approval``, ``failed`` …, or ``skipped`` when the run was
        not one to execute). Never raises for a run's own failure: it is settled failed."""
        try:
            taken = self.store.take(
                run_id, worker=self.name, zone=self.zone.value, privacy=self.privacy
            )
        except SuspendedStateError as exc:
            return self._cannot_take(run_id, exc)
        if taken is None:
            logger.info("worker: run %s is not queued; nothing to do", run_id)
            return "skipped"
        persister = _TakenRun(self.store, taken, self.name)
        try:
            return self._drive(taken, persister)
        except TakenAwayError:
            # The queue handed the run to another worker while this one was paused: that
            # one holds it now; this one stops where it noticed (a step boundary, or the
            # write that would have ended the run) and writes nothing more (ADR 0041).
            logger.warning(
                "worker: run %s was taken from this worker (take %d); it stops here",
                run_id,
                taken.attempt,
            )
            return "skipped"
        except (KeyboardInterrupt, SystemExit):
            self._interrupted(taken, persister)
            raise
        except Exception as exc:
            if not persister.began:
                # Nothing of the run changed (its provider could not be made for it, say):
                # it goes back to the operator as it was, never failed (ADR 0039).
                log_exception(logger, "worker: run %s could not start here", run_id, exc=exc)
                if self._handed_back(run_id, taken.attempt):
                    return "given_back"
            log_exception(logger, "worker: run %s failed", run_id, exc=exc)
            try:
                self.store.settle_failed(
                    run_id, termination_reason="worker_error", attempt=taken.attempt
                )
            except Exception as again:
                log_exception(logger, "worker: could not settle run %s", run_id, exc=again)
            return "failed"

    def _interrupted(self, taken: Taken, persister: _TakenRun) -> None:
        """This worker is stopped (Ctrl-C, SIGTERM) while its take holds the run: leave the
        run where a command or a worker acts on it, never ``running`` for a take that is
        gone (ADR 0041). The loop settles a run it is interrupted in, but only from where it
        watches for that; before (the provider being made, a take-over's ``resume`` step,
        the approved calls' claim), this does: a run of which nothing began goes back
        (``worker_could_not_start``), else it is settled ``cancelled`` (``interrupted``), as
        the loop settles it. Nothing once the run ended or waits again through this take,
        or once another take holds it."""
        if persister.ended:
            return
        if not persister.began:
            # Never cancelled: the approval, or the queued start, is still the operator's.
            if self._handed_back(taken.run_id, taken.attempt):
                logger.warning("worker: run %s: stopped before it began; given back", taken.run_id)
            return
        try:
            self.store.settle(
                taken.run_id,
                "cancelled",
                termination_reason="interrupted",
                attempt=taken.attempt,
            )
        except Exception as exc:  # settled, or taken away, meanwhile; or the store is gone
            log_exception(logger, "worker: could not settle run %s", taken.run_id, exc=exc)

    def _handed_back(self, run_id: str, attempt: int) -> bool:
        """Give back a run this take failed on before it began anything of it; whether it
        was (not when the run was taken from this worker meanwhile)."""
        try:
            return self.store.give_back(run_id, attempt=attempt)
        except Exception as exc:
            log_exception(logger, "worker: could not give run %s back", run_id, exc=exc)
            return False

    def _drive(self, taken: Taken, persister: _TakenRun) -> str:
        # Not verified again: the take checked these very bytes, signature included, in the
        # transaction that took the run (ADR 0041); a resume below verifies its own copy.
        state = SuspendedRunState.from_dict(taken.state)
        provider = self.provider_for(state)
        zoned = _Zoned(provider, stricter_zone(taken.trust_zone, zone_of(provider)))
        loop = ToolLoop(
            zoned,
            self.host,
            persister=persister,
            max_iterations=self.max_iterations,
            tool_timeout=self.tool_timeout,
        )
        try:
            if not state.pending:  # a run queued to start
                result = loop.run(list(state.messages), allowed=state.allowed)
            elif taken.decisions is None:
                raise RuntimeError("a run with pending calls was handed over without decisions")
            elif taken.applying is not None:
                # A worker before this one began the approved calls and was lost: they are not
                # run again; the model is told, and the run goes on. The trail says so, and,
                # as an approval step would, which provider goes on when it is not the one
                # the run was suspended with (ADR 0036).
                answers, lost = _taken_over(state, taken.decisions)
                persister.record_step(
                    taken.run_id,
                    RunStep.resume(
                        round=state.iterations,
                        lost_calls=lost,
                        provider_change=provider_change(state.provider, zoned),
                    ),
                )
                result = loop.run([*state.messages, *answers], allowed=state.allowed)
            else:
                # Whichever worker is free resumes a queued run, with its own provider: that is
                # what queueing the decision asked for (ADR 0033); the zone still applies.
                try:
                    result = loop.resume(
                        state,
                        approved=taken.decisions,
                        digest=state.digest,
                        claimant=self.name,
                        allow_provider_change=True,
                    )
                except TakenAwayError:
                    raise  # an ApprovalError too, but never one to give the approval back for
                except ApprovalError as exc:
                    if persister.claimed or not self._give_back(taken, exc):
                        raise
                    return "awaiting_approval"
        finally:
            close = getattr(provider, "close", None)
            if callable(close):
                close()
        return result.termination_reason.value

    def _cannot_take(self, run_id: str, refused: SuspendedStateError) -> str:
        """The run's state failed this worker's checks (another host secret, altered,
        unreadable): nothing was taken. The run goes back to the operator, waiting with its
        reason recorded, instead of staying ``queued`` where no job will come (ADR 0038);
        one whose approved calls a lost worker had begun too, saying they may have run
        (ADR 0039). The job fails only when the run is no longer one to give back."""
        if not self.store.give_back(run_id):
            raise refused
        # The refusal is host words (SuspendedStateError never quotes the state).
        logger.warning(
            "worker: run %s: %s; it waits again for the operator (state_not_verified)",
            run_id,
            str(refused)[:300],
        )
        return "given_back"

    def _give_back(self, taken: Taken, refused: ApprovalError) -> bool:
        """A resume this worker refused before any approved call ran (an approved call's
        tool is not offered here, ADR 0029): the approval is given back and the run waits
        again on its state, for an approval where the tool is offered (ADR 0036). Whether it
        was (not when the run was taken away meanwhile: only this take, while it is still
        the run's latest, may give it back)."""
        run_id = taken.run_id
        if not self.store.withdraw_approval(run_id, worker=self.name, attempt=taken.attempt):
            return False
        # The refusal is host words (host tool names); the operator reads it here.
        logger.warning(
            "worker: run %s: %s; the approval is given back and the run waits again",
            run_id,
            str(refused)[:300],
        )
        return True
