"""Approval from the command line: a run suspends, `nr-llm runs approve|deny` resumes it."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from nr_llm_core.cli import main

UPDATE = {
    "name": "update_record",
    "arguments": {"table": "products", "key": {"id": 1}, "values": {"name": "Quiet keyboard"}},
}


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    turns = [{"content": "Renaming it.", "tool_calls": [UPDATE]}, "Renamed."]
    path.write_text(json.dumps(turns))
    return path


def product_name(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        (name,) = conn.execute("SELECT name FROM products WHERE id = 1").fetchone()
    return str(name)


def suspend(script: Path) -> tuple[str, str]:
    out = CliRunner().invoke(main, ["run", "rename product 1", "--script", str(script)])
    assert out.exit_code == 0, out.output
    assert "awaiting_approval" in out.output
    match = re.search(r"nr-llm runs approve\|deny (\w+) --digest (\w+)", out.output)
    assert match, out.output
    return match.group(1), match.group(2)


def test_approve_runs_the_call_and_finishes(shop: Path, script: Path) -> None:
    run_id, digest = suspend(script)
    assert product_name(shop) == "Mechanical keyboard"  # nothing ran before the decision
    runner = CliRunner()
    listed = runner.invoke(main, ["runs", "list"])
    assert run_id in listed.output
    out = runner.invoke(
        main, ["runs", "approve", run_id, "--digest", digest, "--script", str(script)]
    )
    assert out.exit_code == 0, out.output
    assert "Renamed." in out.output and "completed" in out.output
    assert product_name(shop) == "Quiet keyboard"
    again = runner.invoke(main, ["runs", "approve", run_id, "--script", str(script)])
    assert again.exit_code == 1 and "already resumed by cli on" in again.output


def test_deny_refuses_the_call(shop: Path, script: Path) -> None:
    run_id, digest = suspend(script)
    out = CliRunner().invoke(
        main, ["runs", "deny", run_id, "--digest", digest, "--script", str(script)]
    )
    assert out.exit_code == 0, out.output
    assert "did not approve" in out.output
    assert product_name(shop) == "Mechanical keyboard"


def test_a_stale_digest_is_refused(shop: Path, script: Path) -> None:
    run_id, _ = suspend(script)
    out = CliRunner().invoke(
        main, ["runs", "approve", run_id, "--digest", "0" * 64, "--script", str(script)]
    )
    assert out.exit_code == 1 and "stale approval" in out.output
    assert product_name(shop) == "Mechanical keyboard"


def test_approving_where_the_tool_is_not_enabled_runs_nothing_and_the_run_still_waits(
    shop: Path, script: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The newcomer's path: the run was started with ``update_record`` enabled; ``runs
    approve`` in a shell without ``NR_LLM_ENABLE_TOOLS`` used to answer the approved call
    ``not permitted`` and finish the run (exit 0). It is refused before anything is claimed,
    naming the tool; approved again where the tool is enabled, the call runs once."""
    run_id, digest = suspend(script)
    monkeypatch.delenv("NR_LLM_ENABLE_TOOLS")
    runner = CliRunner()
    approve = ["runs", "approve", run_id, "--digest", digest, "--script", str(script)]
    out = runner.invoke(main, approve)
    assert out.exit_code == 1, out.output
    said = " ".join(out.output.split())
    assert (
        'an approved call\'s tool "update_record" is not offered here: it is switched off by '
        'default (fix: enable it: enable = ["update_record"] under [tools] in the config file, '
        "or NR_LLM_ENABLE_TOOLS=update_record); nothing ran and the run still waits"
    ) in said
    assert product_name(shop) == "Mechanical keyboard"
    shown = runner.invoke(main, ["runs", "show", run_id])
    assert "awaiting_approval" in shown.output or "suspended" in shown.output, shown.output
    monkeypatch.setenv("NR_LLM_ENABLE_TOOLS", "update_record")
    out = runner.invoke(main, approve)
    assert out.exit_code == 0, out.output
    assert product_name(shop) == "Quiet keyboard"
