"""The playground shows which provider a run waits with and, after an allowed change, which
went on (ADR 0036), in real headless chromium, as text only: the approval view names the
provider the run was suspended with; a run resumed elsewhere (by ``ToolLoop.resume`` with
``allow_provider_change=True`` on the OpenAI adapter over real HTTP, into the playground's own
store) shows both providers in its Runs view, a hostile model name (markup, an escape sequence,
a bidi override) rendered inert and visible."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nr_llm_core import ScriptedProvider, ToolLoop
from nr_llm_core.playground import PlaygroundServer

from ..loop._tools import Writer
from ..loop._wire import WireServer
from ..loop.test_openai_wire import text_reply
from ..loop.test_provider_change import WRITE, host_with, openai
from ._browser import shot as _shot
from ._fixtures import start_server
from .test_browser_approval import TURNS

HOSTILE_MODEL = "m<img src=x onerror=window.__pwned=1>\x1b[31m\u202eend"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("provider-change") / "audit.db"


@pytest.fixture(scope="module")
def server(db: Path) -> Iterator[PlaygroundServer]:
    srv = start_server(db, providers={"long": lambda: ScriptedProvider(TURNS)})
    yield srv
    srv.stop()


def _nothing_ran(page: Any) -> None:
    assert page.evaluate("window.__pwned") is None
    assert page.watch.dialogs == []
    assert page.watch.errors == []


def resumed_elsewhere(db: Path, level: str, model: str) -> str:
    """A run of the playground's store, suspended by the scripted provider and resumed on the
    OpenAI adapter with ``model`` (the change allowed), at ``level``; its id."""
    from nr_llm_core.audit import AgentRunPersister

    writer = Writer()
    with AgentRunPersister(db, privacy=level) as store:
        paused = ToolLoop(ScriptedProvider([WRITE]), host_with(writer), persister=store).run("go")
        with WireServer([text_reply("Noted.")]) as wire:
            loop = ToolLoop(openai(wire.url, model), host_with(writer), persister=store)
            loop.resume(paused.run_id, approved=True, allow_provider_change=True)
    return paused.run_id


def test_the_approval_view_names_the_provider_the_run_waits_with(
    page: Any, server: PlaygroundServer
) -> None:
    page.goto(f"{server.url}#agent")
    page.wait_for_selector("body[data-ready=true]")
    page.select_option("#agent-provider", "long")
    page.click("#agent-run")
    page.wait_for_selector("#run-status[data-state=awaiting]")
    shown = page.locator("#run-approval .suspended-with")
    assert shown.inner_text() == "suspended with provider ScriptedProvider (no model)"
    _nothing_ran(page)


@pytest.mark.parametrize(
    ("level", "model", "expected"),
    [
        ("metadata", "gpt-x", "resumed with OpenAIChatProvider (model gpt-x)"),
        ("metadata", HOSTILE_MODEL, "resumed with OpenAIChatProvider (model [unrecognised-model])"),
        (
            "full",
            HOSTILE_MODEL,
            "resumed with OpenAIChatProvider (model m<img src=x onerror=window.__pwned=1>"
            "\\x1b[31m\\u202eend)",
        ),
    ],
    ids=["plain", "hostile-at-metadata", "hostile-at-full"],
)
def test_the_runs_view_shows_a_change_of_provider_as_text(
    page: Any, server: PlaygroundServer, db: Path, level: str, model: str, expected: str
) -> None:
    """The run's detail says at which step the provider changed, which one suspended it and
    which went on, as the level stored them: a plain model name as it is; at ``metadata`` a
    hostile one by the filter's placeholder; at ``full`` verbatim, as text (no element made,
    no script run, the controls as visible escapes)."""
    run_id = resumed_elsewhere(db, level, model)
    page.goto(f"{server.url}#runs")
    page.wait_for_selector("body[data-ready=true]")
    button = page.locator(f"#runs-table button.link[title='{run_id}']")
    button.wait_for()
    button.click()
    change = page.locator("#run-detail .provider-change")
    change.first.wait_for()
    assert change.count() == 1
    text = change.inner_text()
    assert text.startswith("provider changed at #")
    assert "approval: suspended with ScriptedProvider (no model), " in text
    assert text.endswith(expected)
    assert change.locator("img").count() == 0
    assert page.locator("#run-detail img").count() == 0
    _shot(page, f"runs-provider-change-{level}")
    _nothing_ran(page)
