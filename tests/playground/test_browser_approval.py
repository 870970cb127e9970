"""The playground's approval view in real headless chromium: every pending call's complete
arguments as pretty JSON text (5,000 characters, nested, hostile strings), nothing parsed as
markup, no control character rendered raw; a run at privacy level none shows no arguments and
approving it needs an explicit tick.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from nr_llm_core.playground import PlaygroundServer
from nr_llm_core.providers import ScriptedProvider

from ._browser import shot as _shot
from ._fixtures import start_server

CANARY = "CANARY-approval-5d1e"
HOSTILE = (
    f"{CANARY} </script><script>window.__pwned=7</script><img src=x onerror=window.__pwned=8>"
    " rlo\u202eevil ansi\x1b[31mred zw\u200b c1\x85 del\x7f ls\u2028 nl\nline"
)
LONG_ARGS: dict[str, Any] = {
    "to": HOSTILE,
    "items": [
        {"n": i, "note": "x" * 40, "deep": {"a": [i, {"b": "y", "c": None, "d": True}]}}
        for i in range(50)
    ],
    "tail": "".join(str(i % 10) for i in range(500)),
}
ECHO_ARGS = {"text": "hi"}
TURNS = [
    {
        "content": "moving",
        "tool_calls": [
            {"id": "t1", "name": "transfer", "arguments": LONG_ARGS},
            {"id": "e1", "name": "echo", "arguments": ECHO_ARGS},
        ],
    },
    "moved",
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlaygroundServer]:
    db = tmp_path_factory.mktemp("approval") / "audit.db"
    srv = start_server(db, providers={"long": lambda: ScriptedProvider(TURNS)})
    yield srv
    srv.stop()


def _pause(page: Any, server: PlaygroundServer, level: str) -> Any:
    page.goto(f"{server.url}#agent")
    page.wait_for_selector("body[data-ready=true]")
    page.select_option("#agent-provider", "long")
    page.select_option("#agent-privacy", level)
    page.click("#agent-run")
    page.wait_for_selector("#run-status[data-state=awaiting]")
    return page.locator("#run-approval")


def _nothing_ran(page: Any) -> None:
    assert page.evaluate("window.__pwned") is None
    assert page.watch.dialogs == []
    assert page.watch.errors == []


def test_the_approval_view_shows_every_argument_as_text(
    page: Any, server: PlaygroundServer
) -> None:
    assert len(json.dumps(LONG_ARGS)) > 5000
    box = _pause(page, server, "metadata")
    calls = box.locator("li.call")
    assert calls.count() == 2
    assert calls.nth(0).locator("code.call-id").inner_text() == "t1"
    assert "transfer" in calls.nth(0).inner_text()
    assert calls.nth(0).locator(".chip").inner_text() == "needs approval"
    assert calls.nth(1).locator(".chip").inner_text() == "runs on resume"
    assert re.fullmatch(r"[0-9a-f]{64}", box.locator("code.digest").inner_text())
    blocks = box.locator("pre.json")
    texts = [blocks.nth(i).evaluate("(n) => n.textContent") for i in range(blocks.count())]
    # The whole arguments, pretty-printed, as text: the shown text decodes to exactly them.
    assert [json.loads(t) for t in texts] == [LONG_ARGS, ECHO_ARGS]
    assert texts[0].startswith('{\n  "to": "CANARY')
    assert '\n  "items": [\n    {\n      "n": 0,' in texts[0]
    # Invisible characters are JSON escapes in marked spans; ESC is JSON's own escape.
    marks = blocks.nth(0).locator("span.ctl")
    assert [marks.nth(i).inner_text() for i in range(marks.count())] == [
        "\\u202e",
        "\\u200b",
        "\\u0085",
        "\\u007f",
        "\\u2028",
    ]
    assert "ansi\\u001b[31mred" in texts[0]
    # Markup stayed text, and nothing is cut or hidden in an inner scroll box.
    for tag in ("script", "img", "b", "a", "iframe"):
        assert box.locator(tag).count() == 0, tag
    sizes = blocks.nth(0).evaluate("(n) => [n.scrollHeight, n.clientHeight]")
    assert sizes[0] <= sizes[1] + 1
    _shot(page, "approval-long-arguments")
    page.click("#approve")
    page.wait_for_selector("#run-status[data-state=done]")
    tool = page.locator("#run-steps > li[data-kind=tool]").first
    assert "tool · transfer" in tool.locator("summary").inner_text()
    # The live steps follow the level (metadata): the arguments were shown to approve them,
    # and nowhere else.
    assert CANARY not in page.locator("#run-steps").evaluate("(n) => n.textContent")
    _nothing_ran(page)


def test_at_none_no_argument_is_shown_and_approving_needs_a_tick(
    page: Any, server: PlaygroundServer
) -> None:
    box = _pause(page, server, "none")
    assert box.locator(".not-shown").inner_text() == "arguments not shown at privacy level none"
    assert box.locator("pre").count() == 0
    assert CANARY not in box.evaluate("(n) => n.textContent")
    assert box.locator("li.call").count() == 2
    assert page.is_disabled("#approve")
    assert page.is_enabled("#deny")
    _shot(page, "approval-none")
    page.check("#blind")
    assert page.is_enabled("#approve")
    page.uncheck("#blind")
    assert page.is_disabled("#approve")
    page.check("#blind")
    page.click("#approve")
    page.wait_for_selector("#run-status[data-state=done]")
    tool = page.locator("#run-steps > li[data-kind=tool]").first
    assert tool.locator("summary").inner_text().startswith("round 1 tool\n")  # no name at none
    assert CANARY not in page.evaluate("document.body.textContent")
    _nothing_ran(page)


@pytest.mark.parametrize("level", ["metadata", "none"])
def test_the_pause_event_carries_arguments_except_at_none(
    server: PlaygroundServer, level: str
) -> None:
    """The awaiting_approval event names the run's recorded level; at none its pending calls
    have no arguments at all, so no client can show them by accident."""
    with httpx.Client(
        base_url=server.origin,
        headers={"X-NR-LLM-Token": server.token, "Accept": "application/x-ndjson"},
        timeout=30,
    ) as client:
        body = {"prompt": "go", "provider": "long", "privacy": level}
        # Split on newlines only: U+2028 in an argument is a line break to splitlines().
        lines = client.post("/api/runs", json=body).text.split("\n")
    assert lines[-1] == ""
    pause = json.loads(lines[-2])
    assert pause["event"] == "awaiting_approval"
    assert pause["privacy"] == level
    assert [(c["id"], c["name"], c["needs_approval"]) for c in pause["pending"]] == [
        ("t1", "transfer", True),
        ("e1", "echo", False),
    ]
    if level == "none":
        assert pause["arguments_shown"] is False
        assert all("arguments" not in c for c in pause["pending"])
        assert CANARY not in "\n".join(lines)  # no step shows them either
    else:
        assert pause["arguments_shown"] is True
        assert [c["arguments"] for c in pause["pending"]] == [LONG_ARGS, ECHO_ARGS]
