"""``--ca-bundle`` and ``NR_LLM_CA_BUNDLE`` on the command line, over real TLS on loopback: they
reach the provider of ``nr-llm run``, ``nr-llm runs approve|deny`` and the playground;
``SSL_CERT_FILE`` does not; a bad file is a usage error (exit 2) that says what is wrong."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from nr_llm_builtins.demo_db import build_demo_db
from nr_llm_core.cli import main
from nr_llm_core.cli.playground import _providers

from ._pki import Pki
from ._wire import WireServer
from .test_anthropic_wire import message_reply, text
from .test_openai_wire import text_reply

AMBIENT = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")

# provider -> (its endpoint on a server at URL, its name in messages, a final answer); the
# --base-url is the endpoint without its last path segments.
PROVIDERS = {
    "openai": (
        "{url}/v1/chat/completions",
        "the OpenAI-compatible provider",
        text_reply("Trusted."),
    ),
    "anthropic": ("{url}/v1/messages", "the Anthropic provider", message_reply(text("Trusted."))),
}
BASES = {"openai": "{url}/v1", "anthropic": "{url}"}
UNTRUSTED = "the TLS certificate is not signed by a trusted certificate authority"


@pytest.fixture(autouse=True)
def _quiet_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NR_LLM_DISABLE_PLUGIN_AUTOLOAD", "1")
    for name in (*AMBIENT, "NO_PROXY", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)


def run_cli(
    provider: str, server: WireServer, *extra: str, env: dict[str, str] | None = None
) -> Result:
    base = BASES[provider].format(url=server.url)
    keys = {"OPENAI_API_KEY": "sk-cli-ca", "ANTHROPIC_API_KEY": "sk-ant-cli-ca"}
    return CliRunner().invoke(
        main,
        ["run", "hi", "--provider", provider, "--base-url", base, *extra],
        env={**keys, **(env or {})},
    )


def assert_refused(out: Result, provider: str, server: WireServer) -> None:
    assert out.exit_code != 0
    endpoint = PROVIDERS[provider][0].format(url=server.url)
    assert f"could not reach {PROVIDERS[provider][1]} at {endpoint}: {UNTRUSTED}" in out.output
    assert server.requests == []


@pytest.mark.parametrize("provider", PROVIDERS)
def test_nr_llm_ca_bundle_reaches_the_provider(provider: str, pki: Pki) -> None:
    with WireServer([PROVIDERS[provider][2]], tls=pki.server_context()) as server:
        out = run_cli(provider, server, env={"NR_LLM_CA_BUNDLE": str(pki.internal_file)})
    assert out.exit_code == 0, out.output
    assert "Trusted." in out.output
    assert len(server.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_flag_reaches_the_provider_and_wins_over_the_variable(provider: str, pki: Pki) -> None:
    # The variable names an authority that did not sign this server: only the flag's can work.
    with WireServer([PROVIDERS[provider][2]], tls=pki.server_context()) as server:
        out = run_cli(
            provider,
            server,
            "--ca-bundle",
            str(pki.internal_file),
            env={"NR_LLM_CA_BUNDLE": str(pki.public_file)},
        )
    assert out.exit_code == 0, out.output
    assert "Trusted." in out.output


@pytest.mark.parametrize("provider", PROVIDERS)
def test_without_either_the_internal_authority_is_refused(provider: str, pki: Pki) -> None:
    with WireServer([PROVIDERS[provider][2]], tls=pki.server_context()) as server:
        assert_refused(run_cli(provider, server), provider, server)
        # A bundle of another authority does not help either.
        out = run_cli(provider, server, "--ca-bundle", str(pki.public_file))
        assert_refused(out, provider, server)


def test_an_empty_flag_turns_the_variable_off(pki: Pki) -> None:
    with WireServer([text_reply("Trusted.")], tls=pki.server_context()) as server:
        out = run_cli(
            "openai", server, "--ca-bundle", "", env={"NR_LLM_CA_BUNDLE": str(pki.internal_file)}
        )
        assert_refused(out, "openai", server)


def test_ssl_cert_file_does_not_stand_in_for_the_option(
    pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(pki.internal_file))
    monkeypatch.setenv("SSL_CERT_DIR", str(pki.folder))
    with WireServer([text_reply("Trusted.")], tls=pki.server_context()) as server:
        assert_refused(run_cli("openai", server), "openai", server)


def assert_usage_error(out: Result, hint: str, path: Path, problem: str) -> None:
    assert out.exit_code == 2, out.output
    assert f"Error: Invalid value for {hint}: the CA bundle {str(path)!r} {problem}" in out.output


@pytest.mark.parametrize("case", ["missing", "directory", "text", "server certificate only"])
def test_a_bad_flag_is_a_usage_error_that_says_what_is_wrong(case: str, pki: Pki) -> None:
    path, problem = pki.bad_bundles()[case]
    with WireServer([]) as server:
        out = run_cli("openai", server, "--ca-bundle", str(path))
    assert_usage_error(out, "'--ca-bundle'", path, problem)
    assert server.requests == []


@pytest.mark.parametrize("case", ["missing", "directory", "der"])
def test_a_bad_variable_is_a_usage_error_that_names_it(case: str, pki: Pki) -> None:
    path, problem = pki.bad_bundles()[case]
    with WireServer([]) as server:
        out = run_cli("anthropic", server, env={"NR_LLM_CA_BUNDLE": str(path)})
    assert_usage_error(out, "NR_LLM_CA_BUNDLE", path, problem)
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
def test_every_command_with_providers_checks_nr_llm_ca_bundle(args: list[str], pki: Pki) -> None:
    path, problem = pki.bad_bundles()["missing"]
    out = CliRunner().invoke(main, args, env={"NR_LLM_CA_BUNDLE": str(path)})
    assert_usage_error(out, "NR_LLM_CA_BUNDLE", path, problem)


@pytest.mark.parametrize("args", [["run"], ["runs", "approve"], ["playground"]], ids=" ".join)
def test_help_names_the_option_and_the_variable(args: list[str]) -> None:
    out = CliRunner().invoke(main, [*args, "--help"])
    assert out.exit_code == 0, out.output
    assert "--ca-bundle PATH" in out.output
    assert "NR_LLM_CA_BUNDLE" in out.output


def test_checking_the_bundle_imports_no_httpx(pki: Pki) -> None:
    bundle = str(pki.internal_file)
    code = (
        "import os, sys\n"
        # The vendors' hosts need a key before a provider is built.
        "os.environ.update(OPENAI_API_KEY='sk-x', ANTHROPIC_API_KEY='sk-ant-x')\n"
        "from click.testing import CliRunner\n"
        "from nr_llm_core.cli import main\n"
        "from nr_llm_core.cli._providers import make_provider\n"
        "help = CliRunner().invoke(main, ['run', '--help'])\n"
        "assert help.exit_code == 0, help.output\n"
        "untouched = sorted(m for m in ('httpx', 'ssl', 'certifi') if m in sys.modules)\n"
        "bad = CliRunner().invoke(main, ['run', 'hi', '--provider', 'openai', "
        "'--ca-bundle', '/nonexistent/ca.pem'])\n"
        "assert bad.exit_code == 2, bad.output\n"
        f"make_provider('openai', ca_bundle={bundle!r})\n"
        f"make_provider('anthropic', ca_bundle={bundle!r}, proxy='http://proxy.example:3128')\n"
        "print(untouched, 'httpx' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    # Nothing TLS is imported until a bundle is given, and httpx not before a request.
    assert done.stdout.strip() == "[] False", done.stderr


def test_runs_approve_continues_the_run_with_the_bundle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pki: Pki
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
    with WireServer([text_reply("Renamed.")], tls=pki.server_context()) as server:
        # A local endpoint: update_record's data class is not offered to an external zone
        # (approving it there is refused, ADR 0029).
        provider = ["--provider", "openai", "--base-url", f"{server.url}/v1"]
        provider += ["--trust-zone", "local", "--allow-provider-change"]  # from scripted
        out = runner.invoke(
            main,
            ["runs", "approve", run_id, "--digest", digest, *provider],
            env={"OPENAI_API_KEY": "sk-cli-ca", "NR_LLM_CA_BUNDLE": str(pki.internal_file)},
        )
    assert out.exit_code == 0, out.output
    assert "Renamed." in out.output
    assert len(server.requests) == 1
    with sqlite3.connect(db) as conn:  # the approved call ran
        assert conn.execute("SELECT name FROM products WHERE id = 1").fetchone() == ("Quiet",)


def test_the_playground_builds_its_providers_with_the_bundle(
    monkeypatch: pytest.MonkeyPatch, pki: Pki
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-x")
    bundle = str(pki.internal_file)
    factories: dict[str, Any] = _providers(None, None, None, None, bundle)
    assert set(factories) == {"scripted", "openai", "anthropic"}
    for name in ("openai", "anthropic"):
        provider = factories[name]()
        assert repr(provider).endswith(f", ca_bundle={bundle!r})"), repr(provider)
        held = provider._poster._http()._transport._pool._ssl_context.get_ca_certs()
        internal = (("organizationName", "nr-llm internal test CA"),)
        assert [c for c in held if c["subject"][0] == internal]
        provider.close()
    for none in (None, ""):  # as the option hands them on: unset, or turned off
        for name in ("openai", "anthropic"):
            assert "ca_bundle=" not in repr(_providers(None, None, None, None, none)[name]())
