"""Provider setup seen from the terminal: ``nr-llm providers`` lists each provider, its
settings with their sources and whether its key is there (never the key); ``--help`` names
the key variables, ``OPENAI_BASE_URL`` and the default models; a missing key stops ``run``
before any connection, saying what to set; the scripted provider says once that it plays a
fixed script."""

from __future__ import annotations

import json
import os
import re
import socket
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nr_llm_core import AnthropicProvider, OpenAIChatProvider
from nr_llm_core.cli import main
from nr_llm_core.keys import keys_path, store_key
from tests.loop._wire import Reply, WireServer
from tests.loop.test_openai_wire import text_reply

from ._probe import cli_env, run_nr_llm, write_probe_site, write_user_config

KEY = "sk-proj-CANARY-listing-81b0"
SCRIPTED_NOTE = "the scripted provider plays a fixed script"


@pytest.fixture(autouse=True)
def _no_installed_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NR_LLM_DISABLE_PLUGIN_AUTOLOAD", "1")


def listing(*args: str) -> dict[str, Any]:
    out = CliRunner().invoke(main, ["providers", "--json", *args])
    assert out.exit_code == 0, out.output
    data: dict[str, Any] = json.loads(out.output)
    return data


def by_name(data: dict[str, Any]) -> dict[str, Any]:
    return {entry["name"]: entry for entry in data["providers"]}


def test_providers_lists_each_provider_with_its_defaults_and_sources() -> None:
    data = listing()
    assert data["default"] == {"name": "scripted", "source": "default"}
    entries = by_name(data)
    assert list(entries) == ["scripted", "openai", "anthropic"]
    scripted = entries["scripted"]
    assert scripted["default"] is True
    assert "plays a fixed script" in scripted["note"]
    assert "does not read the prompt" in scripted["note"]
    assert scripted["settings"] == {"trust_zone": {"value": "local", "source": "default"}}
    openai = entries["openai"]
    assert openai["settings"] == {
        "model": {"value": "gpt-4o-mini", "source": "default"},
        "base_url": {"value": "https://api.openai.com/v1", "source": "default"},
        "trust_zone": {"value": "external", "source": "default"},
        "max_tokens": {"value": 4096, "source": "default"},
        "timeout": {"value": 60.0, "source": "default"},
    }
    assert openai["api_key"] == {
        "variable": "OPENAI_API_KEY",
        "present": False,
        "source": None,
        "stored": False,
        "required": True,
        "problem": None,
    }
    assert entries["anthropic"]["settings"]["model"]["value"] == "claude-3-5-sonnet-latest"


def test_each_value_says_where_it_came_from(monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_user_config(
        '[providers]\ndefault = "anthropic"\n[providers.anthropic]\nmax_tokens = 99\n'
        '[providers.openai]\nmodel = "llama3.1"\n'
    )
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    store_key("OPENAI_API_KEY", KEY)
    store_key("ANTHROPIC_API_KEY", KEY)
    data = listing()
    assert data["default"] == {"name": "anthropic", "source": f"file {path}"}
    entries = by_name(data)
    openai, anthropic = entries["openai"], entries["anthropic"]
    assert anthropic["default"] and not entries["scripted"]["default"]
    assert openai["settings"]["model"] == {"value": "llama3.1", "source": f"file {path}"}
    assert openai["settings"]["base_url"] == {
        "value": "http://localhost:11434/v1",
        "source": "env OPENAI_BASE_URL",
    }
    assert anthropic["settings"]["max_tokens"] == {"value": 99, "source": f"file {path}"}
    # A local server needs no key; the stored one is there anyway.
    assert openai["api_key"]["source"] == "keys file" and not openai["api_key"]["required"]
    # The variable wins; the stored key is not used while it is set.
    assert (anthropic["api_key"]["source"], anthropic["api_key"]["stored"]) == (
        "env ANTHROPIC_API_KEY",
        True,
    )
    text = CliRunner().invoke(main, ["providers"]).output
    assert f"default provider: anthropic (file {path}; --provider chooses another)" in text
    assert "api key     present (keys file)" in text
    assert "api key     present (env ANTHROPIC_API_KEY); the stored one is not used" in text
    assert f"  model       llama3.1                   file {path}" in text
    assert KEY not in text


def test_a_missing_key_says_what_to_set_and_a_local_server_needs_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = CliRunner().invoke(main, ["providers"]).output
    assert "missing: set OPENAI_API_KEY or run `nr-llm keys set openai`" in text
    assert "missing: set ANTHROPIC_API_KEY or run `nr-llm keys set anthropic`" in text
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")
    text = CliRunner().invoke(main, ["providers"]).output
    assert "none (not needed for this base URL; set OPENAI_API_KEY if the server wants" in text


def test_a_setting_that_cannot_work_is_shown_with_its_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "localhost:8080/v1?key=CANARY")
    entries = by_name(listing())
    assert entries["openai"]["problem"].startswith(
        "base_url (env OPENAI_BASE_URL): the base URL must start with http:// or https://"
    )
    assert "CANARY" not in json.dumps(entries)


