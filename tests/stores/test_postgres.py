"""What only the PostgreSQL store has to prove: its schema means what SQLite's means, a
password in its URL is never shown, SQL parameters never reach an error, a newer schema is
refused, and a run that moves between workers keeps the stricter zone and level."""

from __future__ import annotations

import logging
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from nr_llm_core.audit import AgentRunPersister, AuditStoreError
from nr_llm_core.messages import ChatMessage
from nr_llm_core.stores import masked, open_store
from nr_llm_core.stores._tables import events, runs
from nr_llm_core.stores.postgres import PostgresStore
from nr_llm_core.trace import RunStep, StepKind

from .pg_server import Server

PASSWORD = "PG-PASSWORD-CANARY"
PURGE = ("privacy", "purge", "--older-than", "0")


def test_the_two_schemas_have_the_same_runs_and_events_columns(tmp_path: Path, pg_url: str) -> None:
    """Every column of SQLite's ``runs`` and ``events`` (but the state's file columns, which
    are a table of their own on PostgreSQL) exists on PostgreSQL with the same name."""
    AgentRunPersister(tmp_path / "audit.db").close()
    conn = sqlite3.connect(tmp_path / "audit.db")
    lite = {t: {c[1] for c in conn.execute(f"PRAGMA table_info({t})")} for t in ("runs", "events")}
    conn.close()
    PostgresStore(pg_url).close()
    engine = sa.create_engine(pg_url)
    inspector = sa.inspect(engine)
    pg = {t: {c["name"] for c in inspector.get_columns(t)} for t in ("runs", "events")}
    engine.dispose()
    file_columns = {"state_file", "state_sha256", "state_digest", "suspended_state"}
    # Who runs a run (ADR 0042) is SQLite's own: workers hold PostgreSQL runs with leases.
    runner_columns = {"runner_host", "runner_pid", "runner_started"}
    assert lite["runs"] - file_columns - runner_columns <= pg["runs"]
    assert lite["events"] <= pg["events"]
    assert pg["runs"] == {c.name for c in runs.c} and pg["events"] == {c.name for c in events.c}


