"""What the tool loop tells whoever watches its runs, and the switch that turns OpenTelemetry on.

The loop knows no telemetry library. It asks a :class:`RunTelemetry` for a :class:`RunWatch`
when a run starts or resumes, adds the watch to the run's trace listeners (so the watch sees
every step, unfiltered, and must filter it itself), stores the watch's :meth:`RunWatch.meta`
with the run, and tells the watch how the run ended. ``nr_llm_core.otel.OtelTelemetry`` is
the implementation the project ships; :func:`telemetry_from_environment` builds it, importing
it only then, when ``NR_LLM_OTEL`` asks for it.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Collection, Mapping
from typing import Final, Protocol

from nr_llm_core.privacy import PrivacyLevel
from nr_llm_core.run_result import RunRecorder, ToolLoopResult
from nr_llm_core.trace import RunStep, RunTrace

__all__ = ["OTEL_ENV_VAR", "RunTelemetry", "RunWatch", "telemetry_from_environment"]

logger = logging.getLogger("nr_llm.telemetry")

#: ``1``/``true``/``on``/``yes``: OpenTelemetry spans and metrics on the global providers, at
#: the run's privacy level; a level name (``none``, ``metadata``, ``redacted``, ``full``): on,
#: and the stricter of that level and the run's. Unset, empty, ``0``/``false``/``off``/``no``:
#: off. Anything else is off, with a warning: a typo never turns export on.
OTEL_ENV_VAR: Final = "NR_LLM_OTEL"
_ON: Final = frozenset({"1", "true", "on", "yes"})
_OFF: Final = frozenset({"", "0", "false", "off", "no"})


class RunWatch(Protocol):
    """One run as its watcher sees it.

    It is called like a trace listener with every step (unfiltered: it applies the privacy
    filter itself); :meth:`meta` is host metadata stored with a new run (no run bytes);
    :meth:`end` is called once, when ``run`` or ``resume`` returns (``result``) or raises
    (``None``). None of them may raise into the run: the loop logs and goes on.
    """

    def __call__(self, trace: RunTrace, step: RunStep) -> None:
        """Take one step as it is recorded."""
        ...

    def meta(self) -> Mapping[str, str]:
        """Host metadata to store with the run (such as its trace context)."""
        ...

    def end(self, run_id: str, result: ToolLoopResult | None) -> None:
        """The run returned ``result`` (or raised: ``None``)."""
        ...


class RunTelemetry(Protocol):
    """Gives the loop a :class:`RunWatch` for each run it starts or resumes."""

    def watch(
        self,
        *,
        provider: object,
        tools: Collection[str],
        persister: RunRecorder | None,
        privacy: PrivacyLevel | None,
        resumed: str | None,
    ) -> RunWatch:
        """A watch for a new run (``resumed=None``) or the resumption of run ``resumed``.

        ``provider`` is the loop's provider, ``tools`` the names registered with its host,
        ``persister`` its audit store (or ``None``), ``privacy`` the level the loop asks for
        (``None``: none named): the watch shows no more than the stricter of these allow.
        """
        ...


def telemetry_from_environment() -> RunTelemetry | None:
    """The telemetry ``NR_LLM_OTEL`` asks for, or ``None`` (see :data:`OTEL_ENV_VAR`).

    ``nr_llm_core.otel`` (and with it ``opentelemetry``) is imported only when the switch is
    on; if the ``otel`` extra is not installed the switch is ignored with a warning. Every
    loop the switch turns on at one level shares one telemetry object.
    """
    value = os.environ.get(OTEL_ENV_VAR)
    if value is None:
        return None
    word = value.strip().lower()
    if word in _OFF:
        return None
    privacy: PrivacyLevel | None = None
    if word not in _ON:
        try:
            privacy = PrivacyLevel(word)
        except ValueError:
            logger.warning(
                "%s is not one of 1, true, on, yes, a privacy level, or 0, false, off, no; "
                "OpenTelemetry stays off",
                OTEL_ENV_VAR,
            )
            return None
    try:
        return _shared(privacy)
    except ImportError:
        logger.warning(
            "%s is set but the otel extra is not installed (pip install 'nr-llm[otel]'); "
            "OpenTelemetry stays off",
            OTEL_ENV_VAR,
        )
        return None


@functools.cache
def _shared(privacy: PrivacyLevel | None) -> RunTelemetry:
    # One per level for the whole process: every loop the switch turns on (the playground makes
    # one per run) shares its instruments and what it remembers of suspended runs.
    from nr_llm_core.otel import OtelTelemetry

    return OtelTelemetry(privacy=privacy)
