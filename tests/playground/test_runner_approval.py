"""The tool runner and a tool that requires approval (ADR 0044): it runs only after the
operator's explicit confirmation, and every such call is recorded in the audit store as a run
of its own (who approved it, the approval, the call), at the level chosen or the store's
stricter one. Without a store it never runs. Over real HTTP into a real SQLite file, and in
real headless chromium."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from nr_llm_core import ToolResult, ToolSpec, hookimpl
from nr_llm_core.audit import AgentRunPersister
from nr_llm_core.host import ToolHost
from nr_llm_core.playground import PlaygroundServer

from ._browser import shot
from ._fixtures import make_host, start_server

CANARY = "CANARY-runner-approval-3b9d"
#: Each call the tool ran, in order: the test's way to say whether it ran.
CALLS: list[dict[str, Any]] = []


class Wire:
    """Sends money: needs a human's approval."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        schema = {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}
        return ToolSpec(
            "wire",
            "Sends money.",
            schema,
            group="test",
            data_class="public",
            requires_approval=True,
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        CALLS.append(dict(arguments))
        return ToolResult.text("sent")


def wire_host() -> ToolHost:
    host = make_host()
    host.register(Wire())
    return host


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("runner-approval") / "audit.db"


@pytest.fixture(scope="module")
def server(db: Path) -> Iterator[PlaygroundServer]:
    srv = start_server(db, host=wire_host())
    yield srv
    srv.stop()


@pytest.fixture(autouse=True)
def _no_calls_yet() -> None:
    CALLS.clear()


def _runs(db: Path) -> list[Any]:
    with AgentRunPersister(db) as store:
        return store.list_runs(1000)


def _files(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in db.parent.iterdir() if p.is_file())


def test_a_confirmed_call_is_recorded_as_a_run_with_its_approval(
    client: httpx.Client, db: Path
) -> None:
    """Tries to run a tool that requires approval through the tool runner without leaving a
    trace: the confirmed call must run once and be a run in the store (completed, who
    approved it, an approval step, then the tool step) that the answer names."""
    before = len(_runs(db))
    body = {"arguments": {"to": "bank"}, "approved": True, "privacy": "full"}
    answer = client.post("/api/tools/wire/invoke", json=body)
    assert answer.status_code == 200, answer.text
    shown = answer.json()
    assert shown["content"] == "sent" and CALLS == [{"to": "bank"}]
    assert len(_runs(db)) == before + 1
    run_id = shown["run_id"]
    with AgentRunPersister(db) as store:
        record = store.get_run(run_id)
        steps = [s["step"] for s in store.steps(run_id)]
    assert record is not None
    assert (record["status"], record["privacy_level"]) == ("completed", "full")
    assert record["meta"]["provider"] == "tool runner"
    assert record["meta"]["approved_by"].startswith("playground on ")
    assert [s["kind"] for s in steps] == ["approval", "tool"]
    assert list(steps[0]["approvals"].values()) == [True]
    assert (steps[1]["tool_name"], steps[1]["tool_arguments"]) == ("wire", {"to": "bank"})
    assert shown["persisted"] == steps[1] | {"duration_ms": shown["persisted"]["duration_ms"]}


def test_an_unconfirmed_call_runs_nothing_and_records_nothing(
    client: httpx.Client, db: Path
) -> None:
    """Tries the call without the confirmation (absent, or a truthy value that is not
    ``true``): refused with 409 saying how to run it; the tool never runs, no run begins."""
    before = len(_runs(db))
    for approved in (None, 1, "true", False):
        body = {"arguments": {"to": "bank"}, "approved": approved}
        refused = client.post("/api/tools/wire/invoke", json=body)
        assert refused.status_code == 409
        assert "requires approval" in refused.json()["error"]
        assert "recorded in the audit store" in refused.json()["error"]
    assert CALLS == [] and len(_runs(db)) == before


def test_at_metadata_no_argument_reaches_the_database(client: httpx.Client, db: Path) -> None:
    """The recorded run keeps what its level keeps: at metadata, a canary argument is in no
    byte of the database files, though the tool ran with it."""
    body = {"arguments": {"to": CANARY}, "approved": True, "privacy": "metadata"}
    shown = client.post("/api/tools/wire/invoke", json=body).json()
    assert CALLS == [{"to": CANARY}]
    with AgentRunPersister(db) as store:
        record = store.get_run(shown["run_id"])
    assert record is not None and record["privacy_level"] == "metadata"
    assert CANARY.encode() not in _files(db)


def test_without_a_store_it_never_runs(tmp_path: Path) -> None:
    """With no audit store there is nowhere to record the call: a confirmed call is refused
    (409, saying how to run it) and the tool does not run. A tool that needs no approval
    still runs."""
    srv = start_server(None, host=wire_host())
    try:
        with httpx.Client(
            base_url=srv.origin, headers={"X-NR-LLM-Token": srv.token}, timeout=30
        ) as client:
            body = {"arguments": {"to": "bank"}, "approved": True}
            refused = client.post("/api/tools/wire/invoke", json=body)
            assert refused.status_code == 409
            assert "no audit store" in refused.json()["error"]
            echo = client.post("/api/tools/echo/invoke", json={"arguments": {"text": "x"}})
            assert echo.json()["content"] == "echo: x"
    finally:
        srv.stop()
    assert CALLS == []


def test_the_page_asks_first_and_names_the_recorded_run(
    page: Any, server: PlaygroundServer, db: Path
) -> None:
    """In the browser: "Approve and run" only asks (the tool has not run, nothing is
    recorded); "Cancel" changes nothing; "Yes, run it" runs it once and shows the id of the
    run that records it, which the store holds."""
    before = len(_runs(db))
    page.goto(f"{server.url}#tools")
    page.wait_for_selector("body[data-ready=true]")
    page.click("button[data-tool=wire]")
    page.fill("#tool-args", '{"to": "bank"}')
    assert page.locator("#tool-run").inner_text() == "Approve and run"
    confirm = page.locator("#tool-confirm")
    assert confirm.is_hidden()
    page.click("#tool-run")
    assert confirm.is_visible()
    assert "recorded in the audit store" in confirm.inner_text()
    shot(page, "runner-approval-confirm")
    page.click("#tool-confirm .confirm-cancel")
    assert confirm.is_hidden()
    assert CALLS == [] and len(_runs(db)) == before
    page.click("#tool-run")
    page.click("#tool-confirm .confirm-run")
    recorded = page.locator("#tool-output .recorded")
    recorded.wait_for()
    run_id = recorded.get_attribute("data-run")
    assert recorded.inner_text() == f"Approved by you and recorded as run {run_id}."
    assert CALLS == [{"to": "bank"}] and len(_runs(db)) == before + 1
    with AgentRunPersister(db) as store:
        assert store.get_run(str(run_id)) is not None
    shot(page, "runner-approval-recorded")
    assert page.watch.dialogs == [] and page.watch.errors == []
