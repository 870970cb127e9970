"""The playground over real HTTP: the guard, the headers, the API and the NDJSON stream."""

from __future__ import annotations

import socket

import httpx
import pytest

from nr_llm_core.encoding import decode_json
from nr_llm_core.playground import PlaygroundServer

from ._fixtures import TABLE_COLUMNS, TABLE_ROWS, XSS_TEXT

TERMINAL = {"done", "error", "awaiting_approval"}


def _raw_request(server: PlaygroundServer, head: str) -> str:
    """Send a hand-written request (httpx always writes one correct Host header)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head.encode("latin-1"))
        chunks = []
        while data := sock.recv(65536):
            chunks.append(data)
    return b"".join(chunks).decode("latin-1")


def _events(response: httpx.Response) -> list[dict]:
    assert response.headers["content-type"].startswith("application/x-ndjson")
    lines = response.text.split("\n")
    assert lines[-1] == ""  # every event ends with a newline
    return [decode_json(line) for line in lines[:-1]]


def _check_order(events: list[dict]) -> None:
    assert events[0]["event"] == "context"
    assert events[-1]["event"] in TERMINAL
    assert sum(e["event"] in TERMINAL for e in events) == 1
    steps = [e for e in events if e["event"] == "step"]
    assert [e["event"] for e in events[1:-1]] == ["step"] * len(steps)
    assert [s["index"] for s in steps] == list(range(len(steps)))
    assert len({e["run_id"] for e in events}) == 1


# -- the guard -------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/static/app.js", "/api/tools", "/api/config", "/api/runs"])
def test_every_path_needs_the_token(server: PlaygroundServer, path: str) -> None:
    response = httpx.get(server.origin + path)
    assert response.status_code == 401
    assert response.headers["content-security-policy"].startswith("default-src 'none'")
    wrong = httpx.get(server.origin + path, headers={"X-NR-LLM-Token": "x" * 43})
    assert wrong.status_code == 401


def test_page_load_accepts_the_query_token(server: PlaygroundServer) -> None:
    page = httpx.get(server.url)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert f'content="{server.token}"' in page.text
    script = httpx.get(f"{server.origin}/static/app.js?token={server.token}")
    assert script.status_code == 200
    assert script.headers["content-type"].startswith("text/javascript")


def test_api_refuses_the_query_token(server: PlaygroundServer) -> None:
    assert httpx.get(f"{server.origin}/api/tools?token={server.token}").status_code == 401
    post = httpx.post(f"{server.origin}/api/runs?token={server.token}", json={"prompt": "x"})
    assert post.status_code == 401


def test_post_without_the_header_token_is_refused(server: PlaygroundServer) -> None:
    response = httpx.post(
        f"{server.origin}/api/tools/echo/invoke",
        json={"arguments": {"text": "x"}},
        cookies={"token": server.token},
    )
    assert response.status_code == 401


@pytest.mark.parametrize(
    "host", ["evil.example", "evil.example:{port}", "127.0.0.1:1", "localhost", "127.0.0.2:{port}"]
)
def test_foreign_host_is_refused(server: PlaygroundServer, host: str) -> None:
    response = httpx.get(
        server.origin + "/api/tools",
        headers={"Host": host.format(port=server.port), "X-NR-LLM-Token": server.token},
    )
    assert response.status_code == 403
    assert response.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", "LOCALHOST", "[::1]"])
def test_loopback_host_names_are_accepted(server: PlaygroundServer, name: str) -> None:
    response = httpx.get(
        server.origin + "/api/config",
        headers={"Host": f"{name}:{server.port}", "X-NR-LLM-Token": server.token},
    )
    assert response.status_code == 200


def test_missing_or_repeated_host_is_a_bad_request(server: PlaygroundServer) -> None:
    token = server.token
    missing = _raw_request(server, f"GET /api/config HTTP/1.0\r\nX-NR-LLM-Token: {token}\r\n\r\n")
    assert missing.startswith("HTTP/1.1 400")
    host = f"127.0.0.1:{server.port}"
    twice = _raw_request(
        server,
        f"GET /api/config HTTP/1.1\r\nHost: {host}\r\nHost: evil.example\r\n"
        f"X-NR-LLM-Token: {token}\r\nConnection: close\r\n\r\n",
    )
    assert twice.startswith("HTTP/1.1 400")


def test_cross_origin_post_is_refused(client: httpx.Client) -> None:
    response = client.post(
        "/api/tools/echo/invoke",
        json={"arguments": {"text": "x"}},
        headers={"Origin": "http://evil.example"},
    )
    assert response.status_code == 403


def test_post_needs_a_json_body(client: httpx.Client) -> None:
    form = client.post("/api/runs", data={"prompt": "x"})
    assert form.status_code == 400
    assert (
        client.post(
            "/api/runs", content=b"[1]", headers={"content-type": "application/json"}
        ).status_code
        == 400
    )


def test_security_headers_on_every_response(server: PlaygroundServer, client: httpx.Client) -> None:
    for response in (httpx.get(server.url), client.get("/api/tools"), httpx.get(server.origin)):
        headers = response.headers
        assert headers["content-security-policy"] == (
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
            "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        )
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["referrer-policy"] == "no-referrer"
        assert "server" not in headers


def test_other_methods_are_refused(client: httpx.Client) -> None:
    assert client.put("/api/runs", json={}).status_code == 405
    assert client.delete("/api/runs").status_code == 405


# -- tool runner ---------------------------------------------------------------------------------


def test_tools_are_grouped_with_examples(client: httpx.Client) -> None:
    body = client.get("/api/tools").json()
    assert body["load_errors"] == []
    groups = body["groups"]
    assert [g["group"] for g in groups] == ["test"]
    echo = next(t for t in groups[0]["tools"] if t["name"] == "echo")
    assert echo["example"] == {"text": "hello"}
    assert echo["enabled"] is True


def test_invoke_shows_content_artifacts_and_the_persisted_record(client: httpx.Client) -> None:
    body = client.post("/api/tools/payload/invoke", json={"arguments": {}}).json()
    assert body["content"].startswith("payload content")
    assert body["artifacts"][0]["data"] == {"text": XSS_TEXT}
    assert body["artifacts"][2]["data"] == {"columns": TABLE_COLUMNS, "rows": TABLE_ROWS}
    assert body["privacy"] == "metadata"
    persisted = body["persisted"]
    assert persisted["content_redacted"] is True
    assert "tool_artifacts" not in persisted and "tool_result" not in persisted
    full = client.post("/api/tools/payload/invoke", json={"arguments": {}, "privacy": "full"})
    assert full.json()["persisted"]["tool_artifacts"] == body["artifacts"]


def test_invoke_reports_tool_errors_as_results(client: httpx.Client) -> None:
    unknown = client.post("/api/tools/nope/invoke", json={"arguments": {}}).json()
    assert unknown["is_error"] and unknown["content"] == 'Error: unknown tool "nope"'
    bad = client.post("/api/tools/echo/invoke", json={"arguments": {"text": 5}}).json()
    assert bad["is_error"] and bad["content"].startswith('Error: invalid arguments for tool "echo"')
    # The record the store would keep names the kind of host-made error (ADR 0008).
    assert bad["persisted"]["tool_error_kind"] == "invalid_arguments"
    assert unknown["persisted"]["tool_error_kind"] == "unknown_tool"


def test_invoking_a_tool_that_requires_approval_needs_the_approval(client: httpx.Client) -> None:
    refused = client.post("/api/tools/transfer/invoke", json={"arguments": {}})
    assert refused.status_code == 409
    for approved in (1, "true", None):
        body = {"arguments": {}, "approved": approved}
        assert client.post("/api/tools/transfer/invoke", json=body).status_code == 409
    ran = client.post("/api/tools/transfer/invoke", json={"arguments": {}, "approved": True})
    assert ran.json()["content"] == "transferred"
    assert type(ran.json()["run_id"]) is str  # recorded (ADR 0044)


def test_invoke_shows_the_omitted_marker(client: httpx.Client) -> None:
    body = client.post("/api/tools/huge/invoke", json={"arguments": {}}).json()
    assert body["artifacts"] == [
        {"type": "text", "label": "Artifacts omitted", "data": {"text": "exceeded 50000 bytes"}}
    ]


# -- agent runs ----------------------------------------------------------------------------------


def test_stream_order_and_encoding(client: httpx.Client) -> None:
    response = client.post("/api/runs", json={"prompt": "go", "provider": "echoes"})
    events = _events(response)
    _check_order(events)
    context = events[0]
    assert context["provider"] == "echoes" and context["privacy"] == "metadata"
    kinds = [e["step"]["kind"] for e in events[1:-1]]
    assert kinds == ["request", "llm", "tool"] * 3 + ["request", "llm"]
    assert events[-1]["event"] == "done" and events[-1]["content"] == "finished"
    tools = [e for e in events if e["event"] == "step" and e["step"]["kind"] == "tool"]
    # At metadata (the default) a step shows what the store keeps: no result, a length.
    assert all(t["step"]["content_redacted"] for t in tools)
    assert [t["step"]["tool_result_length"] for t in tools] == [8, 8, 8]
    full = _events(
        client.post("/api/runs", json={"prompt": "go", "provider": "echoes", "privacy": "full"})
    )
    tools = [e for e in full if e["event"] == "step" and e["step"]["kind"] == "tool"]
    assert [t["step"]["tool_result"] for t in tools] == ["echo: t0", "echo: t1", "echo: t2"]


def test_json_fallback_is_the_same_run(client: httpx.Client) -> None:
    response = client.post(
        "/api/runs",
        json={"prompt": "go", "provider": "echoes", "privacy": "full"},
        headers={"Accept": "application/json"},
    )
    assert response.headers["content-type"] == "application/json"
    body = decode_json(response.content)
    events = body["events"]
    _check_order(events)
    assert body["run_id"] == events[0]["run_id"]
    streamed = _events(client.post("/api/runs", json={"prompt": "go", "provider": "echoes"}))
    assert [e["event"] for e in events] == [e["event"] for e in streamed]


def test_runs_are_recorded_and_listed_newest_first(client: httpx.Client) -> None:
    first = _events(client.post("/api/runs", json={"prompt": "a", "provider": "echoes"}))
    second = _events(client.post("/api/runs", json={"prompt": "b", "provider": "echoes"}))
    runs = client.get("/api/runs").json()["runs"]
    ids = [r["id"] for r in runs]
    assert ids.index(second[0]["run_id"]) < ids.index(first[0]["run_id"])
    detail = client.get(f"/api/runs/{second[0]['run_id']}").json()
    assert detail["run"]["status"] == "completed"
    assert [s["step"] for s in detail["steps"]] == [e["step"] for e in second[1:-1]]
    assert client.get("/api/runs/nope").status_code == 404


def test_bad_run_requests(client: httpx.Client) -> None:
    for body in (
        {"prompt": ""},
        {"prompt": "x", "provider": "nope"},
        {"prompt": "x", "max_rounds": 0},
        {"prompt": "x", "max_rounds": True},
        {"prompt": "x", "tools": "echo"},
    ):
        assert client.post("/api/runs", json=body).status_code == 400, body


def test_a_run_naming_a_tool_that_is_not_loaded_is_refused_before_any_request(
    client: httpx.Client,
) -> None:
    """A newcomer's typo in ``tools`` (``payloud``) started a run with no tools at all (the
    name matched nothing), which answered and "completed" as if the tool had been offered;
    ``nr-llm run --tools`` refuses the same typo. Now a 400 names it and a close loaded name,
    and no run is recorded."""
    before = client.get("/api/runs").json()["runs"]
    answer = client.post(
        "/api/runs",
        json={"prompt": "x", "provider": "echoes", "tools": ["payload", "payloud", "\x00" * 99]},
    )
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error.startswith("tools names a tool that is not loaded: 'payloud' (did you mean ")
    assert "'payload'" in error.partition("did you mean")[2]
    assert len(error) < 400  # a long unknown name is cut short
    assert client.get("/api/runs").json()["runs"] == before


def test_unknown_privacy_level_is_metadata(client: httpx.Client) -> None:
    events = _events(
        client.post(
            "/api/runs", json={"prompt": "x", "provider": "echoes", "privacy": "everything"}
        )
    )
    assert events[0]["privacy"] == "metadata"


def test_allow_list_narrows_the_offer(client: httpx.Client) -> None:
    events = _events(
        client.post(
            "/api/runs",
            json={"prompt": "x", "provider": "echoes", "tools": ["payload"], "privacy": "full"},
        )
    )
    assert events[0]["tools"] == ["payload"]
    tool = next(e for e in events if e["event"] == "step" and e["step"]["kind"] == "tool")
    assert tool["step"]["tool_result"] == 'Error: tool "echo" not permitted'


def test_approve_and_deny_resume_the_run(client: httpx.Client) -> None:
    for approved, expected in ((True, "transferred"), (False, "did not approve")):
        body = {"prompt": "pay", "provider": "approval", "privacy": "full"}
        events = _events(client.post("/api/runs", json=body))
        _check_order(events)
        pause = events[-1]
        assert pause["event"] == "awaiting_approval"
        assert [(c["name"], c["needs_approval"]) for c in pause["pending"]] == [("transfer", True)]
        run_id = pause["run_id"]
        stale = client.post(
            f"/api/runs/{run_id}/resume", json={"digest": "0" * 64, "approved": True}
        )
        assert stale.status_code == 409
        resumed = client.post(
            f"/api/runs/{run_id}/resume", json={"digest": pause["digest"], "approved": approved}
        )
        more = _events(resumed)
        _check_order(more)
        assert more[0]["resumed"] is True and more[0]["run_id"] == run_id
        kinds = [e["step"]["kind"] for e in more[1:-1]]
        assert kinds[:2] == ["approval", "tool"]
        assert expected in more[2]["step"]["tool_result"]
        assert more[-1]["event"] == "done"
        again = client.post(
            f"/api/runs/{run_id}/resume", json={"digest": pause["digest"], "approved": True}
        )
        assert again.status_code == 409  # an approval is not replayed: the store says who
        assert "already resumed by playground on" in again.json()["error"]
        assert client.get(f"/api/runs/{run_id}").json()["run"]["status"] == "completed"


def test_bad_decision_leaves_the_run_waiting(client: httpx.Client) -> None:
    pause = _events(client.post("/api/runs", json={"prompt": "pay", "provider": "approval"}))[-1]
    url = f"/api/runs/{pause['run_id']}/resume"
    assert (
        client.post(url, json={"digest": pause["digest"], "approved": {"nope": True}}).status_code
        == 400
    )
    ok = client.post(url, json={"digest": pause["digest"], "approved": False})
    assert _events(ok)[-1]["event"] == "done"


def test_round_cap_ends_the_run_as_done(client: httpx.Client) -> None:
    body = {"prompt": "x", "provider": "echoes", "max_rounds": 1}
    events = _events(client.post("/api/runs", json=body))
    _check_order(events)
    assert events[-1]["event"] == "done" and events[-1]["termination_reason"] == "max_iterations"
    assert events[-1]["truncated"] is True


def test_provider_failure_is_one_error_event(client: httpx.Client) -> None:
    events = _events(client.post("/api/runs", json={"prompt": "x", "provider": "empty"}))
    _check_order(events)
    assert [e["event"] for e in events] == ["context", "step", "step", "error"]
    assert events[-1]["reason"] == "provider error: the scripted provider has no more turns"