def test_an_unreadable_keys_file_is_reported_not_fatal() -> None:
    store_key("OPENAI_API_KEY", KEY)
    keys_path().chmod(0o644)
    out = CliRunner().invoke(main, ["providers"])
    assert out.exit_code == 0, out.output
    assert "keys file: " in out.output and "run `chmod 600 " in out.output
    assert KEY not in out.output


@pytest.mark.parametrize(
    "command", [["run"], ["runs", "approve"], ["runs", "deny"], ["playground"]], ids=" ".join
)
def test_help_names_the_key_variables_the_base_url_variable_and_the_default_models(
    command: list[str],
) -> None:
    out = CliRunner().invoke(main, [*command, "--help"], terminal_width=400)
    assert out.exit_code == 0, out.output
    for shown in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENAI_BASE_URL",
        "gpt-4o-mini",
        "claude-3-5-sonnet-latest",
        "https://api.openai.com/v1",
        "nr-llm keys set",
    ):
        assert shown in out.output, shown


def test_help_of_the_decisions_and_run_says_the_scripted_provider_ignores_the_prompt() -> None:
    for command in (["run"], ["runs", "approve"]):
        out = CliRunner().invoke(main, [*command, "--help"], terminal_width=400)
        assert "plays a fixed script and does not read the prompt" in out.output


@pytest.fixture
def no_connections(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every attempt to open a connection or resolve a name, refused and recorded."""
    tried: list[object] = []

    def refuse(*args: object, **kwargs: object) -> Any:
        tried.append(args)
        raise OSError("no network in this test")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    return tried


@pytest.mark.parametrize(("name", "variable"), [("openai", "OPENAI"), ("anthropic", "ANTHROPIC")])
def test_a_missing_key_stops_run_before_any_connection(
    name: str, variable: str, no_connections: list[object]
) -> None:
    out = CliRunner().invoke(main, ["run", "hi", "--provider", name])
    assert out.exit_code == 2, out.output
    assert out.output.startswith(
        f"Error: no API key: set {variable}_API_KEY or store it with `nr-llm keys set {name}`"
    )
    # A configuration problem, not a usage mistake: no usage text, no traceback.
    assert "Usage:" not in out.output and "Traceback" not in out.output
    assert no_connections == []
    # Nothing was started: not even the audit database was opened.
    assert not Path(os.environ["NR_LLM_DB"]).exists()


@pytest.mark.parametrize("name", ["openai", "anthropic"])
def test_a_missing_key_sends_nothing_to_a_host_that_needs_one(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real server on 127.0.0.1 stands in for the vendor's host: `run` without a key opens
    no connection to it; with a stored key the same command reaches it."""
    cls = OpenAIChatProvider if name == "openai" else AnthropicProvider
    monkeypatch.setattr(cls, "key_required_hosts", frozenset({"127.0.0.1"}))
    with WireServer([Reply(400, b"{}")]) as server:
        base = f"{server.url}/v1" if name == "openai" else server.url
        args = ["run", "hi", "--provider", name, "--base-url", base, "--no-record"]
        out = CliRunner().invoke(main, args)
        assert out.exit_code == 2, out.output
        assert "no API key" in out.output
        assert server.requests == []
        store_key(f"{name.upper()}_API_KEY", KEY)
        out = CliRunner().invoke(main, [*args, "--timeout", "5"])
    assert server.requests  # the same command, with the stored key, reached the server
    assert KEY not in out.output


def test_the_scripted_provider_says_once_that_it_plays_a_fixed_script() -> None:
    out = CliRunner().invoke(main, ["run", "hi", "--no-record"])
    assert out.exit_code == 0, out.output
    assert out.stderr.count(SCRIPTED_NOTE) == 1
    assert "does not read the prompt" in out.stderr
    assert SCRIPTED_NOTE not in out.stdout  # a note, not part of the answer


def test_a_model_provider_has_no_such_note() -> None:
    with WireServer([text_reply("hello")]) as server:
        args = ["run", "hi", "--provider", "openai", "--base-url", f"{server.url}/v1"]
        out = CliRunner().invoke(main, [*args, "--no-record"])
    assert out.exit_code == 0, out.output
    assert SCRIPTED_NOTE not in out.output


def test_a_missing_key_stops_a_decision_before_anyone_is_asked(tmp_path: Path) -> None:
    """`runs approve --provider openai` without a key: refused before the pending calls are
    shown or the run is claimed; the run still waits and can be approved once a key is set."""
    env = cli_env(write_probe_site(tmp_path / "site"), NR_LLM_DB=str(tmp_path / "audit.db"))
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": [{"name": "probe_gated", "arguments": {}}]}]))
    ran = run_nr_llm("run", "hi", "--script", str(script), env=env)
    match = re.search(r"nr-llm runs approve\|deny (\w+)", ran.out)
    assert match, ran.out
    refused = run_nr_llm("runs", "approve", match.group(1), "--provider", "openai", env=env)
    assert refused.code == 2, refused.err
    assert refused.err.startswith("Error: no API key: set OPENAI_API_KEY")
    assert "probe_gated" not in refused.out  # the pending calls were not shown
    shown = run_nr_llm("runs", "show", match.group(1), env=env)
    assert "status: suspended" in shown.out, shown.out
