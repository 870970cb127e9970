"""`nr-llm demo`: both channels, the persisted record, and an artifact that stays behind."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest


def run_demo(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NR_LLM_")}
    env["COLUMNS"] = "100"
    return subprocess.run(
        [sys.executable, "-m", "nr_llm_core", "demo", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def test_demo_shows_both_channels_and_the_persisted_record(tmp_path: Path) -> None:
    out = run_demo(tmp_path)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for tool in ("list_tables", "read_records", "calculate"):
        assert "tool call" in text and tool in text
    assert text.count("the model got") == 3
    assert text.count("stayed behind (artifacts)") == 3
    assert text.count("persisted at metadata") == 3
    assert "[table] customers records" in text
    assert "19 * 23 + 4 = 441" in text
    assert "nr-llm playground" in text
    # No credential or personal column reached either channel.
    for hidden in ("password", "email", "@example"):
        assert hidden not in text.lower()
    # The run is in the audit store of the working directory, with every step.
    db = tmp_path / ".nr-llm" / "audit.db"
    with sqlite3.connect(db) as conn:
        (status, level) = conn.execute("SELECT status, privacy_level FROM runs").fetchone()
        kinds = [k for (k,) in conn.execute("SELECT kind FROM events ORDER BY seq")]
    assert (status, level) == ("completed", "metadata")
    assert kinds.count("tool") == 3 and kinds.count("llm") == 4
    # At METADATA the stored tool steps hold no tool bytes.
    for path in db.parent.glob("audit.db*"):  # the database, and its -wal/-shm if left
        assert b"Ada Lovelace" not in path.read_bytes()


def test_demo_at_full_shows_the_stored_content(tmp_path: Path) -> None:
    out = run_demo(tmp_path, "--privacy", "full")
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("persisted at full") == 3
    assert '"tool_artifacts"' in out.stdout and "Ada Lovelace" in out.stdout


#: A cell of list_tables' artifact: the visible columns of order_items. The content names
#: the tables only; the columns stay behind.
ONLY_IN_THE_ARTIFACT = "order_id, product_id, quantity"


def test_the_first_call_shows_a_table_that_stays_behind(tmp_path: Path) -> None:
    """Tool call 1 (list_tables): the model gets a summary, the names of the tables; the
    artifact, a table of each table's columns, is shown as what stayed behind."""
    out = run_demo(tmp_path)
    assert out.returncode == 0, out.stderr
    first = out.stdout.split("tool call 1: list_tables", 1)[1].split("tool call 2:", 1)[0]
    got = first.split("the model got", 1)[1].split("stayed behind (artifacts)", 1)[0]
    behind = first.split("stayed behind (artifacts)", 1)[1].split("persisted at", 1)[0]
    assert "Tables (4): customers, order_items, orders, products" in got
    assert "[table] tables" in behind
    assert ONLY_IN_THE_ARTIFACT in behind
    assert ONLY_IN_THE_ARTIFACT not in got
    assert "never sent to the model" in out.stdout


def test_the_scripted_model_never_receives_what_stayed_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The demo's turns through the real loop: the artifact holds the columns, no request the
    provider received does, while the content of the same call does reach it."""
    from nr_llm_core import ToolHost, ToolLoop
    from nr_llm_core.providers import ScriptedProvider

    monkeypatch.chdir(tmp_path)  # the demo database is built here
    provider = ScriptedProvider.demo()
    with ToolHost.discover() as host:
        result = ToolLoop(provider, host).run("What is in the shop database?")
    listed = result.invocations[0]
    assert listed.name == "list_tables"
    (artifact,) = listed.result.artifacts
    assert ["order_items", ONLY_IN_THE_ARTIFACT] in artifact.data["rows"]
    sent = "\n".join(m.content or "" for messages, _ in provider.requests for m in messages)
    assert listed.result.content in sent
    assert ONLY_IN_THE_ARTIFACT not in sent
