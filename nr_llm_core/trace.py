"""The run trace: one :class:`RunStep` per thing that happened in an agent run.

A step's :meth:`RunStep.to_dict` uses the contract's snake_case keys and holds only the keys its
kind has. :class:`RunTrace` collects steps and hands each one, as it is recorded, to its
listeners (the live inspector and the audit persister are two such listeners). The steps here
are unfiltered: the privacy filter runs in each listener that lets a step leave (the persister on
the way to storage, the playground on the way to the page).
"""

from __future__ import annotations

import enum
import logging
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, final

import attrs

from nr_llm_core._logging import log_exception
from nr_llm_core.failures import ToolFailure
from nr_llm_core.results import ToolResult

__all__ = [
    "CONTENT_KEYS",
    "RunStep",
    "RunTrace",
    "StepKind",
    "StepListener",
    "ToolInvocation",
]

logger = logging.getLogger("nr_llm.trace")

#: The only step keys that can hold model or tool bytes (DESIGN.md, "Step records").
CONTENT_KEYS: Final = (
    "messages_sent",
    "content",
    "thinking",
    "requested_tool_calls",
    "raw",
    "tool_arguments",
    "tool_result",
    "tool_artifacts",
    "tool_error",
)


class StepKind(enum.StrEnum):
    """What a step records.

    ``request``: the messages sent to the provider; ``llm``: what the provider answered;
    ``tool``: one tool call through the seam; ``approval``: a decision on pending calls;
    ``resume``: a run taken over after its worker was lost mid-way through approved calls;
    ``error``: a failure that ended the run (host words only).
    """

    REQUEST = "request"
    LLM = "llm"
    TOOL = "tool"
    APPROVAL = "approval"
    RESUME = "resume"
    ERROR = "error"


@attrs.frozen(kw_only=True)
class ToolInvocation:
    """One executed tool call: the name and arguments the model sent, the bounded result.

    ``failure`` is set when the host wrote the result (an unknown tool, invalid arguments, a
    tool that raised …): the kind, and what a tool's exception said. It is trace data, kept
    under the privacy filter as ``tool_error``; the model only ever reads ``result.content``.
    """

    name: str
    arguments: Any
    result: ToolResult
    call_id: str | None = None
    failure: ToolFailure | None = None


