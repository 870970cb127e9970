"""Issue 15 in real headless chromium: the agent-run tool picker shows the tools the chosen
provider will not be offered as disabled, with the reason and the fix as visible text and as
a title; the Runs view shows each run's prompt (as the level kept it), provider, model and
status, and a failed run stands out with its reason."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from nr_llm_core.playground import PlaygroundServer

from ..loop._wire import Reply, WireServer
from ._browser import shot as _shot
from ._offers import MODEL, PROMPT, start


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlaygroundServer]:
    with WireServer([Reply(401, {"error": {"code": "invalid_api_key"}})]) as wire:
        srv = start(tmp_path_factory.mktemp("browser-offers") / "audit.db", f"{wire.url}/v1")
        yield srv
        srv.stop()


@pytest.fixture(autouse=True)
def _no_console_error(page: Any) -> Iterator[None]:
    """No test here may leave an error in the console (a refused request included)."""
    yield
    assert page.watch.errors == []


def _open(page: Any, server: PlaygroundServer, view: str) -> None:
    page.goto(f"{server.url}#{view}")
    page.wait_for_selector("body[data-ready=true]")
    page.wait_for_selector(f"#view-{view}:not([hidden])")


def _pick(page: Any, name: str) -> Any:
    return page.locator(f"#agent-tools label[data-tool={name}]")


def test_the_picker_disables_what_the_provider_will_not_be_offered(
    page: Any, server: PlaygroundServer
) -> None:
    _open(page, server, "agent")
    page.select_option("#agent-provider", "local")
    inventory = _pick(page, "inventory")
    assert inventory.locator("input").is_enabled()
    assert inventory.locator("input").is_checked()
    assert inventory.locator(".why").count() == 0
    writer = _pick(page, "writer")  # off by default: not offered anywhere
    assert writer.locator("input").is_disabled()
    assert "switched off by default" in writer.locator(".why").inner_text()

    page.select_option("#agent-provider", "external")
    inventory = _pick(page, "inventory")
    assert inventory.locator("input").is_disabled()
    assert not inventory.locator("input").is_checked()
    why = inventory.locator(".why").inner_text()
    assert why.startswith("not offered to external: it declares no data class")
    assert 'Fix: declare data_class="public" in its ToolSpec or @tool if its output may go' in why
    title = inventory.get_attribute("title") or ""
    assert "not offered to external" in title and "Fix:" in title
    assert _pick(page, "payroll").locator("input").is_disabled()
    assert "its data class is internal" in _pick(page, "payroll").locator(".why").inner_text()
    assert _pick(page, "forecast").locator("input").is_enabled()
    assert page.locator("#agent-tools .none-offered").count() == 0
    _shot(page, "offers-external")

    # Started as shown: the run asks for only what the picker left enabled.
    with page.expect_request(lambda r: r.url.endswith("/api/runs") and r.method == "POST") as sent:
        page.click("#agent-run")
    assert sent.value.post_data_json["tools"] == ["forecast"]
    page.wait_for_selector("#run-status[data-state=done]")


def test_the_tool_view_names_data_class_and_zones(page: Any, server: PlaygroundServer) -> None:
    _open(page, server, "tools")
    page.click("button[data-tool=inventory]")
    chips = page.inner_text("#tool-meta")
    assert "data class: undeclared → secret-adjacent" in chips
    assert "offered to: local" in chips
    title = page.get_attribute("#tool-meta .data-class", "title") or ""
    assert "data class" in title


def test_the_runs_view_shows_prompt_provider_model_and_marks_failures(
    page: Any, server: PlaygroundServer
) -> None:
    with httpx.Client(
        base_url=server.origin,
        headers={"X-NR-LLM-Token": server.token, "Accept": "application/json"},
        timeout=60,
    ) as api:
        ok = api.post("/api/runs", json={"prompt": PROMPT, "provider": "local", "privacy": "full"})
        failed = api.post(
            "/api/runs", json={"prompt": PROMPT, "provider": "openai", "privacy": "full"}
        )
        quiet = api.post(
            "/api/runs", json={"prompt": PROMPT, "provider": "local", "privacy": "metadata"}
        )
    ids = {
        name: r.json()["run_id"] for name, r in (("ok", ok), ("failed", failed), ("quiet", quiet))
    }
    _open(page, server, "runs")
    page.wait_for_selector("#runs-table tbody tr")

    def row(name: str) -> Any:
        return page.locator(f"#runs-table tbody tr[data-run='{ids[name]}']")

    done = row("ok")
    assert done.locator("td.prompt").inner_text() == PROMPT
    assert done.locator("td.provider").inner_text() == "ScriptedProvider"
    assert done.locator("td.run-state").inner_text() == "completed"
    assert "failed" not in (done.get_attribute("class") or "")

    broken = row("failed")
    assert broken.get_attribute("class") == "failed"
    assert broken.get_attribute("data-status") == "failed"
    assert broken.locator("td.model").inner_text() == MODEL
    assert broken.locator("td.provider").inner_text() == "OpenAIChatProvider"
    reason = broken.locator("td.reason").inner_text()
    assert reason.startswith("failed: provider error") and "HTTP 401" in reason
    # A failed row looks different: its background is the error colour, not the table's.
    assert broken.locator("td").first.evaluate(
        "td => getComputedStyle(td).backgroundColor"
    ) != done.locator("td").first.evaluate("td => getComputedStyle(td).backgroundColor")

    hidden = row("quiet")
    assert hidden.locator("td.prompt").inner_text() == "not kept at metadata"
    _shot(page, "runs-newcomer")

    broken.locator("button.link").click()
    page.wait_for_selector("#run-detail:not([hidden]) .run-summary")
    summary = page.inner_text("#run-detail .run-summary")
    assert f"model {MODEL}" in summary and "status failed" in summary
    assert "banner error" in (page.get_attribute("#run-detail .run-summary", "class") or "")
