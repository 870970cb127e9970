"""A provider the playground cannot build: refused at start-up, and a run whose provider cannot
be built ends in an error event on a closed stream, never an HTTP error.

Real processes for the command (a bad ``OPENAI_BASE_URL`` in the environment, with a password
in it that must not be echoed) and a real server on 127.0.0.1 for the run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from nr_llm_core.errors import ConfigurationError
from nr_llm_core.providers import ScriptedProvider

from ._fixtures import start_server

SECRET = "pw-CANARY-4b1d"


def _start(tmp_path: Path, base_url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": f"sk-{SECRET}"}
    command = [sys.executable, "-m", "nr_llm_core", "playground", "--no-open", *extra]
    command += ["--db", str(tmp_path / "audit.db")]
    return subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_a_bad_base_url_stops_the_command_before_it_serves(tmp_path: Path) -> None:
    """Tries to start the playground with an OPENAI_BASE_URL that cannot work (a scheme no
    provider speaks, a password in it): it must stop at once, name the variable, and never
    echo the URL or the key."""
    done = _start(tmp_path, f"ftp://user:{SECRET}@models.example/v1")
    assert done.returncode == 2, done.stderr
    assert "nr-llm playground: http" not in done.stdout  # it never served
    assert "Invalid value for OPENAI_BASE_URL" in done.stderr
    assert SECRET not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr


def test_a_bad_openai_model_flag_is_named_too(tmp_path: Path) -> None:
    """The flag's own value is checked the same way: a bad --openai-base-url is a usage
    error naming the flag."""
    done = _start(tmp_path, "", "--openai-base-url", f"gopher://u:{SECRET}@h/")
    assert done.returncode == 2, done.stderr
    assert "--openai-base-url" in done.stderr
    assert SECRET not in done.stdout + done.stderr


def test_a_run_whose_provider_cannot_be_built_ends_in_an_error_event(tmp_path: Path) -> None:
    """Tries to get an HTTP error (or an exception's type name) out of /api/runs with a
    provider whose factory fails when the run starts (its settings went bad after start-up):
    the stream must open, say what failed in host words, and close."""

    def broken() -> ScriptedProvider:
        raise ConfigurationError("the OpenAI-compatible provider's base URL must be http(s)")

    def crashing() -> ScriptedProvider:
        raise RuntimeError(f"internal {SECRET}")

    server = start_server(
        None,
        providers={"scripted": lambda: ScriptedProvider(["ok"]), "bad": broken, "crash": crashing},
    )
    try:
        with httpx.Client(
            base_url=server.origin, headers={"X-NR-LLM-Token": server.token}, timeout=30
        ) as client:
            for name, reason in (
                (
                    "bad",
                    "the provider could not be set up: the OpenAI-compatible provider's "
                    "base URL must be http(s)",
                ),
                ("crash", "the provider could not be set up"),
            ):
                response = client.post("/api/runs", json={"prompt": "x", "provider": name})
                assert response.status_code == 200, response.text
                assert response.text.endswith("\n")
                lines = [line for line in response.text.split("\n") if line]
                events = [httpx.Response(200, content=line).json() for line in lines]
                assert [e["event"] for e in events] == ["context", "error"]
                assert events[-1]["reason"] == reason
                assert SECRET not in response.text and "RuntimeError" not in response.text
            ok = client.post("/api/runs", json={"prompt": "x", "provider": "scripted"})
            assert ok.status_code == 200 and '"event":"done"' in ok.text
    finally:
        server.stop()
