"""The W3C trace context a run's telemetry stores with the run, and reading it back.

A :class:`~nr_llm_core.telemetry.RunWatch` that exports spans gives the loop the
``traceparent`` of the run's first span; the loop stores it in the run's ``meta``
(:data:`TRACEPARENT`), so ``nr-llm runs show`` can name the trace and a resumption in another
process can link to it. Random hex ids, no run bytes: it is kept at every privacy level.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["TRACEPARENT", "format_traceparent", "parse_traceparent"]

#: The run-meta key under which the ``traceparent`` of a run's first span is stored.
TRACEPARENT: Final = "traceparent"
_TRACEPARENT_RE: Final = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")


def format_traceparent(trace_id: int, span_id: int, flags: int) -> str:
    """The W3C ``traceparent`` (version 00) of a span."""
    return f"00-{trace_id:032x}-{span_id:016x}-{flags:02x}"


def parse_traceparent(meta: object) -> tuple[str, str, int] | None:
    """The trace id, span id and trace flags stored in a run's ``meta``, or ``None`` when there
    are none or they are not a valid W3C ``traceparent`` (all-zero ids are invalid)."""
    value = meta.get(TRACEPARENT) if isinstance(meta, dict) else None
    found = _TRACEPARENT_RE.fullmatch(value) if type(value) is str else None
    if found is None or set(found.group(1)) == {"0"} or set(found.group(2)) == {"0"}:
        return None
    return found.group(1), found.group(2), int(found.group(3), 16)
