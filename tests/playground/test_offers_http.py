"""The playground's API for a newcomer (issue 15, points 1 and 5): ``/api/tools`` carries, per
tool and configured provider, whether it is offered and why not; ``/api/runs`` carries each
run's prompt (as the level kept it), provider, model, status and, for a failed run, its
error. A real server on 127.0.0.1, a real audit database, a real OpenAI-compatible wire."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from nr_llm_core.playground import PlaygroundServer
from nr_llm_core.playground._tools import provider_zones
from nr_llm_core.providers import TrustZone

from ..loop._wire import Reply, WireServer
from ._offers import MODEL, PROMPT, start


@pytest.fixture(scope="module")
def wire() -> Iterator[WireServer]:
    with WireServer([Reply(401, {"error": {"code": "invalid_api_key"}})]) as server:
        yield server


@pytest.fixture(scope="module")
def offers_server(
    tmp_path_factory: pytest.TempPathFactory, wire: WireServer
) -> Iterator[PlaygroundServer]:
    srv = start(tmp_path_factory.mktemp("offers") / "audit.db", f"{wire.url}/v1")
    yield srv
    srv.stop()


@pytest.fixture
def api(offers_server: PlaygroundServer) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=offers_server.origin,
        headers={"X-NR-LLM-Token": offers_server.token, "Accept": "application/json"},
        timeout=60,
    ) as c:
        yield c


def _tools(api: httpx.Client) -> dict[str, dict[str, Any]]:
    data = api.get("/api/tools").json()
    return {tool["name"]: tool for group in data["groups"] for tool in group["tools"]}


def test_tools_carry_an_offer_decision_per_provider(api: httpx.Client) -> None:
    data = api.get("/api/tools").json()
    assert data["providers"] == [
        {"name": "local", "trust_zone": "local"},
        {"name": "external", "trust_zone": "external"},
        {"name": "openai", "trust_zone": "external"},
    ]
    assert "data class" in data["data_class_note"]
    tools = _tools(api)
    inventory = tools["inventory"]
    assert inventory["data_class"] is None
    assert inventory["effective_data_class"] == "secret-adjacent"
    assert inventory["offered_to"] == ["local"]
    assert inventory["offers"]["local"]["offered"] is True
    refused = inventory["offers"]["external"]
    assert refused["offered"] is False
    assert refused["code"] == "undeclared-data-class"
    assert "declares no data class" in refused["reason"]
    assert 'data_class="public"' in refused["fix"]
    assert tools["payroll"]["offers"]["openai"]["code"] == "above-zone-ceiling"
    assert tools["payroll"]["offers"]["local"]["offered"] is True
    assert tools["forecast"]["offers"]["external"]["offered"] is True
    writer = tools["writer"]["offers"]["local"]
    assert writer["code"] == "off-by-default" and "NR_LLM_ENABLE_TOOLS=writer" in writer["fix"]


def _run(api: httpx.Client, provider: str, privacy: str) -> dict[str, Any]:
    body = {"prompt": PROMPT, "provider": provider, "privacy": privacy}
    events = api.post("/api/runs", json=body).json()["events"]
    return {"run_id": events[-1]["run_id"], "last": events[-1], "context": events[0]}


def test_the_runs_list_shows_prompt_provider_model_status_and_error(api: httpx.Client) -> None:
    full = _run(api, "local", "full")
    assert full["last"]["event"] == "done"
    assert full["context"]["tools"] == ["forecast", "inventory", "payroll"]
    quiet = _run(api, "external", "metadata")
    assert quiet["context"]["tools"] == ["forecast"]
    failed = _run(api, "openai", "redacted")
    assert failed["last"]["event"] == "error"
    runs = {r["id"]: r for r in api.get("/api/runs").json()["runs"]}

    shown = runs[full["run_id"]]
    assert shown["prompt"] == PROMPT
    assert shown["provider"] == "ScriptedProvider"
    assert shown["model"] is None
    assert shown["status"] == "completed" and shown["error"] is None

    hidden = runs[quiet["run_id"]]
    assert hidden["prompt"] is None  # metadata keeps no text
    assert hidden["privacy_level"] == "metadata"

    broken = runs[failed["run_id"]]
    assert broken["status"] == "failed"
    assert broken["provider"] == "OpenAIChatProvider"
    assert broken["model"] == MODEL
    assert broken["prompt"] == PROMPT  # redacted keeps text without secret shapes
    assert "HTTP 401" in broken["error"]


def test_metadata_keeps_no_prompt_byte_in_the_listing(api: httpx.Client) -> None:
    """The prompt canary is in no byte the store gives out for a metadata run: neither its
    detail nor its row of the listing."""
    run = _run(api, "external", "metadata")
    assert b"PROMPT-CANARY" not in api.get(f"/api/runs/{run['run_id']}").content
    (row,) = [r for r in api.get("/api/runs").json()["runs"] if r["id"] == run["run_id"]]
    assert "PROMPT-CANARY" not in json.dumps(row)
    assert row["prompt"] is None


def test_a_provider_that_cannot_be_built_counts_as_external() -> None:
    """Its runs fail at the start anyway; no tool is shown as offered to it that a stricter
    zone would refuse. A provider built to read its zone is closed again."""
    closed: list[str] = []

    class Closing:
        trust_zone = "private-hosted"

        def close(self) -> None:
            closed.append("closed")

    def broken() -> object:
        raise RuntimeError("no key")

    zones = provider_zones({"broken": broken, "closing": Closing, "nozone": object})
    assert zones == {
        "broken": TrustZone.EXTERNAL,
        "closing": TrustZone.PRIVATE_HOSTED,
        "nozone": TrustZone.EXTERNAL,
    }
    assert closed == ["closed"]
