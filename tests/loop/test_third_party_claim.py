"""A store of someone else's (the ``ClaimingRecorder`` protocol, without the checks nr-llm's
own stores make inside their claim, ADR 0036) hands the loop something other than the turn it
claimed: the loop refuses before any tool runs and puts the run back to wait (ADR 0038).

Before, the loop compared the digest after the store had committed the claim and raised: the
run was left ``running`` in that store with its state gone (stuck, the evidence lost), and a
claim that returned no mapping at all raised the interpreter's ``AttributeError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from nr_llm_core import ScriptedProvider, ToolLoop
from nr_llm_core.errors import ApprovalError
from nr_llm_core.loop import TerminationReason
from nr_llm_core.trace import RunStep

from ..store._support import APPEND_TURNS, LOG_VAR, append_host


class LaxStore:
    """A third party's store: one run, claimed without checking what it hands over; the
    claim commits (``running``, the state dropped) before the loop sees the state."""

    def __init__(self, handed: Any = "as stored") -> None:
        self.status = "running"
        self.state: Mapping[str, Any] | None = None
        self.handed = handed

    def begin(self, run_id: str | None = None, *, meta: Mapping[str, Any] | None = None) -> str:
        return run_id or "lax-run"

    def record_step(self, run_id: str, step: RunStep) -> bool:
        return True

    def settle(self, run_id: str, status: str, **kwargs: Any) -> None:
        self.status = status

    def suspend(self, run_id: str, state: Mapping[str, Any]) -> None:
        self.status, self.state = "suspended", dict(state)

    def load_suspended(self, run_id: str) -> Mapping[str, Any] | None:
        return self.state if self.status == "suspended" else None

    def claim_suspended(
        self, run_id: str, *, digest: str | None = None, claimant: str | None = None
    ) -> Any:
        held, self.status, self.state = self.state, "running", None
        if self.handed == "as stored":
            return held
        if self.handed == "another turn":  # swapped in between the loop's read and its claim
            assert held is not None
            return {**held, "digest": "f" * 64}
        return self.handed

    def resume_refusal(self, run_id: str) -> Exception:
        return ApprovalError(f"run {run_id!r} is not waiting")


def _suspended(store: LaxStore) -> str:
    result = ToolLoop(ScriptedProvider(APPEND_TURNS), append_host(), persister=store).run("go")
    assert result.termination_reason is TerminationReason.AWAITING_APPROVAL
    return result.run_id


@pytest.mark.parametrize("handed", ["another turn", None], ids=["another-turn", "nothing"])
def test_a_claim_that_hands_over_another_turn_runs_nothing_and_the_run_waits_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, handed: Any
) -> None:
    """The lax store's claim hands over another turn (or nothing): ``resume`` raises
    :class:`ApprovalError` in host words, the approved append never runs, and the run waits
    again in that store: on what the store held (another turn), or on the state the loop
    checked when the store handed nothing back; a later resume of it is possible."""
    log = tmp_path / "append.log"
    monkeypatch.setenv(LOG_VAR, str(log))
    store = LaxStore()
    run_id = _suspended(store)
    held = dict(store.state or {})
    store.handed = handed
    loop = ToolLoop(ScriptedProvider(APPEND_TURNS[1:]), append_host(), persister=store)
    with pytest.raises(ApprovalError) as refused:
        loop.resume(run_id, approved=True)
    assert "nothing ran" in str(refused.value)
    assert not log.exists()
    assert store.status == "suspended"
    expected = {**held, "digest": "f" * 64} if handed == "another turn" else held
    assert store.state == expected


def test_a_claim_that_hands_over_the_turn_resumes() -> None:
    """The control: the same lax store handing over what it held resumes as before."""
    store = LaxStore()
    run_id = _suspended(store)
    loop = ToolLoop(ScriptedProvider(APPEND_TURNS[1:]), append_host(), persister=store)
    result = loop.resume(run_id, approved=False)
    assert result.termination_reason is TerminationReason.COMPLETED


CANARY = "LOADED-NOT-A-MAPPING-CANARY-51f"


@pytest.mark.parametrize(
    "loaded",
    [[("digest", CANARY)], CANARY, 7],
    ids=["list-of-pairs", "str", "int"],
)
@pytest.mark.parametrize("by", ["state", "run-id"])
def test_a_load_that_hands_over_no_mapping_is_refused_in_host_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loaded: Any, by: str
) -> None:
    """The lax store's ``load_suspended`` hands over something that is not a mapping (a list,
    a string, a number). ``resume`` (with the state, or with the run id) raises
    :class:`ApprovalError` in host words that quote nothing of it, nothing is claimed, the
    approved append never runs, and the run still waits on its state (before, a resume with
    the state raised the interpreter's ``AttributeError`` on ``.get``)."""
    log = tmp_path / "append.log"
    monkeypatch.setenv(LOG_VAR, str(log))
    store = LaxStore()
    result = ToolLoop(ScriptedProvider(APPEND_TURNS), append_host(), persister=store).run("go")
    assert result.suspended is not None
    held = dict(store.state or {})

    class Loading(LaxStore):
        def load_suspended(self, run_id: str) -> Any:
            return loaded

    odd = Loading()
    odd.status, odd.state = store.status, dict(held)
    loop = ToolLoop(ScriptedProvider(APPEND_TURNS[1:]), append_host(), persister=odd)
    with pytest.raises(ApprovalError) as refused:
        loop.resume(result.suspended if by == "state" else result.run_id, approved=True)
    text = str(refused.value)
    assert "not a mapping" in text and "nothing ran" in text
    assert CANARY not in text and type(loaded).__name__ not in text
    assert not log.exists()
    assert (odd.status, odd.state) == ("suspended", held)
