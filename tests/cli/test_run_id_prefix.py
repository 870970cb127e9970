"""Every ``runs`` command that takes a RUN_ID takes a unique prefix of it; an unknown id is
"no such run", an ambiguous prefix names its candidates (issue 15, point 5). Real runs
suspended by ``nr-llm run`` on the builtin ``update_record``, in a real audit database file."""

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from nr_llm_core.audit import AgentRunPersister
from nr_llm_core.cli import main

UPDATE = {
    "name": "update_record",
    "arguments": {"table": "products", "key": {"id": 1}, "values": {"name": "Quiet keyboard"}},
}


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps([{"content": "Renaming it.", "tool_calls": [UPDATE]}, "Renamed."]))
    return path


def product_name(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        (name,) = conn.execute("SELECT name FROM products WHERE id = 1").fetchone()
    return str(name)


def suspend(script: Path) -> str:
    out = CliRunner().invoke(main, ["run", "rename product 1", "--script", str(script)])
    assert out.exit_code == 0, out.output
    match = re.search(r"nr-llm runs approve\|deny (\w+) --digest", out.output)
    assert match, out.output
    return match.group(1)


def test_show_takes_a_prefix(shop: Path, script: Path) -> None:
    run_id = suspend(script)
    out = CliRunner().invoke(main, ["runs", "show", run_id[:6]])
    assert out.exit_code == 0, out.output
    assert f"id: {run_id}\n" in out.output
    as_json = CliRunner().invoke(main, ["runs", "show", run_id[:6], "--json"])
    assert json.loads(as_json.output)["run"]["id"] == run_id


def test_approve_takes_a_prefix_and_runs_the_call(shop: Path, script: Path) -> None:
    run_id = suspend(script)
    out = CliRunner().invoke(main, ["runs", "approve", run_id[:8], "--script", str(script)])
    assert out.exit_code == 0, out.output
    assert "Renamed." in out.output
    assert product_name(shop) == "Quiet keyboard"


def test_deny_takes_a_prefix(shop: Path, script: Path) -> None:
    run_id = suspend(script)
    out = CliRunner().invoke(main, ["runs", "deny", run_id[:8], "--script", str(script)])
    assert out.exit_code == 0, out.output
    assert product_name(shop) == "Mechanical keyboard"


def test_discard_takes_a_prefix(shop: Path, script: Path) -> None:
    run_id = suspend(script)
    out = CliRunner().invoke(main, ["runs", "discard", run_id[:5]])
    assert out.exit_code == 0, out.output
    assert f"Discarded run {run_id};" in out.output
    with AgentRunPersister(os.environ["NR_LLM_DB"]) as store:
        record = store.get_run(run_id)
    assert record is not None and record["status"] == "cancelled"


@pytest.mark.parametrize(
    "command",
    [["show"], ["approve", "--yes"], ["deny", "--yes"], ["discard"]],
    ids=lambda c: c[0],
)
def test_an_unknown_id_is_no_such_run(shop: Path, script: Path, command: list[str]) -> None:
    suspend(script)  # a database with a waiting run in it
    verb, *options = command
    out = CliRunner().invoke(main, ["runs", verb, "deadbeef", *options])
    assert out.exit_code == 1
    assert "Error: no such run 'deadbeef'" in out.output
    assert "not waiting" not in out.output


@pytest.mark.parametrize("verb", ["show", "approve", "deny", "discard"])
def test_an_ambiguous_prefix_names_the_candidates(verb: str) -> None:
    with AgentRunPersister(os.environ["NR_LLM_DB"]) as store:
        for run_id in ("beef0001", "beef0002", "beef0003"):
            store.begin(run_id)
    out = CliRunner().invoke(main, ["runs", verb, "beef"])
    assert out.exit_code == 1
    assert (
        "run id prefix 'beef' is ambiguous: beef0001, beef0002, beef0003; give more characters"
    ) in out.output


def test_a_hostile_run_id_is_shown_visibly() -> None:
    with AgentRunPersister(os.environ["NR_LLM_DB"]) as store:
        store.begin("cafe0001")
    out = CliRunner().invoke(main, ["runs", "show", "cafe\x1b[2J"])
    assert out.exit_code == 1
    assert "\x1b" not in out.output
    assert "no such run" in out.output
