"""The W3C trace context a run's telemetry stores with the run, and reading it back.

A :class:`~nr_llm_core.telemetry.RunWatch` that exports spans gives the loop the
``traceparent`` of the run's first span; the loop stores it in the run's ``meta``
(:data:`TRACEPARENT`), so ``nr-llm runs show`` can name the trace. Each resumption's telemetry
replaces it with the ``traceparent`` of the resumption's own span, through a store that is a
:class:`TraceparentRecorder`: the stored value always names the run's latest segment, which
is the one a resumption in any process continues (ADR 0026). Random hex ids, no run bytes: it
is kept at every privacy level.
"""

from __future__ import annotations

import re
from typing import Any, Final, Protocol, runtime_checkable

__all__ = [
    "TRACEPARENT",
    "TraceparentRecorder",
    "format_traceparent",
    "is_traceparent",
    "parse_traceparent",
    "with_traceparent",
]

#: The run-meta key under which the ``traceparent`` of the span of a run's latest segment (its
#: first span, then each resumption's) is stored.
TRACEPARENT: Final = "traceparent"
_TRACEPARENT_RE: Final = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")


@runtime_checkable
class TraceparentRecorder(Protocol):
    """An audit store that can replace the ``traceparent`` stored with a run (both of
    nr-llm's stores are). A resumption's telemetry uses it to store its own span's."""

    def record_traceparent(self, run_id: str, traceparent: str) -> None:
        """Store ``traceparent`` under :data:`TRACEPARENT` in run ``run_id``'s meta, leaving
        every other key as it is; ``ValueError`` when it is not a valid ``traceparent``."""
        ...


def format_traceparent(trace_id: int, span_id: int, flags: int) -> str:
    """The W3C ``traceparent`` (version 00) of a span."""
    return f"00-{trace_id:032x}-{span_id:016x}-{flags:02x}"


def is_traceparent(value: object) -> bool:
    """Whether ``value`` is a valid W3C ``traceparent`` (version 00, ids not all zero)."""
    return parse_traceparent({TRACEPARENT: value}) is not None


def parse_traceparent(meta: object) -> tuple[str, str, int] | None:
    """The trace id, span id and trace flags stored in a run's ``meta``, or ``None`` when there
    are none or they are not a valid W3C ``traceparent`` (all-zero ids are invalid)."""
    value = meta.get(TRACEPARENT) if isinstance(meta, dict) else None
    found = _TRACEPARENT_RE.fullmatch(value) if type(value) is str else None
    if found is None or set(found.group(1)) == {"0"} or set(found.group(2)) == {"0"}:
        return None
    return found.group(1), found.group(2), int(found.group(3), 16)


def with_traceparent(meta: object, traceparent: str) -> dict[str, Any] | None:
    """A run's decoded ``meta`` (``None``: it has none) with ``traceparent`` under
    :data:`TRACEPARENT` and every other key kept, for a store's
    :meth:`~TraceparentRecorder.record_traceparent`; ``None`` when ``meta`` is not a JSON
    object (a store leaves it as it is). ``ValueError`` when ``traceparent`` is not valid."""
    if not is_traceparent(traceparent):
        raise ValueError("not a W3C traceparent")
    if meta is None:
        return {TRACEPARENT: traceparent}
    if type(meta) is not dict:
        return None
    return {**meta, TRACEPARENT: traceparent}
