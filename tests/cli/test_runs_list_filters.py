"""``nr-llm runs list`` had neither ``--json`` nor ``--status``: a script had to parse the
table, and an operator looking for the runs that wait or fail paged through all of them. Tried
here: the JSON array (the fields ``runs show --json`` prints, printable ASCII, a hostile id
escaped), ``--status`` repeated and comma-separated, filtered before ``--limit``, and an
unknown status refused with exit 2 naming the valid ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from nr_llm_core.audit import AgentRunPersister
from nr_llm_core.cli import main


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """Five completed runs, one failed, one suspended, one cancelled (oldest first)."""
    path = tmp_path / "audit.db"
    with AgentRunPersister(path) as store:
        for n in range(5):
            store.settle_completed(store.begin(f"done-{n}"), termination_reason="completed")
        store.settle_failed(store.begin("fail-\x1b[2J"), termination_reason="failed")
        store.suspend(store.begin("waits"), {"messages": []})
        store.settle_cancelled(store.begin("gone"), termination_reason="cancelled")
    return path


def test_json_is_one_array_of_the_show_fields(db: Path) -> None:
    code, out = cli("runs", "list", "--db", str(db), "--json")
    assert code == 0, out
    assert out.isascii() and out.count("\n") == 1  # one line of printable ASCII
    runs = json.loads(out)
    assert [r["id"] for r in runs[:3]] == ["gone", "waits", "fail-\x1b[2J"]
    shown = json.loads(cli("runs", "show", "waits", "--db", str(db), "--json")[1])["run"]
    waits = runs[1]
    assert set(waits) == set(shown) - {"trace_id"}
    assert {k: waits[k] for k in waits} == {k: shown[k] for k in waits}
    assert waits["status"] == "suspended" and waits["suspended"] is True
    assert runs[0]["runner"] is None  # only a running run has a runner worth showing


def test_status_repeated_or_comma_separated_filters_before_the_limit(db: Path) -> None:
    code, out = cli(
        "runs", "list", "--db", str(db), "--json", "--status", "failed,suspended", "--limit", "2"
    )
    assert code == 0, out
    assert [r["id"] for r in json.loads(out)] == ["waits", "fail-\x1b[2J"]
    code, out = cli(
        "runs", "list", "--db", str(db), "--status", "completed", "--status", "CANCELLED"
    )
    assert code == 0, out
    assert "done-0" in out and "gone" in out and "waits" not in out and "fail-" not in out
    code, out = cli("runs", "list", "--db", str(db), "--status", "running")
    assert code == 0 and "No runs with that status." in out


def test_an_unknown_status_is_a_usage_error_naming_the_valid_ones(db: Path) -> None:
    code, out = cli("runs", "list", "--db", str(db), "--status", "completed,finished")
    assert code == 2, out
    said = " ".join(out.split())
    assert "unknown status 'finished'" in said
    assert "valid: queued, running, suspended, completed, failed, cancelled" in said


def test_json_without_a_store_is_an_empty_array(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["runs", "list", "--db", str(tmp_path / "no.db"), "--json"])
    assert result.exit_code == 0
    assert result.stdout == "[]\n"
    assert "No audit database" in result.stderr
    assert not (tmp_path / "no.db").exists()
