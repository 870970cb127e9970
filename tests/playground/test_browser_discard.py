"""A waiting run in real headless chromium (ADR 0037): a refused decision leaves the run shown
with the reason, a run another connection ended is shown gone and by whom, and Discard ends a
run after an explicit confirmation, from the approval view and from the Runs view. A hostile
tool name, claimant and run id (markup, a script end tag, a bidi override, an escape) are text:
no element is made, no script runs, no dialog opens; no tool runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from nr_llm_core import ScriptedProvider, SuspendedRunState, ToolLoop
from nr_llm_core.audit import AgentRunPersister
from nr_llm_core.cli._output import visible
from nr_llm_core.playground import PlaygroundServer
from nr_llm_core.playground._waiting import NOT_HELD

from ..store.test_claim_checks import CANARY, rewrite_state, stored_state, unsigned
from ._browser import shot as _shot
from ._fixtures import make_host, start_server

HOSTILE_TOOL = "<img src=x onerror=window.__pwned=21>\u202eevil"
HOSTILE_CLAIMANT = "<img src=x onerror=window.__pwned=22>\x1b[31m\u202eclaimant"
HOSTILE_RUN = "r\"'</script><img src=x onerror=window.__pwned=23>\u202erun"
TURNS = [
    {
        "content": "moving",
        "tool_calls": [
            {"id": "t1", "name": "transfer", "arguments": {"to": "bank"}},
            {"id": "h1", "name": HOSTILE_TOOL, "arguments": {}},
        ],
    },
    "moved",
]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("discard") / "audit.db"


@pytest.fixture(scope="module")
def server(db: Path) -> Iterator[PlaygroundServer]:
    srv = start_server(db, providers={"moving": lambda: ScriptedProvider(TURNS)})
    yield srv
    srv.stop()


def _pause(page: Any, server: PlaygroundServer) -> str:
    page.goto(f"{server.url}#agent")
    page.wait_for_selector("body[data-ready=true]")
    page.select_option("#agent-provider", "moving")
    page.select_option("#agent-privacy", "full")
    page.click("#agent-run")
    page.wait_for_selector("#run-status[data-state=awaiting]")
    run_id: str = page.locator("#run-approval").get_attribute("data-run")
    return run_id


def _inert(page: Any) -> None:
    """Nothing hostile became an element or ran."""
    assert page.locator("main img, main script, main iframe").count() == 0
    assert page.evaluate("window.__pwned") is None
    assert page.watch.dialogs == []
    # A refused request is logged by the browser itself; nothing else may be.
    assert [e for e in page.watch.errors if "status of 409" not in e] == []


def _record(db: Path, run_id: str) -> Any:
    with AgentRunPersister(db) as store:
        return store.get_run(run_id), [s["kind"] for s in store.steps(run_id)]


def _text(page: Any, selector: str) -> str:
    text: str = page.locator(selector).evaluate("(n) => n.textContent")
    return text


def _shown(value: str) -> str:
    """``value`` as the page shows it: each invisible character as its escape (the CLI's)."""
    return visible(value, keep_newlines=False)


def test_a_run_discarded_elsewhere_is_shown_gone_and_by_whom(
    page: Any, server: PlaygroundServer, db: Path
) -> None:
    """Another connection to the store discards the run the page waits on, as a hostile
    claimant: Approve is refused, the page says the run no longer waits and who discarded it
    (the claimant as text, its escape and bidi override visible), and nothing ran."""
    run_id = _pause(page, server)
    names = page.locator("#run-approval li.call strong")
    assert _text(page, "#run-approval li.call:nth-child(2) strong") == _shown(HOSTILE_TOOL)
    assert names.nth(1).locator("span.ctl").inner_text() == "\\u202e"
    with AgentRunPersister(db) as other:
        other.discard(run_id, claimant=HOSTILE_CLAIMANT)
    page.click("#approve")
    gone = page.locator("#run-approval .gone")
    gone.wait_for()
    assert f"This run no longer waits: run '{run_id}' was discarded by " in _text(page, ".gone")
    assert _shown(HOSTILE_CLAIMANT) in _text(page, "#run-approval .gone")
    assert [gone.locator("span.ctl").nth(i).inner_text() for i in range(2)] == [
        "\\x1b",
        "\\u202e",
    ]
    assert page.locator("#run-status").get_attribute("data-state") == "error"
    assert page.locator("#run-approval button").count() == 0
    _shot(page, "discard-gone-elsewhere")
    record, kinds = _record(db, run_id)
    assert record["termination_reason"] == "discarded" and "tool" not in kinds
    _inert(page)


def test_a_refused_decision_keeps_the_run_and_discard_ends_it_after_confirming(
    page: Any, server: PlaygroundServer, db: Path
) -> None:
    """The run's state fails the claim's checks: Approve is refused, and the run is still
    shown waiting with the reason (no byte of the state) and Approve disabled. Discard asks
    first: "Keep it waiting" changes nothing; "Yes, discard it" ends the run in the store."""
    run_id = _pause(page, server)
    rewrite_state(str(db), run_id, unsigned(stored_state(str(db), run_id)))
    page.click("#approve")
    page.locator("#run-approval .refusal").wait_for()
    assert _text(page, "#run-approval h3") == "Waiting for your approval"
    problem = _text(page, "#run-approval .problem")
    assert "cannot be resumed" in problem and "still waits" in problem
    assert _text(page, "#run-approval .refusal") == f"Refused: {problem}"
    assert page.is_disabled("#approve") and page.is_disabled("#deny")
    assert CANARY not in page.evaluate("document.body.textContent")
    confirm = page.locator("#run-approval .confirm-discard")
    assert confirm.is_hidden()
    page.click("#run-approval button.discard")
    assert confirm.is_visible()
    assert run_id in _text(page, "#run-approval .confirm-discard p")
    _shot(page, "discard-confirm")
    page.click("#run-approval .discard-cancel")
    assert confirm.is_hidden()
    assert _record(db, run_id)[0]["status"] == "suspended"
    page.click("#run-approval button.discard")
    page.click("#run-approval .discard-confirm")
    page.locator("#run-approval .gone").wait_for()
    assert _text(page, "#run-approval .gone").startswith(f"Discarded: run '{run_id}' was discarded")
    page.wait_for_selector("#run-status[data-state=discarded]")
    record, kinds = _record(db, run_id)
    assert (record["status"], record["termination_reason"]) == ("cancelled", "discarded")
    assert record["claimed_by"].startswith("playground on ") and "tool" not in kinds
    _inert(page)


def hostile_waiting_run(db: Path, run_id: str = HOSTILE_RUN) -> None:
    """A run ``run_id`` waiting in the store, paused by another process (so this
    playground does not hold its provider): a real pause, its state re-made for the id."""
    with AgentRunPersister(db) as store:
        paused = ToolLoop(ScriptedProvider(TURNS), make_host(), persister=store).run("go")
        assert paused.suspended is not None
        store.discard(paused.run_id)
        fields = attrs.asdict(paused.suspended, recurse=False)
        fields.pop("digest")
        state = SuspendedRunState.create(**{**fields, "run_id": run_id})
        store.begin(run_id, privacy="full")
        store.suspend(run_id, state.to_dict())


def test_a_hostile_run_id_waiting_in_the_store_is_discarded_from_the_runs_view(
    page: Any, server: PlaygroundServer, db: Path
) -> None:
    """A run this playground did not pause, with an id full of markup (a quote, a script end
    tag, a "/", a bidi override): the Runs view shows its pending calls and why it cannot be
    decided here, and discards it after the confirmation; the id is text throughout."""
    hostile_waiting_run(db)
    page.goto(f"{server.url}#runs")
    page.wait_for_selector("body[data-ready=true]")
    page.locator("#runs-table tbody tr").first.wait_for()
    index = page.evaluate(
        "(id) => [...document.querySelectorAll('#runs-table tbody tr')]"
        ".findIndex((r) => r.dataset.run === id)",
        HOSTILE_RUN,
    )
    assert index >= 0
    page.locator("#runs-table tbody tr").nth(index).locator("button.link").click()
    waiting = page.locator("#run-detail .run-waiting")
    waiting.locator(".call").first.wait_for()
    assert _text(page, "#run-detail h2") == f"Run {_shown(HOSTILE_RUN)}"
    assert _text(page, "#run-detail .run-waiting .problem") == NOT_HELD
    shown_tool = _text(page, "#run-detail .run-waiting li.call:nth-child(2) strong")
    assert shown_tool == _shown(HOSTILE_TOOL)
    assert waiting.locator("#approve").count() == 0  # decided where it paused, or discarded
    waiting.locator("button.discard").click()
    assert _shown(HOSTILE_RUN) in _text(page, "#run-detail .confirm-discard p")
    waiting.locator(".discard-confirm").click()
    # The detail is read again: the run is cancelled now, and the banner says who ended it.
    page.wait_for_selector("#run-detail .run-summary:has-text('status cancelled (discarded)')")
    assert _text(page, "#run-detail > p.gone") == (
        f"Discarded: run {_shown(repr(HOSTILE_RUN))} was discarded"
    )
    assert page.locator("#run-detail .run-waiting").count() == 0
    _shot(page, "discard-hostile-run-id")
    record, kinds = _record(db, HOSTILE_RUN)
    assert record["termination_reason"] == "discarded" and "tool" not in kinds
    _inert(page)
