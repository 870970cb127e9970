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


def test_status_waiting_is_refused_naming_suspended(tmp_path: Path) -> None:
    """``runs list --status waiting`` (the docs' word for a run that waits) is refused with
    the valid statuses and says that a run waiting for approval is ``suspended``."""
    out = invoke("runs", "list", "--status", "waiting", "--db", str(tmp_path / "a.db"))
    assert out.exit_code == 2, out.output
    text = said(out)
    assert "unknown status 'waiting'" in text
    assert "(a run waiting for approval is `suspended`)" in text


def test_a_waiting_run_shows_the_reason_run_printed(shop: Path, script: Path) -> None:
    """``run`` prints a waiting run's reason as ``awaiting_approval``; ``runs list`` and
    ``runs show`` showed ``-`` for it. Both show ``awaiting_approval`` now; the JSON keeps the
    stored value."""
    run_id, _ = suspend(script)
    listed = invoke("runs", "list")
    row = next(line for line in listed.output.splitlines() if line.startswith(run_id[:8]))
    assert row.split()[1] == "suspended" and row.split()[-1] == "awaiting_approval", row
    text = invoke("runs", "show", run_id).output
    assert "termination_reason: awaiting_approval" in text
    assert shown(run_id)["run"]["termination_reason"] is None
