"""A tool-runner call of a tool that requires approval, recorded as a run of its own (ADR 0044).

The operator's confirmation in the page is the approval, and it is recorded as a run's would
be: the store begins a run (its ``meta`` names the tool runner and who approved), records an
``approval`` step and then the ``tool`` step, through the privacy filter at the run's level,
and settles it ``completed``. Nothing runs unrecorded: without a store, or when the run or its
approval cannot be written, the tool is not called.
"""

from __future__ import annotations

import logging
from typing import Any, Final, final

from nr_llm_core._logging import log_exception
from nr_llm_core._signing import mac
from nr_llm_core.audit import AuditStoreError, claimant
from nr_llm_core.encoding import encode_json
from nr_llm_core.errors import ConfigurationError
from nr_llm_core.host import ToolHost
from nr_llm_core.playground._store import Store
from nr_llm_core.playground._tools import call_tool, shown_call
from nr_llm_core.trace import RunStep

__all__ = ["NOT_CONFIRMED", "NO_STORE", "RUNNER", "RunnerRefused", "recorded_call"]

logger = logging.getLogger("nr_llm.playground")

#: The provider a tool-runner run names in its ``meta`` (host words, shown in the Runs view).
RUNNER: Final = "tool runner"
#: The call id the approval step decides (a runner call has no model-made id).
_CALL_ID: Final = "tool-runner"
#: What the approval digest is bound to, beside the run, the tool and the arguments.
_PURPOSE: Final = "nr-llm tool-runner approval"

#: A call of a tool that requires approval, sent without the confirmation.
NOT_CONFIRMED: Final = (
    "this tool requires approval: confirm the call (send approved=true, the page's "
    "'Yes, run it'); it is then run once and recorded in the audit store as a run"
)
#: A confirmed call with no store to record it in.
NO_STORE: Final = (
    "this tool requires approval and this playground has no audit store to record the call "
    "in, so it does not run it: start the playground with a store (--db), or run it in an "
    "agent run and approve it there"
)
_UNRECORDED: Final = "the audit store could not record the call, so the tool did not run"


@final
class RunnerRefused(Exception):
    """A tool-runner call that was not run: ``status`` the HTTP status, ``reason`` host
    words."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def recorded_call(
    store: Store | None,
    host: ToolHost,
    name: str,
    arguments: Any,
    *,
    level: str,
    timeout: float | None,
) -> dict[str, Any]:
    """Run ``name`` with ``arguments``, confirmed by the operator, as a recorded run: what
    the tool runner shows (:func:`~nr_llm_core.playground._tools.shown_call`) plus
    ``run_id``, the run that records it, and ``recorded``, whether its tool step was written.
    Raises :class:`RunnerRefused`, before the tool is called, when there is no store or the
    run or its approval cannot be recorded. Blocking: call it from a worker thread."""
    if store is None:
        raise RunnerRefused(409, NO_STORE)
    persister = store.persister
    who = claimant("playground")
    try:
        run_id = persister.begin(None, meta={"provider": RUNNER, "approved_by": who}, privacy=level)
    except AuditStoreError as exc:
        log_exception(logger, "the audit store could not begin a tool-runner run", exc=exc)
        raise RunnerRefused(503, _UNRECORDED) from None
    try:
        # Keyed like a suspended turn's digest (ADR 0044): it binds the approval to this run,
        # tool and arguments, and a guess at the arguments cannot be checked against it.
        call = encode_json({"tool": name, "arguments": arguments})
        digest = mac(_PURPOSE, run_id.encode("utf-8"), call)
    except ConfigurationError:
        _give_up(store, run_id, "the host secret cannot be read")
        raise RunnerRefused(503, f"{_UNRECORDED}: the host secret cannot be read") from None
    approval = RunStep.approval(round=0, decisions={_CALL_ID: True}, digest=digest)
    if not persister.record_step(run_id, approval):
        _give_up(store, run_id, "the approval could not be recorded")
        raise RunnerRefused(503, _UNRECORDED)
    result, step = call_tool(host, name, arguments, timeout=timeout)
    recorded = persister.record_step(run_id, step)
    try:
        persister.settle(
            run_id, "completed", termination_reason="completed", iterations=1, truncated=False
        )
    except AuditStoreError as exc:  # the call ran and its steps are kept; the run stays open
        log_exception(logger, "the audit store could not settle a tool-runner run", exc=exc)
    return {**shown_call(name, result, step, level=level), "run_id": run_id, "recorded": recorded}


def _give_up(store: Store, run_id: str, reason: str) -> None:
    """End a tool-runner run whose tool was not called: ``failed``, for ``reason``."""
    try:
        store.persister.record_step(run_id, RunStep.error(round=0, reason=reason))
        store.persister.settle(run_id, "failed", termination_reason="failed", iterations=0)
    except AuditStoreError as exc:
        log_exception(logger, "the audit store could not settle a tool-runner run", exc=exc)