@final
@attrs.frozen(kw_only=True)
class RunStep:
    """One step of a run. Build it with :meth:`request`, :meth:`llm`, :meth:`tool`,
    :meth:`approval`, :meth:`resume` or :meth:`error`; read it with :meth:`to_dict`."""

    kind: StepKind
    round: int
    duration_ms: float
    fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The step in the contract's snake_case keys; ``duration_ms`` rounded to 0.001."""
        return {
            "kind": self.kind.value,
            "round": self.round,
            "duration_ms": round(self.duration_ms, 3),
            **self.fields,
        }

    @classmethod
    def request(
        cls,
        *,
        round: int,
        messages: Sequence[Mapping[str, Any]],
        duration_ms: float = 0.0,
        notes: Sequence[str] = (),
    ) -> RunStep:
        """The conversation as sent to the provider (``messages_sent``), and ``notes`` (host
        words about it, such as how much its trust zone had withheld)."""
        fields: dict[str, Any] = {"messages_sent": [dict(m) for m in messages]}
        if notes:
            fields["notes"] = list(notes)
        return cls(kind=StepKind.REQUEST, round=round, duration_ms=duration_ms, fields=fields)

    @classmethod
    def llm(
        cls,
        *,
        round: int,
        duration_ms: float,
        content: str | None,
        requested_tool_calls: Sequence[Mapping[str, Any]] = (),
        thinking: str | None = None,
        raw: Any = None,
        usage: Mapping[str, int] | None = None,
        notes: Sequence[str] = (),
        stop_reason: str | None = None,
    ) -> RunStep:
        """What the provider answered: text, requested tool calls, token usage, why the model
        stopped (``stop_reason``, the host's word: ``end``, ``tool_calls``, ``length``,
        ``other``), and ``notes`` (host words about the answer, such as tool calls that could
        not be kept)."""
        fields: dict[str, Any] = {"content": content or ""}
        if thinking is not None:
            fields["thinking"] = thinking
        fields["requested_tool_calls"] = [dict(c) for c in requested_tool_calls]
        if raw is not None:
            fields["raw"] = raw
        if usage is not None:
            fields["usage"] = dict(usage)
        if stop_reason is not None:
            fields["stop_reason"] = stop_reason
        if notes:
            fields["notes"] = list(notes)
        return cls(kind=StepKind.LLM, round=round, duration_ms=duration_ms, fields=fields)

    @classmethod
    def tool(cls, *, round: int, duration_ms: float, invocation: ToolInvocation) -> RunStep:
        """One tool call; ``tool_artifacts`` only when the result has artifacts, ``tool_error``
        only when the host wrote the result (its :class:`~nr_llm_core.failures.ToolFailure`)."""
        result = invocation.result
        fields: dict[str, Any] = {
            "tool_name": invocation.name,
            "tool_call_id": invocation.call_id,
            "tool_arguments": invocation.arguments,
            "tool_result": result.content,
            "tool_is_error": result.is_error,
        }
        if result.artifacts:
            fields["tool_artifacts"] = [a.to_dict() for a in result.artifacts]
        if invocation.failure is not None:
            fields["tool_error"] = invocation.failure.to_dict()
        return cls(kind=StepKind.TOOL, round=round, duration_ms=duration_ms, fields=fields)

    @classmethod
    def approval(
        cls,
        *,
        round: int,
        decisions: Mapping[str, bool],
        digest: str,
        duration_ms: float = 0.0,
        provider_changed: bool = False,
        provider_change: Mapping[str, Any] | None = None,
    ) -> RunStep:
        """A human decision on the pending calls: call id -> approved. ``provider_changed``
        (recorded only when true) says the run goes on with another provider or model than
        the one that wrote the pending turn, as the resumer allowed; ``provider_change`` says
        which (:func:`~nr_llm_core.provider_record.provider_change`: the provider the run was
        suspended with and the one it resumes with) and implies ``provider_changed``."""
        fields: dict[str, Any] = {"approvals": dict(decisions), "approval_digest": digest}
        _provider_fields(fields, provider_changed, provider_change)
        return cls(kind=StepKind.APPROVAL, round=round, duration_ms=duration_ms, fields=fields)

    @classmethod
    def resume(
        cls,
        *,
        round: int,
        lost_calls: int,
        duration_ms: float = 0.0,
        provider_change: Mapping[str, Any] | None = None,
    ) -> RunStep:
        """A run taken over after the worker that was running its approved calls was lost:
        ``lost_calls`` pending calls are answered as possibly run instead of being run again,
        and ``provider_change`` (as for :meth:`approval`) says when the run goes on with
        another provider than the one it was suspended with."""
        fields: dict[str, Any] = {"lost_calls": lost_calls}
        _provider_fields(fields, False, provider_change)
        return cls(kind=StepKind.RESUME, round=round, duration_ms=duration_ms, fields=fields)

    @classmethod
    def error(cls, *, round: int, reason: str, duration_ms: float = 0.0) -> RunStep:
        """A failure that ended the run; ``reason`` is host vocabulary, never provider bytes."""
        return cls(
            kind=StepKind.ERROR, round=round, duration_ms=duration_ms, fields={"reason": reason}
        )


def _provider_fields(
    fields: dict[str, Any], changed: bool, change: Mapping[str, Any] | None
) -> None:
    # The bool says that the provider changed (ADR 0033), the record which (ADR 0036).
    if change is not None:
        fields["provider_changed"] = True
        fields["provider_change"] = {
            side: dict(record) if isinstance(record, Mapping) else record
            for side, record in change.items()
        }
    elif changed:
        fields["provider_changed"] = True


#: A listener is called synchronously with each step as it is recorded.
StepListener = Callable[["RunTrace", RunStep], None]


@final
class RunTrace:
    """Collects the steps of one run and calls every listener for each step, in order.

    A listener that raises is logged and skipped: it never stops the run or the other
    listeners.
    """

    def __init__(self, run_id: str | None = None, listeners: Iterable[StepListener] = ()) -> None:
        self.run_id = run_id or uuid.uuid4().hex
        self._steps: list[RunStep] = []
        self._listeners: list[StepListener] = list(listeners)
        self._lock = threading.Lock()

    def add_listener(self, listener: StepListener) -> None:
        """Call ``listener(trace, step)`` for every step recorded from now on."""
        self._listeners.append(listener)

    def record(self, step: RunStep) -> None:
        """Append ``step`` and hand it to every listener."""
        with self._lock:
            self._steps.append(step)
            for listener in tuple(self._listeners):
                try:
                    listener(self, step)
                except Exception as exc:
                    log_exception(
                        logger, "a trace listener failed on a %s step", step.kind.value, exc=exc
                    )

    @property
    def steps(self) -> tuple[RunStep, ...]:
        """Every step recorded so far, in order."""
        return tuple(self._steps)

    def __len__(self) -> int:
        return len(self._steps)
