"""``--proxy`` and ``NR_LLM_PROXY`` on the command line, over real HTTP on loopback: they reach
the provider of ``nr-llm run``, ``nr-llm runs approve|deny`` and the playground;
``HTTP_PROXY``/``HTTPS_PROXY`` do not; a bad URL is a usage error that does not repeat it."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result

from nr_llm_builtins.demo_db import build_demo_db
from nr_llm_core.cli import main
from nr_llm_core.cli.playground import _providers

from ._wire import ForwardingProxy, Reply, WireServer
from .test_anthropic_wire import message_reply, text
from .test_openai_wire import text_reply

USER = "proxy-user-CANARY"
PASSWORD = "proxy-pw-CANARY-7f3a"
AMBIENT = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")

# provider -> (its --base-url for a server at URL, the path it posts to, a final answer)
PROVIDERS = {
    "openai": ("{url}/v1", "/v1/chat/completions", text_reply("Through.")),
    "anthropic": ("{url}", "/v1/messages", message_reply(text("Through."))),
}


@pytest.fixture(autouse=True)
def _quiet_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # Only what a test names loads, and no proxy variable from outside is in play.
    monkeypatch.setenv("NR_LLM_DISABLE_PLUGIN_AUTOLOAD", "1")
    for name in (*AMBIENT, "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)


def run_cli(
    provider: str, server: WireServer, *extra: str, env: dict[str, str] | None = None
) -> Result:
    base = PROVIDERS[provider][0].format(url=server.url)
    keys = {"OPENAI_API_KEY": "sk-cli-proxy", "ANTHROPIC_API_KEY": "sk-ant-cli-proxy"}
    return CliRunner().invoke(
        main,
        ["run", "hi", "--provider", provider, "--base-url", base, *extra],
        env={**keys, **(env or {})},
    )


def line(server: WireServer, provider: str) -> bytes:
    return f"POST {server.url}{PROVIDERS[provider][1]} HTTP/1.1".encode()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_nr_llm_proxy_reaches_the_provider(provider: str) -> None:
    with WireServer([PROVIDERS[provider][2]]) as server, ForwardingProxy() as proxy:
        out = run_cli(provider, server, env={"NR_LLM_PROXY": proxy.url})
    assert out.exit_code == 0, out.output
    assert "Through." in out.output
    assert proxy.request_lines() == [line(server, provider)]
    assert len(server.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_proxy_flag_reaches_the_provider_and_wins_over_the_variable(provider: str) -> None:
    with (
        WireServer([PROVIDERS[provider][2]]) as server,
        ForwardingProxy() as from_env,
        ForwardingProxy() as from_flag,
    ):
        out = run_cli(
            provider, server, "--proxy", from_flag.url, env={"NR_LLM_PROXY": from_env.url}
        )
    assert out.exit_code == 0, out.output
    assert from_flag.request_lines() == [line(server, provider)]
    assert from_env.requests == []


def test_an_empty_proxy_flag_turns_the_variable_off() -> None:
    with WireServer([text_reply("Direct.")]) as server, ForwardingProxy() as proxy:
        out = run_cli("openai", server, "--proxy", "", env={"NR_LLM_PROXY": proxy.url})
    assert out.exit_code == 0, out.output
    assert proxy.requests == []
    assert server.requests[0].raw.startswith(b"POST /v1/chat/completions HTTP/1.1")


def test_without_either_no_request_goes_through_a_proxy() -> None:
    with WireServer([text_reply("Direct.")]) as server, ForwardingProxy() as proxy:
        out = run_cli("openai", server)
    assert out.exit_code == 0, out.output
    assert proxy.requests == []
    assert len(server.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_ambient_proxy_variables_are_ignored(
    provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        WireServer([Reply(body={}), PROVIDERS[provider][2]]) as server,
        ForwardingProxy() as ambient,
    ):
        for name in AMBIENT:
            monkeypatch.setenv(name, ambient.url)
        with httpx.Client() as client:  # the control: these variables do catch loopback
            client.post(f"{server.url}/control", content=b"{}")
        assert len(ambient.requests) == 1
        out = run_cli(provider, server)
    assert out.exit_code == 0, out.output
    assert len(ambient.requests) == 1  # only the control
    assert server.requests[1].raw.startswith(f"POST {PROVIDERS[provider][1]} HTTP/1.1".encode())


# Refused URLs, each holding credentials that no output may repeat.
BAD = [
    f"{USER}:{PASSWORD}@proxy.example:3128",
    f"socks5://{USER}:{PASSWORD}@proxy.example:1080",
    f"http://{USER}:{PASSWORD}@proxy.example:{PASSWORD}",
    f"http://{USER}:{PASSWORD}@proxy.example:3128/{PASSWORD}",
]


def assert_usage_error(out: Result, hint: str) -> None:
    assert out.exit_code == 2, out.output
    assert f"Error: Invalid value for {hint}: " in out.output
    assert "proxy" in out.output.rsplit("Error:", 1)[1]
    assert USER not in out.output
    assert PASSWORD not in out.output
    assert "proxy.example" not in out.output


@pytest.mark.parametrize("url", BAD)
def test_a_bad_proxy_flag_is_a_usage_error_that_does_not_repeat_it(url: str) -> None:
    with WireServer([]) as server:
        out = run_cli("openai", server, "--proxy", url)
    assert_usage_error(out, "'--proxy'")
    assert server.requests == []


@pytest.mark.parametrize("url", BAD)
def test_a_bad_nr_llm_proxy_is_a_usage_error_that_names_the_variable(url: str) -> None:
    with WireServer([]) as server:
        out = run_cli("anthropic", server, env={"NR_LLM_PROXY": url})
    assert_usage_error(out, "NR_LLM_PROXY")
    assert server.requests == []


@pytest.mark.parametrize(
    "args",
    [
        ["run", "hi"],  # the scripted demo sends nothing, but the setting is still wrong
        ["runs", "approve", "some-run"],
        ["runs", "deny", "some-run"],
        ["playground", "--no-open"],
    ],
    ids=" ".join,
)
def test_every_command_with_providers_checks_nr_llm_proxy(args: list[str]) -> None:
    out = CliRunner().invoke(main, args, env={"NR_LLM_PROXY": BAD[1]})
    assert_usage_error(out, "NR_LLM_PROXY")


@pytest.mark.parametrize("args", [["run"], ["runs", "approve"], ["playground"]], ids=" ".join)
def test_help_names_the_option_and_the_variable_but_never_the_value(args: list[str]) -> None:
    secret = f"http://{USER}:{PASSWORD}@proxy.example:3128"
    out = CliRunner().invoke(main, [*args, "--help"], env={"NR_LLM_PROXY": secret})
    assert out.exit_code == 0, out.output
    assert "--proxy URL" in out.output
    assert "NR_LLM_PROXY" in out.output
    assert USER not in out.output
    assert PASSWORD not in out.output


def test_checking_the_proxy_imports_no_httpx() -> None:
    code = (
        "import os, sys\n"
        # The vendors' hosts need a key before a provider is built.
        "os.environ.update(OPENAI_API_KEY='sk-x', ANTHROPIC_API_KEY='sk-ant-x')\n"
        "from click.testing import CliRunner\n"
        "from nr_llm_core.cli import main\n"
        "from nr_llm_core.cli._providers import make_provider\n"
        "bad = CliRunner().invoke(main, ['run', 'hi', '--provider', 'openai', '--proxy', 'x'])\n"
        "assert bad.exit_code == 2, bad.output\n"
        "help = CliRunner().invoke(main, ['run', '--help'], env={'NR_LLM_PROXY': 'http://p:1'})\n"
        "assert help.exit_code == 0, help.output\n"
        "make_provider('openai', proxy='http://u:p@proxy.example:3128')\n"
        "make_provider('anthropic', proxy='https://proxy.example')\n"
        "print('httpx' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "False", done.stderr


def test_runs_approve_continues_the_run_through_the_proxy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "shop.db"
    build_demo_db(db)
    monkeypatch.setenv("NR_LLM_RECORDS_DB", str(db))
    monkeypatch.setenv("NR_LLM_ENABLE_TOOLS", "update_record")
    monkeypatch.delenv("NR_LLM_DISABLE_PLUGIN_AUTOLOAD")  # the builtin update_record is needed
    call = {
        "name": "update_record",
        "arguments": {"table": "products", "key": {"id": 1}, "values": {"name": "Quiet"}},
    }
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": "Renaming it.", "tool_calls": [call]}]))
    runner = CliRunner()
    out = runner.invoke(main, ["run", "rename product 1", "--script", str(script)])
    match = re.search(r"nr-llm runs approve\|deny (\w+) --digest (\w+)", out.output)
    assert match, out.output
    run_id, digest = match.groups()
    with WireServer([text_reply("Renamed.")]) as server, ForwardingProxy() as proxy:
        # A local endpoint: update_record's data class is not offered to an external zone
        # (approving it there is refused, ADR 0029).
        provider = ["--provider", "openai", "--base-url", f"{server.url}/v1"]
        provider += ["--trust-zone", "local", "--allow-provider-change"]  # from scripted
        out = runner.invoke(
            main,
            ["runs", "approve", run_id, "--digest", digest, *provider, "--proxy", proxy.url],
            env={"OPENAI_API_KEY": "sk-cli-proxy"},
        )
    assert out.exit_code == 0, out.output
    assert "Renamed." in out.output
    assert proxy.request_lines() == [line(server, "openai")]
    with sqlite3.connect(db) as conn:  # the approved call ran
        assert conn.execute("SELECT name FROM products WHERE id = 1").fetchone() == ("Quiet",)


def test_the_playground_builds_its_providers_with_the_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-x")
    secret = f"http://{USER}:{PASSWORD}@proxy.example:3128"
    factories: dict[str, Any] = _providers(None, None, None, secret)
    assert set(factories) == {"scripted", "openai", "anthropic"}
    for name in ("openai", "anthropic"):
        shown = repr(factories[name]())
        assert shown.endswith(", proxy='http://***@proxy.example:3128')"), shown
        assert PASSWORD not in shown
    for none in (None, ""):  # as the option hands them on: unset, or turned off
        for name in ("openai", "anthropic"):
            assert "proxy=" not in repr(_providers(None, None, None, none)[name]())
