"""The playground in a real browser: Debian's chromium, headless, driven by Playwright.

One browser for the module and a fresh page per test (``conftest.py``). Every page is
screenshotted into ``test-artifacts/screenshots/`` (not committed). A missing
``/usr/bin/chromium`` fails these tests: CI installs it (``scripts/test``), and a skipped
browser test would hide a broken page.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from nr_llm_core.cli._output import visible
from nr_llm_core.playground import PlaygroundServer

from ._browser import REBOUND, new_page
from ._browser import shot as _shot
from ._fixtures import (
    ARGUMENT_CANARY,
    GATE,
    TABLE_COLUMNS,
    TABLE_ROWS,
    XSS_LABEL,
    XSS_LINK,
    XSS_TEXT,
)


def _open(page: Any, server: PlaygroundServer, view: str) -> None:
    page.goto(f"{server.url}#{view}")
    page.wait_for_selector("body[data-ready=true]")
    page.wait_for_selector(f"#view-{view}:not([hidden])")


def _no_script_ran(page: Any) -> None:
    assert page.evaluate("window.__pwned") is None
    assert page.watch.dialogs == []
    assert page.watch.errors == []


def _texts(locator: Any) -> list[str]:
    return [locator.nth(i).inner_text() for i in range(locator.count())]


def test_hostile_artifacts_render_as_text(page: Any, server: PlaygroundServer) -> None:
    _open(page, server, "tools")
    page.click("button[data-tool=payload]")
    page.click("#tool-run")
    page.wait_for_selector("#tool-output .tab-panel[data-tab=Artifacts]")
    output = page.locator("#tool-output")
    figures = output.locator("figure.artifact")
    assert figures.count() == 3
    assert [figures.nth(i).get_attribute("data-render") for i in range(3)] == [
        "text",
        "text",
        "table",
    ]
    assert figures.nth(0).locator("pre").inner_text() == XSS_TEXT
    assert XSS_LABEL in figures.nth(0).locator("figcaption").inner_text()
    assert figures.nth(1).locator("pre").inner_text() == XSS_LINK
    for tag in ("img", "script", "a", "iframe", "b"):
        assert output.locator(tag).count() == 0, tag
    _shot(page, "tools-artifacts")
    page.click("#tool-output button[data-tab=Content]")
    content = page.locator("#tool-output .tab-panel pre").inner_text()
    assert content == "payload content </script><script>window.__pwned=6</script>"
    page.click("#tool-output button[data-tab=Persisted]")
    assert '"content_redacted": true' in page.locator("#tool-output .tab-panel pre").inner_text()
    _no_script_ran(page)


def test_a_table_renders_exactly_the_cells_given(page: Any, server: PlaygroundServer) -> None:
    _open(page, server, "tools")
    page.click("button[data-tool=payload]")
    page.click("#tool-run")
    table = page.locator("#tool-output figure[data-render=table] table")
    table.wait_for()
    assert _texts(table.locator("thead th")) == TABLE_COLUMNS
    rows = table.locator("tbody tr")
    assert rows.count() == len(TABLE_ROWS)
    for i, expected in enumerate(TABLE_ROWS):
        cells = rows.nth(i).locator("td")
        assert _texts(cells) == [visible(cell) for cell in expected]
    # The invisible characters are shown as escapes in their own marked spans.
    marks = _texts(rows.nth(2).locator("span.ctl"))
    assert marks == ["\\u202e", "\\u202c", "\\u200b", "\\x07", "\\x00", "\\x1b", "\\x9b"]
    _no_script_ran(page)


ODD_ARTIFACTS = [
    {"type": "chart", "label": "unknown type", "data": {"points": [1, 2]}},
    {"type": "table", "label": "short row", "data": {"columns": ["a", "b"], "rows": [["1"]]}},
    {"type": "table", "label": "number cell", "data": {"columns": ["a"], "rows": [[1]]}},
    {"type": "text", "label": "number text", "data": {"text": 5}},
    {"type": "table", "label": "no rows", "data": {"columns": ["a"]}},
]


def test_unknown_and_malformed_artifacts_render_as_json(
    page: Any, server: PlaygroundServer
) -> None:
    # The server only ever sends bounded TABLE/TEXT artifacts; the renderer must still cope
    # with anything, so it is called directly with shapes the host would never produce.
    _open(page, server, "tools")
    rendered = page.evaluate(
        """(artifacts) => {
            const box = document.createElement("div");
            box.id = "odd";
            window.nrLlm.renderArtifacts(box, artifacts);
            document.body.appendChild(box);
            return [...box.querySelectorAll("figure")].map(
                (f) => [f.dataset.render, f.querySelector("pre").textContent]);
        }""",
        ODD_ARTIFACTS,
    )
    assert [r[0] for r in rendered] == ["json"] * len(ODD_ARTIFACTS)
    assert [json.loads(r[1]) for r in rendered] == ODD_ARTIFACTS
    assert page.locator("#odd table").count() == 0
    page.evaluate("document.getElementById('odd').remove()")
    _no_script_ran(page)


def test_the_omitted_marker_is_shown_with_its_reason(page: Any, server: PlaygroundServer) -> None:
    _open(page, server, "tools")
    page.click("button[data-tool=huge]")
    page.click("#tool-run")
    page.click("#tool-output button[data-tab=Artifacts]")
    marker = page.locator("#tool-output .omitted")
    marker.wait_for()
    assert "Artifacts omitted" in marker.inner_text()
    assert marker.locator(".reason").inner_text() == "exceeded 50000 bytes"


def test_the_example_arguments_come_from_the_schema(page: Any, server: PlaygroundServer) -> None:
    _open(page, server, "tools")
    page.click("button[data-tool=echo]")
    assert page.input_value("#tool-args").replace(" ", "").replace("\n", "") == '{"text":"hello"}'


def test_a_tool_that_requires_approval_runs_on_approve_and_run(
    page: Any, server: PlaygroundServer
) -> None:
    """The button "Approve and run" asks first; "Yes, run it" runs it (and records it, ADR 0044: see
    test_runner_approval.py)."""
    _open(page, server, "tools")
    page.click("button[data-tool=transfer]")
    assert page.inner_text("#tool-run") == "Approve and run"
    page.click("#tool-run")
    page.click("#tool-confirm .confirm-run")
    page.click("#tool-output button[data-tab=Content]")
    assert page.locator("#tool-output .tab-panel pre").inner_text() == "transferred"
    page.click("button[data-tool=echo]")
    assert page.inner_text("#tool-run") == "Run tool"


def test_an_astral_format_character_is_one_unambiguous_escape(
    page: Any, server: PlaygroundServer
) -> None:
    """Tries U+E0001 (a tag character) on the page: its escape must not read as ``\\ue000``
    followed by ``1``, and must match the command line's."""
    _open(page, server, "tools")
    text = "tag\U000e0001x bidi\u202e"
    marks = page.evaluate(
        """(text) => {
            const box = document.createElement("div");
            window.nrLlm.appendVisible(box, text);
            return [...box.querySelectorAll("span.ctl")].map((s) => s.textContent);
        }""",
        text,
    )
    assert marks == ["\\U000e0001", "\\u202e"]
    assert all(mark in visible(text) for mark in marks)