def test_a_password_is_masked_everywhere_it_could_be_shown(
    pg_server: Server, pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    assert PASSWORD in pg_url
    assert masked(pg_url) == pg_url.replace(PASSWORD, "***")
    assert masked("postgresql+psycopg://u@h/db?password=" + PASSWORD).endswith("password=***")
    with open_store(pg_url) as store:
        assert PASSWORD not in repr(store) and PASSWORD not in store.label
    unreachable = f"postgresql+psycopg://nrllm:{PASSWORD}@127.0.0.1:1/db"
    with pytest.raises(AuditStoreError) as refused:
        open_store(unreachable)
    assert PASSWORD not in str(refused.value) and "127.0.0.1:1" in str(refused.value)
    with caplog.at_level(logging.DEBUG):
        store = open_store(pg_url)
        run = store.begin()
        store.close()
        assert (
            store.record_step(run, RunStep(kind=StepKind.TOOL, round=0, duration_ms=0.0)) is False
        )
    assert PASSWORD not in caplog.text


def test_no_command_shows_the_password(pg_url: str) -> None:
    """``--help``, ``config show``, ``runs list`` on a store that answers and on one that does
    not: the password is in none of their output."""
    env = {k: v for k, v in __import__("os").environ.items() if k != "NR_LLM_DB"}
    env["NR_LLM_DB"] = pg_url
    bad = pg_url.replace(pg_url.rsplit("/", 1)[1], "no_such_database")
    commands = [
        ["--help"],
        ["runs", "list", "--help"],
        ["worker", "--help"],
        ["config", "show"],
        ["runs", "list"],
        ["runs", "list", "--db", bad],
        ["runs", "show", "nope", "--db", bad],
    ]
    for args in commands:
        done = subprocess.run(
            [sys.executable, "-m", "nr_llm_core", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        assert PASSWORD not in done.stdout + done.stderr, args
        assert "Traceback" not in done.stderr, (args, done.stderr)
    assert "***@" in done.stderr  # the failing store is named, masked


def test_sql_parameters_never_reach_an_error(pg_url: str) -> None:
    with open_store(pg_url) as store:
        store.begin("r1")
        with pytest.raises(AuditStoreError) as refused:
            store.begin("r1", meta={"note": "META-CANARY"})
    assert "META-CANARY" not in str(refused.value)
    assert "INSERT" not in str(refused.value)


def test_a_newer_schema_is_refused(pg_url: str) -> None:
    PostgresStore(pg_url).close()
    engine = sa.create_engine(pg_url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE nr_llm_schema SET version = version + 1"))
    engine.dispose()
    with pytest.raises(AuditStoreError, match="upgrade nr-llm"):
        PostgresStore(pg_url)


def test_a_run_that_moves_keeps_the_stricter_zone_and_level(pg_url: str) -> None:
    """A queued run taken by a local-zone worker, then by an external-zone worker with a
    stricter privacy ceiling: each take keeps the stricter zone and level, never a wider one,
    and a later wider worker does not widen them back."""
    from nr_llm_core.stores.queue import SuspendedRunState  # the state type the queue signs

    with open_store(pg_url) as store:
        assert isinstance(store, PostgresStore)
        state = SuspendedRunState.create(
            run_id="moving",
            # A start state as enqueue_run writes one: take reads it as a claim does.
            messages=(ChatMessage.user("go"),),
            pending=(),
            needs_approval=(),
            iterations=0,
            tool_rounds=0,
            usage=__import__("nr_llm_core.providers", fromlist=["Usage"]).Usage(),
            allowed=None,
        )
        store.enqueue(state.to_dict(), privacy="redacted")
        first = store.take("moving", worker="w1", zone="local")
        assert first is not None
        assert (first.trust_zone, first.privacy_level, first.attempt) == ("local", "redacted", 1)
        second = store.take("moving", worker="w2", zone="external", privacy="metadata")
        assert second is not None
        assert (second.trust_zone, second.privacy_level, second.attempt) == (
            "external",
            "metadata",
            2,
        )
        third = store.take("moving", worker="w3", zone="local", privacy="full")
        assert third is not None
        assert (third.trust_zone, third.privacy_level) == ("external", "metadata")
        assert store.get_run("moving")["privacy_level"] == "metadata"
        store.settle_completed("moving")
        assert store.take("moving", worker="w4", zone="local") is None


def test_a_worker_keeps_level_text_a_newer_version_wrote(pg_url: str) -> None:
    """A queued run whose row holds a level this version does not know (a newer version's,
    read here as ``metadata``): a worker that takes it applies ``metadata`` but leaves the text
    as it is (it might mean something stricter), as the stores' own rule
    (``privacy.stored_level_update``) does; only ``none`` replaces it."""
    from nr_llm_core.providers import Usage
    from nr_llm_core.stores.queue import SuspendedRunState

    with open_store(pg_url) as store:
        assert isinstance(store, PostgresStore)
        for run_id in ("newer", "newer-none"):
            state = SuspendedRunState.create(
                run_id=run_id,
                messages=(ChatMessage.user("go"),),
                pending=(),
                needs_approval=(),
                iterations=0,
                tool_rounds=0,
                usage=Usage(),
                allowed=None,
            )
            store.enqueue(state.to_dict(), privacy="metadata")
        engine = sa.create_engine(pg_url)
        with engine.begin() as conn:
            conn.execute(sa.update(runs).values(privacy_level="sealed-v9"))
        engine.dispose()
        taken = store.take("newer", worker="w1", zone="local")
        assert taken is not None and taken.privacy_level == "metadata"
        assert store.get_run("newer")["privacy_level"] == "sealed-v9"
        taken = store.take("newer-none", worker="w1", zone="local", privacy="none")
        assert taken is not None and taken.privacy_level == "none"
        assert store.get_run("newer-none")["privacy_level"] == "none"


def test_the_playground_and_privacy_purge_work_on_postgresql(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real playground on 127.0.0.1 recording into PostgreSQL: a run that waits for
    approval is resumed over HTTP (through the store's claim) and listed with its steps; then
    ``nr-llm privacy purge`` on the same URL deletes it."""
    import httpx

    from nr_llm_core import ScriptedProvider
    from nr_llm_core.playground import PlaygroundServer
    from nr_llm_core.playground._store import open_store as playground_store

    from ..store._support import APPEND_TURNS, LOG_VAR, append_host, log_lines

    log = tmp_path / "append.log"
    monkeypatch.setenv(LOG_VAR, str(log))
    recorded = playground_store(pg_url)
    server = PlaygroundServer(
        append_host(),
        providers={"append": lambda: ScriptedProvider(APPEND_TURNS)},
        store=recorded,
    ).start()
    client = httpx.Client(
        base_url=server.origin,
        headers={"X-NR-LLM-Token": server.token, "Accept": "application/json"},
        timeout=120,
    )
    try:
        body = client.post("/api/runs", json={"prompt": "append once", "provider": "append"})
        paused = body.json()["events"][-1]
        assert paused["event"] == "awaiting_approval", body.text
        resumed = client.post(
            f"/api/runs/{paused['run_id']}/resume",
            json={"digest": paused["digest"], "approved": True},
        )
        assert resumed.json()["events"][-1]["event"] == "done", resumed.text
        listed = client.get(f"/api/runs/{paused['run_id']}").json()
        assert listed["run"]["status"] == "completed"
        assert [s["seq"] for s in listed["steps"]] == list(range(1, len(listed["steps"]) + 1))
    finally:
        client.close()
        server.stop()
        recorded.close()
    assert len(log_lines(log)) == 1
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("NR_LLM_")}
    done = subprocess.run(
        [sys.executable, "-m", "nr_llm_core", *PURGE, "--db", pg_url],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and "Purged 1 run(s)" in done.stdout, done.stderr
    with open_store(pg_url) as store:
        assert store.list_runs() == []


def test_run_ids_resolve_by_prefix_in_byte_order(pg_url: str) -> None:
    """The SQLite store's prefix rule on PostgreSQL: whole id first, a unique prefix of four
    or more, no wildcard, case-sensitive, whatever the database's collation."""
    from nr_llm_core.audit import UnknownRunError

    with PostgresStore(pg_url) as store:
        for run_id in ("abcd", "abcdef01", "abce0001", "a_cd1234", "beef0001", "beef0002"):
            store.begin(run_id)
        assert store.resolve_run_id("abcd") == "abcd"
        assert store.resolve_run_id("abce") == "abce0001"
        assert store.resolve_run_id("a_cd") == "a_cd1234"
        with pytest.raises(AuditStoreError, match="ambiguous: beef0001, beef0002"):
            store.resolve_run_id("beef")
        for given in ("ab_d", "a%cd", "ABCE", "fed", "zzzz"):
            with pytest.raises(UnknownRunError):
                store.resolve_run_id(given)
