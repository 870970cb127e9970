"""A refused ``nr-llm runs`` command says what happened to the run and what to type next.

Real ``nr-llm`` commands on a real audit database file, a run suspended on the builtin
``update_record`` by a ``--script``.
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

ARGUMENTS = {"table": "products", "key": {"id": 1}, "values": {"name": "Quiet keyboard"}}
UPDATE = {"name": "update_record", "arguments": ARGUMENTS}


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def said(result: Result) -> str:
    return " ".join(result.output.split())


def product_name(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        (name,) = conn.execute("SELECT name FROM products WHERE id = 1").fetchone()
    return str(name)


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps([{"content": "Renaming it.", "tool_calls": [UPDATE]}, "Renamed."]))
    return path


def suspend(script: Path) -> tuple[str, str]:
    out = invoke("run", "rename product 1", "--script", str(script))
    assert out.exit_code == 0, out.output
    match = re.search(r"runs approve\|deny (\w+) --digest (\w+)", out.output)
    assert match, out.output
    return match.group(1), match.group(2)


def shown(run_id: str) -> dict[str, Any]:
    out = invoke("runs", "show", run_id, "--json")
    assert out.exit_code == 0, out.output
    record: dict[str, Any] = json.loads(out.output)
    return record


def test_a_wrong_digest_says_nothing_was_decided_and_where_the_digest_is(
    shop: Path, script: Path
) -> None:
    """Approves with ``--digest deadbeef``: refused (exit 1) saying the run still waits,
    nothing was decided and ``nr-llm runs show ID`` shows the digest; the pending calls are
    not shown as if about to be decided, the tool did not run, the run waits on its digest."""
    run_id, digest = suspend(script)
    out = invoke("runs", "approve", run_id, "--digest", "deadbeef", "--script", str(script))
    assert out.exit_code == 1, out.output
    text = said(out)
    assert "the digest does not match the pending turn" in text
    assert "Nothing was decided and the run still waits" in text
    assert f"`nr-llm runs show {run_id}` shows the digest it waits on" in text
    assert "awaiting approval" not in out.output
    assert product_name(shop) == "Mechanical keyboard"
    record = shown(run_id)
    assert record["run"]["status"] == "suspended"
    assert record["pending"]["digest"] == digest


def test_abandon_of_a_waiting_run_points_to_discard(shop: Path, script: Path) -> None:
    """``runs abandon`` on a suspended run is refused (only a running run is abandoned) and
    names ``nr-llm runs discard ID``, which ends a waiting run; the run still waits."""
    run_id, _ = suspend(script)
    out = invoke("runs", "abandon", run_id)
    assert out.exit_code == 1, out.output
    text = said(out)
    assert "is suspended, not running" in text
    assert f"`nr-llm runs discard {run_id}`" in text
    assert shown(run_id)["run"]["status"] == "suspended"
