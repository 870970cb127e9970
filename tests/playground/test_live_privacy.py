"""The live run stream shows what the run's privacy level keeps, and nothing more.

A scripted model asks for the echo tool with a canary argument. Over real HTTP, at every level,
each streamed step must be exactly the record the audit store kept for it (one filter, not a
second copy), so at ``none`` and ``metadata`` the canary is in no byte of the stream.
"""

from __future__ import annotations

import httpx
import pytest

from nr_llm_core.encoding import decode_json

from ._fixtures import ARGUMENT_CANARY

PROMPT_CANARY = "CANARY-live-prompt-91c2"


def _run(client: httpx.Client, level: str) -> tuple[bytes, list[dict]]:
    body = {"prompt": f"say {PROMPT_CANARY}", "provider": "canary", "privacy": level}
    response = client.post("/api/runs", json=body)
    assert response.status_code == 200
    raw = response.content
    return raw, [decode_json(line) for line in raw.decode("utf-8").splitlines()]


@pytest.mark.parametrize("level", ["none", "metadata"])
def test_a_level_without_content_streams_no_argument_and_no_prompt(
    client: httpx.Client, level: str
) -> None:
    """Tries to read the model's requested arguments (and the tool's echo of them, and the
    prompt) from the live stream of a run at a level that keeps no content."""
    raw, events = _run(client, level)
    assert events[0]["event"] == "context" and events[0]["privacy"] == level
    assert events[-1]["event"] == "done"
    kinds = [e["step"]["kind"] for e in events if e["event"] == "step"]
    assert kinds == ["request", "llm", "tool", "request", "llm"]
    assert ARGUMENT_CANARY.encode() not in raw
    assert PROMPT_CANARY.encode() not in raw


@pytest.mark.parametrize("level", ["none", "metadata", "redacted", "full"])
def test_each_streamed_step_is_the_stored_record(client: httpx.Client, level: str) -> None:
    """Tries to find a streamed step that shows more (or other) than the store kept of it."""
    raw, events = _run(client, level)
    run_id = events[0]["run_id"]
    streamed = [e["step"] for e in events if e["event"] == "step"]
    assert all("persisted" not in e for e in events)  # one record per step, not two
    stored = client.get(f"/api/runs/{run_id}").json()
    assert stored["run"]["privacy_level"] == level
    assert streamed == [s["step"] for s in stored["steps"]]
    # The levels that keep content show it live: the canary is there to be found.
    assert (ARGUMENT_CANARY.encode() in raw) is (level in ("redacted", "full"))
