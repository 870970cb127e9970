"""The ``decide with:`` line a waiting run prints is a command that works as printed.

A run suspended with a provider other than the deciding shell's default, or with a ``--script``,
is refused when decided with no provider options (ADR 0033); the line used to print the bare
``nr-llm runs approve|deny ID --digest D`` all the same. Each test here runs the printed line
word for word (``approve`` for ``approve|deny``, its ``VAR=value`` prefix as the environment),
in a shell that does not have the run's ``NR_LLM_ENABLE_TOOLS``, against a real audit
database, the builtin ``update_record`` and, for OpenAI, a loopback server.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from nr_llm_core.cli import main
from tests.loop._wire import WireServer
from tests.loop.test_openai_wire import text_reply, tool_call_reply

ARGUMENTS = {"table": "products", "key": {"id": 1}, "values": {"name": "Quiet keyboard"}}
UPDATE = {"name": "update_record", "arguments": ARGUMENTS}


def product_name(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        (name,) = conn.execute("SELECT name FROM products WHERE id = 1").fetchone()
    return str(name)


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env={"OPENAI_API_KEY": "sk-decide", **(env or {})})


def decide_line(output: str) -> str:
    match = re.search(r"decide with: (.+)", output)
    assert match, output
    return match.group(1)


def run_as_printed(line: str, monkeypatch: pytest.MonkeyPatch) -> Result:
    """``line`` as a user pastes it, in a shell without the run's NR_LLM_ENABLE_TOOLS."""
    monkeypatch.delenv("NR_LLM_ENABLE_TOOLS", raising=False)
    words = shlex.split(line.replace("approve|deny", "approve"))
    env = {}
    while "=" in words[0]:
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    assert words[0] == "nr-llm", line
    return invoke(*words[1:], env=env)


def test_a_run_on_openai_prints_a_line_that_decides(
    shop: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Suspends a run on the OpenAI adapter with ``--model gpt-4o-mini`` (the base URL and
    trust zone from the config file), the tool enabled only by ``NR_LLM_ENABLE_TOOLS``; the
    printed line names the provider, the model and the variable, and run as printed it is
    accepted: the tool runs and the run completes."""
    with WireServer(
        [tool_call_reply(("call_1", "update_record", json.dumps(ARGUMENTS))), text_reply("Done.")]
    ) as server:
        config = tmp_path / "config.toml"
        config.write_text(
            f'[providers.openai]\nbase_url = "{server.url}/v1"\ntrust_zone = "local"\n'
        )
        os.chmod(config, 0o600)
        monkeypatch.setenv("NR_LLM_CONFIG", str(config))
        out = invoke("run", "rename product 1", "--provider", "openai", "--model", "gpt-4o-mini")
        assert out.exit_code == 0, out.output
        line = decide_line(out.output)
        assert "--provider openai --model gpt-4o-mini" in line
        assert line.startswith("NR_LLM_ENABLE_TOOLS=update_record nr-llm runs approve|deny ")
        decided = run_as_printed(line, monkeypatch)
    assert decided.exit_code == 0, decided.output
    assert "Done." in decided.output
    assert product_name(shop) == "Quiet keyboard"
    assert server.requests[1].json()["model"] == "gpt-4o-mini"


def test_a_scripted_run_prints_its_script(
    shop: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run started with ``--script FILE`` prints ``--script FILE``, and the line is accepted
    as printed (without it the demo's turns would be refused). ``runs show`` does not know the
    file: it says to give the script the run was started with."""
    script = tmp_path / "my script.json"
    script.write_text(json.dumps([{"content": "Renaming.", "tool_calls": [UPDATE]}, "Renamed."]))
    out = invoke("run", "rename product 1", "--script", str(script))
    assert out.exit_code == 0, out.output
    line = decide_line(out.output)
    assert f"--script {shlex.quote(str(script))}" in line
    assert "--provider" not in line  # scripted is the default here
    run_id = line.split()[4]
    shown = invoke("runs", "show", run_id)
    assert "--script <the script you ran with>" in decide_line(shown.output)
    decided = run_as_printed(line, monkeypatch)
    assert decided.exit_code == 0, decided.output
    assert "Renamed." in decided.output
    assert product_name(shop) == "Quiet keyboard"


def test_a_model_that_cannot_be_shown_is_not_suggested(shop: Path, tmp_path: Path) -> None:
    """A recorded model with an escape and a bidirectional override is never written into the
    line as a value (its visible form is another model): a placeholder stands for it, and
    nothing of it reaches the terminal raw."""
    model = "gpt\x1b[2J\u202eevil"
    with WireServer(
        [tool_call_reply(("call_1", "update_record", json.dumps(ARGUMENTS)))]
    ) as server:
        out = invoke(
            "run", "rename", "--provider", "openai", "--model", model,
            "--base-url", f"{server.url}/v1", "--trust-zone", "local",
        )  # fmt: skip
    assert out.exit_code == 0, out.output
    line = decide_line(out.output)
    assert "--provider openai --model <the model it was suspended with>" in line
    assert "\x1b" not in out.output and "\u202e" not in out.output
