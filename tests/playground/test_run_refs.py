"""Every run the store lists can be opened, whatever its id holds: control characters (C0,
DEL, C1, a newline, an escape sequence), a "/", a "%" escape, quotes, markup, a bidi
override. The page builds a run's URL in one place, from the id's UTF-8 bytes in base64url
(``/api/run/{ref}``), and the server decodes it; the id is text on the page (textContent).
Over real HTTP on a real SQLite store, and in real headless chromium."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from nr_llm_core import ScriptedProvider
from nr_llm_core._audit_records import MAX_RUN_ID_BYTES
from nr_llm_core.audit import AgentRunPersister
from nr_llm_core.cli._output import visible
from nr_llm_core.playground import PlaygroundServer
from nr_llm_core.trace import RunStep

from ._browser import shot
from ._fixtures import start_server
from .test_browser_discard import TURNS, hostile_waiting_run

#: A finished run whose id holds what a URL path cannot carry as it is.
ODD_RUN = "odd\x01\x1b[31m\x7f\x85\n\t/%41 \"'<b>x</b>\u202eend"
#: A waiting run whose id holds a control character (paused elsewhere).
ODD_WAITING = "wait\x07\x9b\x1b]0;title\x07/%2F"
#: A plain run whose id is ODD_RUN's "%41" already decoded: a ref must never reach it.
DECODED_TWIN = "odd\x01\x1b[31m\x7f\x85\n\t/A \"'<b>x</b>\u202eend"


def ref(run_id: str) -> str:
    """The id as the page addresses it: base64url of its UTF-8 bytes, without padding."""
    return base64.urlsafe_b64encode(run_id.encode("utf-8")).decode("ascii").rstrip("=")


#: The longest id a run may have (MAX_RUN_ID_BYTES of UTF-8): listed, so it opens too. Ids
#: were unbounded, and one over 3,072 bytes made a ref the server refused (an adversarial pass).
LONGEST = "é" * (MAX_RUN_ID_BYTES // 2)


def _finished(store: AgentRunPersister, run_id: str) -> None:
    store.begin(run_id, privacy="full")
    store.record_step(run_id, RunStep.error(round=0, reason="a finished odd run"))
    store.settle(run_id, "completed", termination_reason="completed", iterations=0)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("run-refs") / "audit.db"
    with AgentRunPersister(path) as store:
        _finished(store, ODD_RUN)
        _finished(store, DECODED_TWIN)
        _finished(store, LONGEST)
    return path


@pytest.fixture
def waiting(db: Path, request: pytest.FixtureRequest) -> str:
    """A run waiting in the store under an id that starts with ODD_WAITING, fresh for each
    test: its state is signed with the host secret the test sees (set per test)."""
    run_id = f"{ODD_WAITING}\x01{request.node.name}"
    hostile_waiting_run(db, run_id)
    return run_id


@pytest.fixture(scope="module")
def server(db: Path) -> Iterator[PlaygroundServer]:
    srv = start_server(db, providers={"moving": lambda: ScriptedProvider(TURNS)})
    yield srv
    srv.stop()


def test_every_listed_run_opens_by_its_ref(client: httpx.Client, waiting: str) -> None:
    """Tries each id the store lists: its ref opens exactly that run (never the run whose id
    is its "%41" decoded), a waiting one with its approval view."""
    listed = [r["id"] for r in client.get("/api/runs").json()["runs"]]
    assert {ODD_RUN, waiting, DECODED_TWIN, LONGEST} <= set(listed)
    for run_id in listed:
        detail = client.get(f"/api/run/{ref(run_id)}")
        assert detail.status_code == 200, (run_id, detail.text)
        assert detail.json()["run"]["id"] == run_id
    approval = client.get(f"/api/run/{ref(waiting)}").json()["approval"]
    assert approval["waiting"] is True and approval["run_id"] == waiting
    assert approval["pending"][0]["name"] == "transfer"


def test_a_ref_that_is_not_one_is_refused(client: httpx.Client) -> None:
    """A ref with padding, a character outside base64url, bytes that are not UTF-8, or a
    second spelling of the same bytes names no run: 400, never another run."""
    assert client.get(f"/api/run/{ref(ODD_RUN)}=").status_code == 400
    assert client.get("/api/run/b2Rk+").status_code == 400
    assert client.get(f"/api/run/{ref('x')[:-1]}_").status_code == 400  # non-canonical bits
    not_utf8 = base64.urlsafe_b64encode(b"\xff\xfe").decode().rstrip("=")
    assert client.get(f"/api/run/{not_utf8}").status_code == 400
    assert client.get(f"/api/run/{ref('no such run')}").status_code == 404


def test_a_waiting_run_with_a_control_character_is_decided_by_ref(
    client: httpx.Client, db: Path, waiting: str
) -> None:
    """A resume by ref reaches exactly that run, and is refused as a run this playground did
    not pause (it still waits; the page discards it, below)."""
    resumed = client.post(f"/api/run/{ref(waiting)}/resume", json={"digest": "x"})
    assert resumed.status_code == 409
    assert resumed.json()["approval"]["run_id"] == waiting
    with AgentRunPersister(db) as store:
        assert store.get_run(waiting)["status"] == "suspended"  # type: ignore[index]


def test_the_page_opens_a_run_with_control_characters_in_its_id(
    page: Any, server: PlaygroundServer, db: Path, waiting: str
) -> None:
    """In the browser: the Runs view lists the odd runs, and picking each opens its detail
    (its id shown with its escapes, as text: no element made, no script run); the waiting
    one shows its pending calls and is discarded from there."""
    page.goto(f"{server.url}#runs")
    page.wait_for_selector("body[data-ready=true]")
    page.locator("#runs-table tbody tr").first.wait_for()
    for run_id in (ODD_RUN, waiting):
        index = page.evaluate(
            "(id) => [...document.querySelectorAll('#runs-table tbody tr')]"
            ".findIndex((r) => r.dataset.run === id)",
            run_id,
        )
        assert index >= 0
        page.locator("#runs-table tbody tr").nth(index).locator("button.link").click()
        page.wait_for_selector("#run-detail .run-summary")
        heading = page.locator("#run-detail h2").evaluate("(n) => n.textContent")
        # As every text the page shows: controls as escapes (newlines and tabs kept).
        assert heading == f"Run {visible(run_id, keep_newlines=True)}"
    box = page.locator("#run-detail .run-waiting")
    box.locator(".call").first.wait_for()
    box.locator("button.discard").click()
    box.locator(".discard-confirm").click()
    page.wait_for_selector("#run-detail .run-summary:has-text('status cancelled (discarded)')")
    shot(page, "run-ref-odd-ids")
    assert page.locator("main b, main img, main script").count() == 0
    assert page.watch.dialogs == [] and page.watch.errors == []
    with AgentRunPersister(db) as store:
        record = store.get_run(waiting)
    assert record is not None and record["termination_reason"] == "discarded"
