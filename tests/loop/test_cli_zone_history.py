"""``nr-llm runs approve`` continuing a locally suspended run on an external provider: real
``nr-llm`` processes, a real audit database file, the builtin tools from their entry points, and
a loopback server that keeps every request byte."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from nr_llm_builtins.demo_db import build_demo_db

from . import _zones as z
from ._wire import WireServer
from .test_openai_wire import text_reply

CANARY = "ZONE-CLI-CANARY-1d2e3f"


def nr_llm(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nr_llm_core", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_runs_approve_on_an_external_provider_sends_no_secret_adjacent_output(
    tmp_path: Path,
) -> None:
    """The local scripted model reads an environment variable unmasked (``get_env_raw``,
    secret-adjacent), quotes it, and asks to write it into a record (``update_record``,
    approval-gated): the run waits. ``runs approve --provider openai`` continues it in another
    process against the loopback server: the variable's value is in no request byte; the host
    sentence stands in for the tool's output and for what the local model wrote after it."""
    shop = tmp_path / "shop.db"
    build_demo_db(shop)
    env = {
        **os.environ,
        "NR_LLM_DB": str(tmp_path / "audit.db"),
        "NR_LLM_RECORDS_DB": str(shop),
        "NR_LLM_ENABLE_TOOLS": "get_env_raw,update_record",
        "ZONE_CLI_VALUE": CANARY,
        "OPENAI_API_KEY": "sk-cli-zone-test",
    }
    script = tmp_path / "script.json"
    read = {"name": "get_env_raw", "arguments": {"name": "ZONE_CLI_VALUE"}, "id": "env1"}
    write = {
        "name": "update_record",
        "arguments": {"table": "products", "key": {"id": 1}, "values": {"name": CANARY}},
        "id": "upd1",
    }
    turns = [
        {"content": "Reading the variable.", "tool_calls": [read]},
        {"content": f"It is {CANARY}; saving it.", "tool_calls": [write]},
    ]
    script.write_text(json.dumps(turns))
    suspended = nr_llm(
        "run", "Save ZONE_CLI_VALUE as product 1's name.", "--script", str(script), env=env
    )
    assert suspended.returncode == 0, suspended.stderr
    match = re.search(r"nr-llm runs approve\|deny (\w+) --digest (\w+)", suspended.stdout)
    assert match, suspended.stdout
    run_id, digest = match.groups()
    with WireServer([text_reply("Done.")]) as server:
        decide = ("--digest", digest, "--provider", "openai", "--base-url", f"{server.url}/v1")
        decide += ("--allow-provider-change",)  # suspended by the scripted provider (ADR 0033)
        # update_record's class is above the external ceiling: approving it there would run
        # nothing, so it is refused and the run still waits (ADR 0029); denied, it goes on.
        refused = nr_llm("runs", "approve", run_id, *decide, env=env)
        assert refused.returncode == 1, refused.stderr
        said = " ".join(refused.stderr.split())
        assert 'tool "update_record" is not offered here: its data class is internal' in said
        assert "trust zone local or private-hosted: --trust-zone on the command line" in said
        assert server.requests == []
        approved = nr_llm("runs", "deny", run_id, *decide, env=env)
    assert approved.returncode == 0, approved.stderr
    assert "Done." in approved.stdout
    assert len(server.requests) == 1
    assert CANARY.encode() not in server.all_bytes()
    sent = server.requests[0].json()["messages"]
    assert sent[2] == {
        "role": "tool",
        "tool_call_id": "env1",
        "content": z.over_ceiling("get_env_raw", "secret-adjacent", "external"),
    }
    assert sent[3]["content"] == z.derived_turn("external")
    assert sent[3]["tool_calls"][0]["function"] == {"name": "update_record", "arguments": "{}"}
    assert sent[4]["content"] == z.derived_output("external")
    # The store says, in host words, that something was withheld from the external request.
    shown = nr_llm("runs", "show", run_id, env=env)
    assert "trust zone external: withheld 1 tool output(s)" in shown.stdout
    assert CANARY not in shown.stdout
