"""No command shows a key. With canary keys in the environment and in the keys file, every
command (each ``--help``, the listings, ``keys``, runs that reach a real server, one it
refuses, one that cannot connect) is swept: no canary in its stdout, its stderr, any log
record (down to DEBUG), nor in any byte of the audit database files. Only the server the
key is meant for receives it."""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from nr_llm_core.cli import main
from nr_llm_core.keys import store_key
from tests.loop._wire import Reply, WireServer, refused_url
from tests.loop.test_anthropic_wire import message_reply, text
from tests.loop.test_openai_wire import text_reply

ENV_KEY = "sk-proj-CANARY-env-9d1f27"
STORED_OPENAI = "sk-proj-CANARY-file-55ae03"
STORED_ANTHROPIC = "sk-ant-api03-CANARY-file-c4e2"
TYPED = "sk-proj-CANARY-typed-1b7d"
CANARY = re.compile("CANARY")


def every_help() -> list[list[str]]:
    """``--help`` of the group, of every command and of every subcommand."""
    ctx = click.Context(main)
    found: list[list[str]] = [["--help"]]
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        found.append([name, "--help"])
        if isinstance(command, click.Group):
            found.extend([name, sub, "--help"] for sub in command.list_commands(ctx))
    return found


def test_no_command_shows_a_key(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    monkeypatch.setenv("NR_LLM_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    store_key("OPENAI_API_KEY", STORED_OPENAI)
    store_key("ANTHROPIC_API_KEY", STORED_ANTHROPIC)
    caplog.set_level(logging.DEBUG)
    runner = CliRunner()
    outputs: list[str] = []

    def invoke(*args: str, stdin: str | None = None) -> str:
        out = runner.invoke(main, list(args), input=stdin)
        outputs.append(f"$ nr-llm {' '.join(args)}\n{out.stdout}{out.stderr}")
        assert out.exception is None or isinstance(out.exception, SystemExit), out.exception
        return out.stdout

    for args in every_help():
        invoke(*args)
    for args in (
        ["providers"],
        ["providers", "--json"],
        ["keys", "list"],
        ["keys", "list", "--json"],
        ["keys", "path"],
        ["config", "show"],
        ["config", "path"],
        ["tools", "list"],
        ["doctor"],
        ["run", "hi"],
    ):
        invoke(*args)
    invoke("keys", "set", "openai", stdin=f"{TYPED}\n")  # the environment's key is noted
    with WireServer(
        [
            text_reply("answered"),
            Reply(401, {"error": {"code": "invalid_api_key", "message": f"bad {ENV_KEY}"}}),
            message_reply(text("answered")),
        ]
    ) as server:
        openai = ["run", "hi", "--provider", "openai", "--base-url", f"{server.url}/v1"]
        first = invoke(*openai)
        invoke(*openai)  # refused by the server: its body quotes the key, the error must not
        invoke("run", "hi", "--provider", "anthropic", "--base-url", server.url)
        invoke("run", "hi", "--provider", "openai", "--base-url", refused_url(), "--timeout", "1")
    # The keys went where they were meant to, and nowhere else.
    assert server.requests[0].headers["authorization"] == f"Bearer {ENV_KEY}"
    assert server.requests[2].headers["x-api-key"] == STORED_ANTHROPIC
    run_id = re.search(r"trace \(run (\w+)\)", first)
    assert run_id, first
    invoke("runs", "list")
    invoke("runs", "show", run_id.group(1))
    invoke("runs", "show", run_id.group(1), "--json")
    invoke("keys", "remove", "anthropic")
    monkeypatch.delenv("OPENAI_API_KEY")
    invoke("providers")
    invoke("keys", "list")

    for output in outputs:
        assert not CANARY.search(output), output
    assert not CANARY.search(caplog.text), caplog.text
    database = Path(os.environ["NR_LLM_DB"])
    files = [p for p in database.parent.iterdir() if p.name.startswith(database.name)]
    assert database in files
    for path in files:
        if path.is_file():
            assert b"CANARY" not in path.read_bytes(), path
