"""13.5: where two privacy levels meet, the stricter applies; a level nobody named is not a
request to widen; the effective level is recorded with the run. One function decides."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from nr_llm_core import AgentRunPersister, PrivacyLevel, ScriptedProvider, ToolHost, ToolLoop
from nr_llm_core.cli import main
from nr_llm_core.hooks import hookimpl
from nr_llm_core.playground import PlaygroundServer
from nr_llm_core.playground._store import open_store
from nr_llm_core.privacy import effective_level
from nr_llm_core.results import ToolResult, ToolSpec
from nr_llm_core.stores import open_store as open_audit_store

from ._support import files_holding, stored_text

CANARY = "LEVEL-CANARY-6a2f"
#: The levels at which the canary (no secret shape) is stored.
KEEPS_CONTENT = ("full", "redacted")
N, M, R, F = PrivacyLevel.NONE, PrivacyLevel.METADATA, PrivacyLevel.REDACTED, PrivacyLevel.FULL


@pytest.mark.parametrize(
    ("levels", "expected"),
    [
        ((), M),
        ((None,), M),
        ((None, None), M),
        ((F,), F),
        ((None, F), F),
        ((N, F), N),
        ((F, N), N),
        ((F, M), M),
        ((R, F), R),
        (("full", "redacted"), R),
        ((F, "bogus"), M),  # an invalid level is metadata, and metadata is stricter than full
        ((N, "bogus"), N),
    ],
)
def test_the_strictest_named_level_wins(levels: tuple[Any, ...], expected: PrivacyLevel) -> None:
    assert effective_level(*levels) is expected


@pytest.mark.parametrize(
    ("env", "named", "expected"),
    [("full", N, N), ("none", F, N), ("redacted", None, R), ("redacted", F, R)],
)
def test_the_environment_is_a_named_level_too(
    monkeypatch: pytest.MonkeyPatch, env: str, named: PrivacyLevel | None, expected: PrivacyLevel
) -> None:
    monkeypatch.setenv("NR_LLM_PRIVACY_LEVEL", env)
    assert effective_level(named) is expected


class Echo:
    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("echo", "Echo.", data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.text(f"echo {CANARY}")


def run_once(db: Path | str, store_level: Any, loop_level: Any) -> str:
    host = ToolHost()
    host.register(Echo())
    turns = [{"tool_calls": [{"id": "e1", "name": "echo", "arguments": {}}]}, f"said {CANARY}"]
    with open_audit_store(db, privacy=store_level) as store:
        result = ToolLoop(ScriptedProvider(turns), host, persister=store, privacy=loop_level).run(
            f"say {CANARY}"
        )
        record = store.get_run(result.run_id)
    assert record is not None
    return str(record["privacy_level"])


@pytest.mark.parametrize(
    ("store_level", "loop_level", "expected"),
    [
        ("none", None, "none"),
        ("none", "full", "none"),
        ("full", "metadata", "metadata"),
        ("full", None, "full"),
        (None, "full", "full"),
        (None, None, "metadata"),
    ],
)
def test_the_loop_never_widens_its_store(
    store_target: str, store_level: Any, loop_level: Any, expected: str
) -> None:
    """A store opened at a level is the ceiling of every run it records; a loop that named no
    level asks for nothing; the recorded level is the one applied (the file's bytes, the
    server's rows)."""
    assert run_once(store_target, store_level, loop_level) == expected
    if expected in ("none", "metadata"):
        assert CANARY not in stored_text(store_target)
    else:
        assert CANARY in stored_text(store_target)


def test_an_environment_at_full_does_not_widen_a_store_at_none(
    store_target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NR_LLM_PRIVACY_LEVEL", "full")
    assert run_once(store_target, "none", None) == "none"
    assert run_once(store_target, "none", "full") == "none"
    assert CANARY not in stored_text(store_target)


def test_an_environment_at_metadata_caps_a_loop_at_full(
    store_target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NR_LLM_PRIVACY_LEVEL", "metadata")
    assert run_once(store_target, None, "full") == "metadata"
    assert CANARY not in stored_text(store_target)


def test_begin_applies_the_stricter_of_store_and_request(store_target: str) -> None:
    with open_audit_store(store_target, privacy="redacted") as store:
        assert store.get_run(store.begin(privacy="full"))["privacy_level"] == "redacted"
        assert store.get_run(store.begin(meta={"privacy": "full"}))["privacy_level"] == "redacted"
        assert store.get_run(store.begin(privacy="none"))["privacy_level"] == "none"
        assert store.get_run(store.begin())["privacy_level"] == "redacted"


# -- the command line -------------------------------------------------------------------------


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps([f"the answer is {CANARY}"]))
    return path


@pytest.mark.parametrize(
    ("env", "flag", "expected"),
    [
        (None, "full", "full"),  # the flag names the run's level; nothing caps it
        ("none", "full", "none"),  # the environment is the store's level: stricter wins
        ("metadata", "full", "metadata"),
        ("full", "none", "none"),
        ("redacted", None, "redacted"),
        (None, None, "metadata"),
    ],
)
def test_cli_run_records_the_stricter_of_flag_and_environment(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    script: Path,
    env: str | None,
    flag: str | None,
    expected: str,
) -> None:
    monkeypatch.setenv("NR_LLM_DISABLE_PLUGIN_AUTOLOAD", "1")
    if env is not None:
        monkeypatch.setenv("NR_LLM_PRIVACY_LEVEL", env)
    db = tmp_path / "audit.db"
    args = ["run", f"say {CANARY}", "--script", str(script), "--db", str(db)]
    out = CliRunner().invoke(main, args + ([] if flag is None else ["--privacy", flag]))
    assert out.exit_code == 0, out.output
    listed = CliRunner().invoke(main, ["runs", "list", "--db", str(db)])
    assert expected in listed.output.splitlines()[-1]
    with AgentRunPersister(db) as store:
        (run,) = store.list_runs()
        shown = CliRunner().invoke(main, ["runs", "show", run["id"], "--db", str(db)])
    assert f"privacy_level: {expected}" in shown.output
    assert run["privacy_level"] == expected
    held = files_holding(db, [CANARY])
    assert (CANARY in held) is (expected in KEEPS_CONTENT)


def test_cli_demo_shows_the_level_it_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NR_LLM_PRIVACY_LEVEL", "none")
    monkeypatch.setenv("NR_LLM_RECORDS_DB", str(tmp_path / "shop.db"))
    from nr_llm_builtins.demo_db import build_demo_db

    build_demo_db(tmp_path / "shop.db")
    db = tmp_path / "audit.db"
    out = CliRunner().invoke(main, ["demo", "--privacy", "full", "--db", str(db)])
    assert out.exit_code == 0, out.output
    assert "at privacy level none" in out.output
    assert "persisted at none" in out.output
    with AgentRunPersister(db) as store:
        assert {r["privacy_level"] for r in store.list_runs()} == {"none"}


# -- the playground ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("store_level", "requested", "expected"),
    [
        ("none", "full", "none"),
        ("redacted", "full", "redacted"),
        (None, "full", "full"),
        ("redacted", None, "redacted"),
        ("full", "metadata", "metadata"),
    ],
)
def test_the_playground_records_the_stricter_of_store_and_request(
    tmp_path: Path, store_level: str | None, requested: str | None, expected: str
) -> None:
    """A request at a wider level than the playground's store is recorded, streamed and
    shown at the store's level; the context event says which level applied."""
    host = ToolHost()
    host.register(Echo())
    turns = [{"tool_calls": [{"id": "e1", "name": "echo", "arguments": {}}]}, "done"]
    db = tmp_path / "audit.db"
    server = PlaygroundServer(
        host,
        providers={"echo": lambda: ScriptedProvider(turns)},
        store=open_store(db, privacy=store_level),
    ).start()
    try:
        with httpx.Client(
            base_url=server.origin,
            headers={"X-NR-LLM-Token": server.token, "Accept": "application/json"},
            timeout=60,
        ) as client:
            config = client.get("/api/config").json()
            assert config["default_privacy"] == (
                "metadata" if store_level is None else effective_level(store_level).value
            )
            body: dict[str, Any] = {"prompt": f"say {CANARY}", "provider": "echo"}
            if requested is not None:
                body["privacy"] = requested
            events = client.post("/api/runs", json=body).json()["events"]
            assert events[0]["privacy"] == expected
            tool = next(e for e in events if e["event"] == "step" and e["step"]["kind"] == "tool")
            assert (CANARY in json.dumps(tool["step"])) is (expected in KEEPS_CONTENT)
            run = client.get(f"/api/runs/{events[-1]['run_id']}").json()["run"]
            assert run["privacy_level"] == expected
    finally:
        server.stop()
    assert (CANARY in files_holding(db, [CANARY])) is (expected in KEEPS_CONTENT)
