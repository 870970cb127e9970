"""``nr-llm runs approve|deny`` with another provider or model than the run was suspended with.

The deciding shell's configuration chooses the provider a run goes on with; until ADR 0033 a
run suspended on one provider was resumed on whatever the approver's shell named (the scripted
demo, by default), without a word. Now the decision is refused before anything is shown,
claimed or sent, naming both, and ``--allow-provider-change`` lets it go on. Real ``nr-llm``
commands on a real audit database file, the builtin ``update_record`` from its entry point,
and the OpenAI-compatible adapter against a loopback server that keeps every request.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from nr_llm_core.cli import main
from tests.loop._wire import WireServer
from tests.loop.test_openai_wire import text_reply, tool_call_reply

ARGUMENTS = {"table": "products", "key": {"id": 1}, "values": {"name": "Quiet keyboard"}}
UPDATE = {"name": "update_record", "arguments": ARGUMENTS}
ORIGINAL = "Mechanical keyboard"
# update_record's data class is internal: an external endpoint is never offered it (ADR 0020).
LOCAL = ("--trust-zone", "local")


def product_name(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        (name,) = conn.execute("SELECT name FROM products WHERE id = 1").fetchone()
    return str(name)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), env={"OPENAI_API_KEY": "sk-provider-change"})


def waiting(run_id: str) -> dict[str, Any]:
    shown = invoke("runs", "show", run_id, "--json")
    assert shown.exit_code == 0, shown.output
    out: dict[str, Any] = json.loads(shown.output)
    return out


def run_id_and_digest(output: str) -> tuple[str, str]:
    match = re.search(r"nr-llm runs approve\|deny (\w+) --digest (\w+)", output)
    assert match, output
    return match.group(1), match.group(2)


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps([{"content": "Renaming it.", "tool_calls": [UPDATE]}, "Renamed."]))
    return path


def suspend_scripted(script: Path) -> tuple[str, str]:
    out = invoke("run", "rename product 1", "--script", str(script))
    assert out.exit_code == 0, out.output
    return run_id_and_digest(out.output)


def suspend_openai(server: WireServer, model: str) -> tuple[str, str]:
    openai = ("--provider", "openai", "--base-url", f"{server.url}/v1", "--model", model)
    out = invoke("run", "rename product 1", *openai, *LOCAL)
    assert out.exit_code == 0, out.output
    return run_id_and_digest(out.output)


def openai_options(server: WireServer, model: str | None = None) -> list[str]:
    options = ["--provider", "openai", "--base-url", f"{server.url}/v1", *LOCAL]
    return options if model is None else [*options, "--model", model]


def update_call() -> Any:
    return tool_call_reply(("call_1", "update_record", json.dumps(ARGUMENTS)))


def test_a_decision_with_another_provider_is_refused_and_the_run_still_waits(
    shop: Path, script: Path
) -> None:
    """Tries to approve, with the OpenAI adapter, a run the scripted provider suspended: the
    command exits 1 naming both providers and the flag; nothing reaches the server, the tool
    does not run, the run still waits on the same digest. With ``--allow-provider-change`` the
    same decision goes through, says so, and the approval step records the change."""
    run_id, digest = suspend_scripted(script)
    with WireServer([text_reply("Renamed on openai.")]) as server:
        decide = ["runs", "approve", run_id, "--digest", digest, *openai_options(server)]
        refused = invoke(*decide)
        assert refused.exit_code == 1, refused.output
        message = " ".join(refused.output.split())
        assert f"run '{run_id}' was suspended with provider scripted;" in message
        assert "would resume it with openai (model 'gpt-4o-mini')" in message
        assert "the run still waits" in message
        assert "--provider scripted (and the run's --script)" in message
        assert "--allow-provider-change" in message
        assert "awaiting approval" not in refused.output  # refused before the calls are shown
        assert server.requests == []
        assert product_name(shop) == ORIGINAL
        record = waiting(run_id)
        assert record["run"]["status"] == "suspended", record["run"]
        assert record["pending"]["digest"] == digest
        assert record["run"]["claimed_by"] is None

        allowed = invoke(*decide, "--allow-provider-change")
    assert allowed.exit_code == 0, allowed.output
    assert "Renamed on openai." in allowed.output
    assert len(server.requests) == 1
    assert product_name(shop) == "Quiet keyboard"
    note = " ".join(allowed.output.split())
    assert "was suspended with provider scripted; it goes on with openai" in note
    steps = [s["step"] for s in waiting(run_id)["steps"] if s["kind"] == "approval"]
    assert [s.get("provider_changed") for s in steps] == [True]


def test_another_model_of_the_same_provider_is_refused_and_the_same_one_goes_on(
    shop: Path,
) -> None:
    """Suspends a run on the OpenAI adapter with model A; approving with model B is refused
    (exit 1, both models named, no request sent, the run waits); approving with model A, with
    no flag, goes on and records no change."""
    with WireServer([update_call(), text_reply("Renamed by model A.")]) as server:
        run_id, digest = suspend_openai(server, "model-a")
        assert len(server.requests) == 1
        refused = invoke(
            "runs", "approve", run_id, "--digest", digest, *openai_options(server, "model-b")
        )
        assert refused.exit_code == 1, refused.output
        message = " ".join(refused.output.split())
        assert "was suspended with provider openai (model 'model-a')" in message
        assert "would resume it with openai (model 'model-b')" in message
        assert "decide with --provider openai --model model-a" in message
        assert len(server.requests) == 1
        assert waiting(run_id)["run"]["status"] == "suspended"
        assert product_name(shop) == ORIGINAL

        same = invoke(
            "runs", "approve", run_id, "--digest", digest, *openai_options(server, "model-a")
        )
    assert same.exit_code == 0, same.output
    assert "Renamed by model A." in same.output
    assert "goes on with" not in same.output
    assert product_name(shop) == "Quiet keyboard"
    assert server.requests[1].json()["model"] == "model-a"
    steps = [s["step"] for s in waiting(run_id)["steps"] if s["kind"] == "approval"]
    assert len(steps) == 1 and "provider_changed" not in steps[0]


def test_a_denial_with_another_provider_is_refused_too(shop: Path, script: Path) -> None:
    """A denial runs no tool, but the run goes on with the deciding provider, which is then
    sent the conversation: it is refused the same way, and ``runs discard`` is named as the
    way to end the run without any provider."""
    run_id, digest = suspend_scripted(script)
    with WireServer([text_reply("Not renamed.")]) as server:
        decide = ["runs", "deny", run_id, "--digest", digest, *openai_options(server)]
        refused = invoke(*decide)
        assert refused.exit_code == 1, refused.output
        assert f"nr-llm runs discard {run_id}" in " ".join(refused.output.split())
        assert server.requests == []
        assert waiting(run_id)["run"]["status"] == "suspended"
        denied = invoke(*decide, "--allow-provider-change")
    assert denied.exit_code == 0, denied.output
    assert "did not approve" in denied.output
    assert product_name(shop) == ORIGINAL


def test_the_default_provider_of_the_deciding_shell_is_refused(shop: Path) -> None:
    """The everyday trap: a run suspended on the OpenAI adapter, approved in a shell that
    names no provider (the scripted demo answers). Refused, naming both."""
    with WireServer([update_call()]) as server:
        run_id, digest = suspend_openai(server, "gpt-4o")
    refused = invoke("runs", "approve", run_id, "--digest", digest)
    assert refused.exit_code == 1, refused.output
    message = " ".join(refused.output.split())
    assert "was suspended with provider openai (model 'gpt-4o');" in message
    assert "would resume it with scripted." in message
    assert product_name(shop) == ORIGINAL


def test_a_recorded_model_is_shown_escaped(shop: Path) -> None:
    """The recorded model comes from the store: one with an ANSI escape, a bidirectional
    override and a newline reaches the terminal escaped in the refusal and in ``runs show``,
    and is not suggested as a command-line value."""
    model = "gpt\x1b[2J\u202eevil\nline"
    with WireServer([update_call()]) as server:
        run_id, digest = suspend_openai(server, model)
        refused = invoke(
            "runs", "approve", run_id, "--digest", digest, *openai_options(server, "gpt-4o")
        )
        assert server.requests[0].json()["model"] == model  # it was the model
    assert refused.exit_code == 1, refused.output
    shown = invoke("runs", "show", run_id)
    for out in (refused.output, shown.output):
        assert "\x1b" not in out and "\u202e" not in out
        assert "gpt\\x1b[2J\\u202eevil\\nline" in out, out
    assert "--model gpt" not in refused.output
    assert "suspended with provider openai (model " in shown.output


def test_runs_show_names_the_provider_the_run_waits_for(shop: Path, script: Path) -> None:
    """The pending section says which provider the run was suspended with, so the approver
    knows which ``--provider`` to decide with."""
    run_id, _ = suspend_scripted(script)
    shown = invoke("runs", "show", run_id)
    assert "  suspended with provider scripted\n" in shown.output