def _kinds(page: Any) -> list[str]:
    items = page.locator("#run-steps > li")
    return [items.nth(i).get_attribute("data-kind") for i in range(items.count())]


def _start(page: Any, server: PlaygroundServer, provider: str, level: str = "full") -> None:
    _open(page, server, "agent")
    page.select_option("#agent-provider", provider)
    page.select_option("#agent-privacy", level)
    page.click("#agent-run")


@pytest.mark.parametrize("level", ["none", "metadata"])
def test_a_level_without_content_shows_no_argument_in_the_live_steps(
    page: Any, server: PlaygroundServer, level: str
) -> None:
    """Tries to see the model's requested arguments (and the tool's echo of them) anywhere
    on the page while a run at a level that keeps no content is shown."""
    _start(page, server, "canary", level)
    page.wait_for_selector("#run-status[data-state=done]")
    assert _kinds(page) == ["request", "llm", "tool", "request", "llm"]
    # Open every step and every tab: the canary must be in none of them.
    for details in page.locator("#run-steps details").all():
        details.evaluate("(n) => { n.open = true; }")
        for button in details.locator("button.tab").all():
            button.click()
            assert ARGUMENT_CANARY not in page.evaluate("document.body.textContent")
    # Names are host-checked metadata; at none not even they are kept.
    model = page.locator("#run-steps > li[data-kind=llm]").first
    summary = model.locator("summary").inner_text()
    assert ("model · asks for echo" in summary) is (level == "metadata")
    tool = page.locator("#run-steps > li[data-kind=tool]").first
    assert _texts(tool.locator("button.tab")) == ["Step"]
    assert tool.locator(".not-kept").inner_text() == (
        f"content not shown at privacy level {level}: the live view shows what the audit "
        "store keeps"
    )
    assert ARGUMENT_CANARY not in page.evaluate("document.body.textContent")
    _shot(page, f"agent-live-{level}")
    _no_script_ran(page)


def test_at_full_the_live_steps_show_the_arguments(page: Any, server: PlaygroundServer) -> None:
    """The counterpart: a level that keeps content shows it live (the canary is found)."""
    _start(page, server, "canary", "full")
    page.wait_for_selector("#run-status[data-state=done]")
    tool = page.locator("#run-steps > li[data-kind=tool]").first
    tool.locator("button[data-tab=Arguments]").click()
    assert ARGUMENT_CANARY in tool.locator(".tab-panel").inner_text()


