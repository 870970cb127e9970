"""A provider that cannot be reached (connection refused on 127.0.0.1) made ``nr-llm run``
end with "failed after 1 completion(s)": no completion ever arrived. The summary now says the
provider could not be reached, with the endpoint, and counts only completions that arrived;
a refusal (HTTP 404 over real HTTP) says the provider refused the request, with the endpoint,
and one of its credentials (HTTP 401) says so."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from nr_llm_core.cli import main

from ..loop._wire import Reply, WireServer


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NR_LLM_DISABLE_PLUGIN_AUTOLOAD", "1")  # nothing installed is offered
    monkeypatch.setenv("NR_LLM_DB", str(tmp_path / "audit.db"))


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed): a connection is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_an_unreachable_provider_is_named_not_counted_as_a_completion() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    out = CliRunner().invoke(
        main,
        ["run", "hi", "--provider", "openai", "--base-url", url, "--model", "m"],
        env={"OPENAI_API_KEY": "sk-test"},
    )
    assert out.exit_code == 1, out.output
    assert "completion(s)" not in out.stdout.replace("0 completion(s) before", "")
    summary = next(line for line in out.stdout.splitlines() if line.startswith("failed"))
    assert summary.startswith(
        f"failed: the provider could not be reached ({url}/chat/completions); no completion arrived"
    ), summary


def test_a_refusal_says_refused_and_counts_no_completion() -> None:
    with WireServer([Reply(404, {"error": {"code": "model_not_found"}})]) as server:
        out = CliRunner().invoke(
            main,
            ["run", "hi", "--provider", "openai", "--base-url", server.url, "--model", "m"],
            env={"OPENAI_API_KEY": "sk-test"},
        )
    assert out.exit_code == 1, out.output
    summary = next(line for line in out.stdout.splitlines() if line.startswith("failed"))
    assert summary.startswith(
        f"failed: the provider refused the request ({server.url}/chat/completions); "
        "no completion arrived"
    ), summary
    assert "HTTP 404 (model_not_found)" in out.output


def test_refused_credentials_say_so() -> None:
    with WireServer([Reply(401, {"error": {"code": "invalid_api_key"}})]) as server:
        out = CliRunner().invoke(
            main,
            ["run", "hi", "--provider", "openai", "--base-url", server.url, "--model", "m"],
            env={"OPENAI_API_KEY": "sk-test"},
        )
    assert out.exit_code == 1, out.output
    assert "failed: the provider refused the credentials; no completion arrived" in out.stdout


def test_the_provider_error_is_printed_once() -> None:
    """The provider's error was printed in the trace, then again on stderr as ``error:
    provider error: …`` under the summary that had just said it. It is printed once (the
    trace's error line, with its detail), and the summary still names what failed."""
    url = f"http://127.0.0.1:{closed_port()}/v1"
    out = CliRunner().invoke(
        main,
        ["run", "hi", "--provider", "openai", "--base-url", url, "--model", "m"],
        env={"OPENAI_API_KEY": "sk-test"},
    )
    assert out.exit_code == 1, out.output
    assert out.output.count("provider error: could not reach") == 1, out.output
    assert "error: provider error" not in out.stderr
    assert f"failed: the provider could not be reached ({url}/chat/completions)" in out.stdout
