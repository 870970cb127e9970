"""A claim checks the whole state before it commits (ADR 0036): on a SQLite file and on a real
PostgreSQL server, a waiting run whose stored state matches what its row recorded (the file's
hash; the row's signature) but cannot be resumed from (not JSON, not an object, not the shape
of a state, a newer version's state, another run's state, a state not signed with the host
secret, another turn than the one the run waits on) is refused by the claim itself: the run
still waits, unclaimed, its state is still stored, the error says what to do and quotes no
byte of the state, and ``discard`` ends it. The state is rewritten as someone who can write
the store would (on PostgreSQL: with the host secret, as a newer or broken version would)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest

from nr_llm_core import ScriptedProvider, SuspendedRunState, ToolLoop
from nr_llm_core._signing import mac
from nr_llm_core.audit import AuditStoreError, SuspendedStateError
from nr_llm_core.errors import ApprovalError
from nr_llm_core.messages import ToolCall
from nr_llm_core.stores import AuditStore, open_store, store_kind

from ..stores.fixtures import execute
from ._support import APPEND_TURNS, LOG_VAR, append_host, log_lines, suspend_append_run

CANARY = "STATE-BYTES-CANARY-5e2a"


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "append.log"
    monkeypatch.setenv(LOG_VAR, str(path))
    return path


def stored_state(target: str, run_id: str) -> str:
    """The stored state's text, as a reader of the store's storage sees it."""
    if store_kind(target) == "sqlite":
        (name,) = execute(target, "SELECT state_file FROM runs WHERE id = :r", r=run_id)[0]
        return (Path(target + "-suspended") / name).read_text()
    rows = execute(target, "SELECT state FROM states WHERE run_id = :r", r=run_id)
    return str(rows[0][0])


def rewrite_state(target: str, run_id: str, text: str) -> None:
    """Put ``text`` where the run's state is, so that the store's own check of the bytes
    passes: on SQLite the file, and the hash its row keeps; on PostgreSQL the row, signed
    with the host secret (as a version of nr-llm that writes it so would)."""
    if store_kind(target) == "sqlite":
        (name,) = execute(target, "SELECT state_file FROM runs WHERE id = :r", r=run_id)[0]
        (Path(target + "-suspended") / name).write_text(text)
        execute(
            target,
            "UPDATE runs SET state_sha256 = :h WHERE id = :r",
            h=hashlib.sha256(text.encode()).hexdigest(),
            r=run_id,
        )
        return
    parts = (run_id.encode(), text.encode(), b"")
    signature = mac("nr-llm/state/v1", *parts, shared=True)
    execute(
        target,
        "UPDATE states SET state = :s, mac = :m WHERE run_id = :r",
        s=text,
        m=signature,
        r=run_id,
    )


def state_of(text: str) -> SuspendedRunState:
    return SuspendedRunState.from_json(text)


def newer_version(text: str) -> str:
    data = json.loads(text)
    data["version"] = 3
    data["note_from_the_future"] = CANARY
    return json.dumps(data)


def wrong_shape(text: str) -> str:
    data = json.loads(text)
    data["messages"] = CANARY
    return json.dumps(data)


def unsigned(text: str) -> str:
    state = state_of(text)
    call = ToolCall(id="a1", name="append_line", arguments={"text": CANARY})
    last = attrs.evolve(state.messages[-1], tool_calls=(call,))
    data = attrs.evolve(state, messages=(*state.messages[:-1], last), pending=(call,)).to_dict()
    return json.dumps(data)  # the digest is still the original turn's


def another_turn(text: str) -> str:
    """A state of this run signed with the host secret, for another pending turn: the run
    does not wait on it (its row records the original turn's digest)."""
    state = state_of(text)
    call = ToolCall(id="a1", name="append_line", arguments={"text": CANARY})
    last = attrs.evolve(state.messages[-1], tool_calls=(call,))
    fields = attrs.asdict(state, recurse=False)
    fields.pop("digest")
    fields.update(messages=(*state.messages[:-1], last), pending=(call,))
    return SuspendedRunState.create(**fields).to_json()


DAMAGE: dict[str, Callable[[str], str]] = {
    "not-json": lambda text: "{" + CANARY,
    "not-an-object": lambda text: json.dumps([CANARY]),
    "wrong-shape": wrong_shape,
    "newer-version": newer_version,
    "not-signed": unsigned,
    "another-turn": another_turn,
}


def assert_still_waiting(store: AuditStore, target: str, run_id: str, text: str) -> None:
    record = store.get_run(run_id)
    assert record is not None
    assert (record["status"], record["suspended"], record["claimed_by"]) == (
        "suspended",
        True,
        None,
    )
    assert stored_state(target, run_id) == text  # kept, as it was: the evidence


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_state_that_cannot_be_resumed_is_refused_before_the_claim_commits(
    store_target: str, log: Path, damage: str
) -> None:
    """Tries to claim a waiting run whose stored state passes the store's byte check but is
    ``damage``: the claim raises ``SuspendedStateError`` (nothing else, no decoder's error),
    the run still waits unclaimed with its state kept, the message names the run and says to
    discard it and holds no byte of the state; ``load_suspended`` and a resume by the loop are
    refused the same way, no tool runs, and ``discard`` ends the run."""
    run_id, digest = suspend_append_run(store_target)
    bad = DAMAGE[damage](stored_state(store_target, run_id))
    rewrite_state(store_target, run_id, bad)
    with open_store(store_target) as store:
        with pytest.raises(SuspendedStateError) as refused:
            store.claim_suspended(run_id, digest=digest, claimant="cli on box (pid 1)")
        message = str(refused.value)
        assert run_id in message and "discard" in message and "still waits" in message
        assert CANARY not in message
        assert refused.value.__cause__ is None
        assert_still_waiting(store, store_target, run_id, bad)
        if store_kind(store_target) == "postgresql":  # the claim that hands a run to workers
            with pytest.raises(SuspendedStateError):
                store.approve_queued(run_id, digest=digest, decisions={"a1": True})  # type: ignore[attr-defined]
            assert_still_waiting(store, store_target, run_id, bad)
        loop = ToolLoop(ScriptedProvider(APPEND_TURNS[1:]), append_host(), persister=store)
        with pytest.raises((ApprovalError, AuditStoreError)) as resumed:
            loop.resume(run_id, approved=True)
        assert CANARY not in str(resumed.value)
        assert_still_waiting(store, store_target, run_id, bad)
        assert log_lines(log) == []
        store.discard(run_id)
        record = store.get_run(run_id)
        assert record is not None and record["status"] == "cancelled"


def test_a_state_that_is_not_json_is_a_clear_error_when_read(store_target: str) -> None:
    """``load_suspended`` (what ``runs show`` and ``runs approve`` read first) of a state that
    passes the byte check but is not JSON: ``SuspendedStateError`` naming the run, never the
    decoder's ``ValueError``."""
    run_id, _ = suspend_append_run(store_target)
    rewrite_state(store_target, run_id, "{" + CANARY)
    with open_store(store_target) as store, pytest.raises(SuspendedStateError) as refused:
        store.load_suspended(run_id)
    assert "discard" in str(refused.value)
    assert CANARY not in str(refused.value)


class SwapsBeforeClaiming:
    """The store, with another writer of it replacing the state between the loop's read of
    it and its claim: the moment a check-then-read race would hit."""

    def __init__(self, store: AuditStore, target: str, swap: Callable[[str], str]) -> None:
        self._store = store
        self._target = target
        self._swap = swap

    def claim_suspended(
        self, run_id: str, *, digest: str | None = None, claimant: str | None = None
    ) -> Mapping[str, Any]:
        rewrite_state(self._target, run_id, self._swap(stored_state(self._target, run_id)))
        return self._store.claim_suspended(run_id, digest=digest, claimant=claimant)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


@pytest.mark.parametrize("swap", ["another-turn", "not-signed", "not-json"])
def test_a_state_swapped_between_the_loop_s_check_and_the_claim_leaves_the_run_waiting(
    store_target: str, log: Path, swap: str
) -> None:
    """The loop reads and verifies the state, then claims; in between, the state is replaced
    (a signed state of another turn, an unsigned one, garbage) with the store's byte check
    kept intact. The claim refuses it: the run still waits unclaimed (before, the claim
    committed and the loop noticed only after, leaving the run running with its state
    wiped), nothing ran, and an approval of the real turn is still possible once the state
    is put back."""
    run_id, digest = suspend_append_run(store_target)
    original = stored_state(store_target, run_id)
    with open_store(store_target) as store:
        racing = SwapsBeforeClaiming(store, store_target, DAMAGE[swap])
        loop = ToolLoop(ScriptedProvider(APPEND_TURNS[1:]), append_host(), persister=racing)  # type: ignore[arg-type]
        with pytest.raises((ApprovalError, AuditStoreError)) as refused:
            loop.resume(run_id, approved=True, digest=digest)
        assert CANARY not in str(refused.value)
        record = store.get_run(run_id)
        assert record is not None
        assert (record["status"], record["claimed_by"]) == ("suspended", None)
        assert log_lines(log) == []
        rewrite_state(store_target, run_id, original)
        done = ToolLoop(ScriptedProvider(APPEND_TURNS[1:]), append_host(), persister=store).resume(
            run_id, approved=True, digest=digest
        )
    assert done.content == "appended it"
    assert len(log_lines(log)) == 1


@pytest.mark.parametrize("damage", ["not-json", "newer-version"])
def test_the_command_line_says_why_a_waiting_run_cannot_be_resumed(
    store_target: str, log: Path, damage: str
) -> None:
    """``runs approve`` of such a run exits 1 with the store's words (no traceback, no byte
    of the state), the run still waits; ``runs show --json`` says why under ``pending``
    (``problem``), as it does for a state it can read but not verify, rather than a bare
    ``null`` that reads as "not waiting"."""
    from click.testing import CliRunner

    from nr_llm_core.cli import main

    run_id, _ = suspend_append_run(store_target)
    bad = DAMAGE[damage](stored_state(store_target, run_id))
    rewrite_state(store_target, run_id, bad)
    approve = CliRunner().invoke(main, ["runs", "approve", run_id, "--db", store_target, "--yes"])
    assert approve.exit_code == 1, approve.output
    assert "cannot be resumed" in approve.output and "still waits" in approve.output
    assert "Traceback" not in approve.output and CANARY not in approve.output
    shown = CliRunner().invoke(main, ["runs", "show", run_id, "--db", store_target, "--json"])
    assert shown.exit_code == 0, shown.output
    out = json.loads(shown.output)
    assert out["run"]["status"] == "suspended"
    assert "cannot be resumed" in out["pending"]["problem"]
    assert CANARY not in shown.output
    with open_store(store_target) as store:
        assert_still_waiting(store, store_target, run_id, bad)
    assert log_lines(log) == []