def test_steps_appear_while_the_stream_is_open(page: Any, server: PlaygroundServer) -> None:
    GATE.clear()
    try:
        _start(page, server, "gated")
        page.wait_for_selector("#run-steps > li:nth-child(5)")
        # The gate tool is running: the stream is open and five steps are already shown.
        assert page.get_attribute("#run-status", "data-state") == "running"
        assert _kinds(page) == ["request", "llm", "tool", "request", "llm"]
        _shot(page, "agent-running")
    finally:
        GATE.set()
    page.wait_for_selector("#run-status[data-state=done]")
    assert _kinds(page) == ["request", "llm", "tool", "request", "llm", "tool", "request", "llm"]
    indices = page.locator("#run-steps > li")
    assert [indices.nth(i).get_attribute("data-index") for i in range(8)] == [
        str(i) for i in range(8)
    ]
    tool = page.locator("#run-steps > li[data-kind=tool]").first
    assert _texts(tool.locator("button.tab")) == ["Arguments", "Result", "Artifacts", "Step"]
    assert tool.locator(".tab-panel pre").inner_text() == "echo: t0"
    assert page.locator("#run-final pre").inner_text() == "finished"
    _shot(page, "agent-done")
    _no_script_ran(page)


@pytest.mark.parametrize(("button", "result"), [("approve", "transferred"), ("deny", "approve")])
def test_approve_and_deny_resume_the_run_in_place(
    page: Any, server: PlaygroundServer, button: str, result: str
) -> None:
    _start(page, server, "approval")
    page.wait_for_selector("#run-status[data-state=awaiting]")
    assert "transfer" in page.locator("#run-approval").inner_text()
    _shot(page, f"agent-awaiting-{button}")
    page.click(f"#{button}")
    page.wait_for_selector("#run-status[data-state=done]")
    assert _kinds(page) == ["request", "llm", "approval", "tool", "request", "llm"]
    tool = page.locator("#run-steps > li[data-kind=tool]")
    assert result in tool.locator(".tab-panel pre").inner_text()
    _shot(page, f"agent-after-{button}")
    _no_script_ran(page)


def test_the_runs_view_lists_the_store(page: Any, server: PlaygroundServer) -> None:
    # Its own runs, so that it passes alone and in any order.
    with httpx.Client(
        base_url=server.origin, headers={"X-NR-LLM-Token": server.token}, timeout=30
    ) as client:
        started = [
            client.post(
                "/api/runs",
                json={"prompt": "go", "provider": "echoes"},
                headers={"Accept": "application/json"},
            ).json()["run_id"]
            for _ in range(2)
        ]
    _open(page, server, "runs")
    rows = page.locator("#runs-table tbody tr")
    rows.first.wait_for()
    # Each row's button shows the id's first characters; its title is the whole id.
    listed = [
        rows.nth(i).locator("button.link").get_attribute("title") for i in range(rows.count())
    ]
    assert listed.index(started[1]) < listed.index(started[0])  # newest first
    rows.nth(listed.index(started[1])).locator("button.link").click()
    page.wait_for_selector("#run-detail:not([hidden]) ol.steps li")
    assert started[1] in page.locator("#run-detail h2").inner_text()
    _shot(page, "runs")
    _no_script_ran(page)


def test_phone_width(browser: Any, server: PlaygroundServer) -> None:
    context, page = new_page(browser, viewport={"width": 390, "height": 844}, is_mobile=True)

    def fits(name: str) -> None:
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"the {name} page scrolls sideways on a phone"
        _shot(page, f"{name}-phone")

    try:
        page.goto(f"{server.url}#tools")
        page.wait_for_selector("body[data-ready=true]")
        page.click("button[data-tool=payload]")
        page.click("#tool-run")
        page.wait_for_selector("#tool-output figure")
        fits("tools")
        page.click("button.nav[data-view=agent]")
        page.select_option("#agent-provider", "echoes")
        page.click("#agent-run")
        page.wait_for_selector("#run-status[data-state=done]")
        fits("agent")
        page.click("button.nav[data-view=runs]")
        page.wait_for_selector("#runs-table tbody tr")
        fits("runs")
    finally:
        context.close()


def test_without_the_token_or_from_a_foreign_host_nothing_loads(
    browser: Any, server: PlaygroundServer
) -> None:
    context = browser.new_context()
    page = context.new_page()
    try:
        response = page.goto(f"{server.origin}/")
        assert response.status == 401
        assert page.locator("#view-tools").count() == 0
        _shot(page, "refused-no-token")
        rebound = page.goto(f"http://{REBOUND}:{server.port}/?token={server.token}")
        assert rebound.status == 403
        assert page.locator("#view-tools").count() == 0
        _shot(page, "refused-foreign-host")
    finally:
        context.close()
