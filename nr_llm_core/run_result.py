"""What a tool-loop run produces, and where it is recorded.

:class:`ToolLoopResult` and :class:`TerminationReason` are what ``ToolLoop.run()`` and
``ToolLoop.resume()`` return; :class:`RunRecorder` is the interface of an audit store that
receives every step, and :class:`ClaimingRecorder` the optional part that makes a resume an
atomic claim (``AgentRunPersister`` implements both).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Protocol, final, runtime_checkable

import attrs

from nr_llm_core.approval import SuspendedRunState
from nr_llm_core.messages import ChatMessage
from nr_llm_core.providers.base import Usage
from nr_llm_core.trace import RunStep, RunTrace, ToolInvocation

__all__ = [
    "ClaimingRecorder",
    "HoldingRecorder",
    "RunRecorder",
    "TerminationReason",
    "ToolLoopResult",
]


class TerminationReason(enum.StrEnum):
    """Why a run ended (or paused); the value is the snake_case code the audit store keeps.

    ================= ==========================================================================
    completed         the model answered without asking for more tools
    max_iterations    the round cap was reached; the final answer was asked for without tools
    max_tokens        the answer was cut at the provider's token limit (``max_tokens``); tool
                      calls in a cut answer are not run (their arguments may be cut too)
    budget_exhausted  the token budget was spent before the tools the model asked for ran
    failed            the provider failed; ``error`` says why
    awaiting_approval paused: a call needs a human decision (``suspended``)
    ================= ==========================================================================
    """

    COMPLETED = "completed"
    MAX_ITERATIONS = "max_iterations"
    MAX_TOKENS = "max_tokens"
    BUDGET_EXHAUSTED = "budget_exhausted"
    FAILED = "failed"
    AWAITING_APPROVAL = "awaiting_approval"


class RunRecorder(Protocol):
    """What the loop needs from an audit store (``AgentRunPersister`` implements it).

    ``record_step`` applies the store's privacy filter and never raises. ``settle`` is called
    once when a run ends, with status ``completed`` or ``failed``; a suspended run is handed
    to ``suspend`` instead and settled after it is resumed.
    """

    def begin(self, run_id: str | None = None, *, meta: Mapping[str, Any] | None = None) -> str:
        """Open a run and return its id."""
        ...

    def record_step(self, run_id: str, step: RunStep) -> bool:
        """Store one step (filtered); ``False`` when it could not be stored."""
        ...

    def settle(
        self,
        run_id: str,
        status: str,
        *,
        termination_reason: str,
        iterations: int,
        truncated: bool,
        usage: Mapping[str, int],
    ) -> None:
        """Close a run."""
        ...

    def suspend(self, run_id: str, state: Mapping[str, Any]) -> None:
        """Store a suspended run's state (``SuspendedRunState.to_dict()``)."""
        ...

    def load_suspended(self, run_id: str) -> Mapping[str, Any] | None:
        """The stored state of a suspended run, or ``None``."""
        ...


@runtime_checkable
class ClaimingRecorder(RunRecorder, Protocol):
    """A :class:`RunRecorder` that hands a suspended run to exactly one resumer.

    The loop uses it when its persister has these methods (checked with ``isinstance``);
    without them a resume is not guarded against a second resumer in another process.
    """

    def claim_suspended(
        self, run_id: str, *, digest: str | None = None, claimant: str | None = None
    ) -> Mapping[str, Any]:
        """Atomically move a run waiting on ``digest`` to running, recording ``claimant``,
        and return its state; raise ``ApprovalError`` (``AlreadyClaimedError`` when someone
        else claimed it first, naming them) otherwise."""
        ...

    def resume_refusal(self, run_id: str) -> Exception:
        """The error explaining why ``run_id`` is not waiting (who claimed it, and when)."""
        ...


@runtime_checkable
class HoldingRecorder(RunRecorder, Protocol):
    """A :class:`RunRecorder` through which a run can be taken away while the loop drives
    it: a worker's take of a queued run, which the queue hands to another worker when this
    one stops sending heartbeats (it need not be dead, ADR 0039).

    The loop calls :meth:`check_held` before each tool call and each completion (checked
    with ``isinstance``): no call runs, and nothing more is asked of the model, once another
    process holds the run.
    """

    def check_held(self, run_id: str) -> None:
        """Return while this recorder still holds ``run_id``; raise (an exception the caller
        of the loop expects) once the run was handed to another: the loop stops there."""
        ...


@final
@attrs.frozen(kw_only=True)
class ToolLoopResult:
    """The outcome of :meth:`ToolLoop.run` or :meth:`ToolLoop.resume`.

    ``content`` is the final answer (``""`` when the run failed or is suspended with no text);
    ``invocations`` the tool calls answered in this call of ``run``/``resume``; ``iterations``
    the completions requested in the whole run; ``truncated`` is true when the round cap forced
    a final answer without tools; ``error`` is the host-worded reason of a failed run;
    ``suspended`` holds the state to resume when ``termination_reason`` is
    ``awaiting_approval``; ``messages`` is the conversation; ``trace`` the run's trace.
    """

    content: str
    invocations: tuple[ToolInvocation, ...]
    iterations: int
    truncated: bool
    termination_reason: TerminationReason
    suspended: SuspendedRunState | None
    run_id: str
    usage: Usage
    error: str | None = None
    messages: tuple[ChatMessage, ...] = attrs.field(default=(), repr=False)
    trace: RunTrace | None = attrs.field(default=None, repr=False, eq=False)
