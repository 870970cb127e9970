"""An isolated tool sees the variables it is configured by, and only its own.

The builtin records tools read ``NR_LLM_RECORDS_DB``; run isolated, their worker's cleaned
environment dropped it, so they silently read (and built) ``./.nr-llm/demo.db`` instead. Each
tool's declared variables now reach its own worker (a worker per distribution and set of
variables), never a provider key, and never another tool's worker (``get_env_raw`` of the same
distribution cannot read the records database's URL).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from nr_llm_core import ToolHost
from nr_llm_core.isolation import IsolationPolicy
from nr_llm_core.isolation.policy import BUILTIN_TOOL_ENV, worker_environment

from .conftest import isolated_host

KEY = "sk-CANARY-provider-key-0c7a"
TABLE = "canary_table_4c2"


def _records_db(tmp_path: Path) -> Path:
    path = tmp_path / "records.db"
    with sqlite3.connect(path) as db:
        db.execute(f"CREATE TABLE {TABLE} (id INTEGER PRIMARY KEY, note TEXT)")
    return path


def test_an_isolated_builtin_reads_its_configured_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tries list_tables in a worker with NR_LLM_RECORDS_DB set: it must list that database's
    table, not build and read ./.nr-llm/demo.db."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NR_LLM_RECORDS_DB", str(_records_db(tmp_path)))
    with ToolHost.discover(isolate=["list_tables"], timeout=60) as host:
        assert host.is_isolated("list_tables")
        result = host.invoke("list_tables", {})
    assert not result.is_error, result.content
    assert TABLE in result.content
    assert not (tmp_path / ".nr-llm").exists()


def test_a_declared_variable_reaches_no_other_worker_and_no_key_reaches_any(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tries to read the records database's URL, and a provider key, through get_env_raw run
    isolated beside the records tools (the same distribution)."""
    monkeypatch.chdir(tmp_path)
    url = str(_records_db(tmp_path))
    monkeypatch.setenv("NR_LLM_RECORDS_DB", url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    isolate = ["list_tables", "get_env_raw"]
    with ToolHost.discover(isolate=isolate, enable=["get_env_raw"], timeout=60) as host:
        assert TABLE in host.invoke("list_tables", {}).content
        for name in ("NR_LLM_RECORDS_DB", "OPENAI_API_KEY"):
            shown = host.invoke("get_env_raw", {"name": name}).content
            assert url not in shown and KEY not in shown, shown


def test_a_policy_names_a_tools_variables_and_secret_shapes_stay_out(
    on_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tries a per-tool allow-list that also names provider keys: the tool's worker gets its
    setting, a key never, and the other tool of the distribution runs in a worker of its own."""
    monkeypatch.setenv("UNRELATED_HOST_VAR", "1")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("MY_SERVICE_TOKEN", KEY)
    tool_env = {"iso_env": {"UNRELATED_HOST_VAR", "OPENAI_API_KEY", "MY_SERVICE_TOKEN"}}
    with isolated_host(tool_env=tool_env) as host:
        assert host.invoke("iso_env", {}).content == "PATH,UNRELATED_HOST_VAR"
        env_worker = host._table["iso_env"].remote.worker  # type: ignore[union-attr]
        pid_worker = host._table["iso_pid"].remote.worker  # type: ignore[union-attr]
        assert env_worker is not pid_worker
        assert host.invoke("iso_pid", {}).content == str(pid_worker.pid)
    env = worker_environment(IsolationPolicy(), {"OPENAI_API_KEY", "UNRELATED_HOST_VAR"})
    assert "OPENAI_API_KEY" not in env and env["UNRELATED_HOST_VAR"] == "1"


def test_the_builtins_declare_the_variables_they_read() -> None:
    """The host's list of the builtins' variables is the builtins' own (one list of names)."""
    from nr_llm_builtins import _config

    records = {
        _config.ENV_RECORDS_DB,
        _config.ENV_PERSONAL_COLUMNS,
        _config.ENV_SENSITIVE_COLUMNS,
        _config.ENV_SENSITIVE_TABLES,
    }
    files = {_config.ENV_FILES_ROOT, _config.ENV_FILES_SEARCH_TIMEOUT}
    for tool in ("list_tables", "describe_table", "read_records", "search_records"):
        assert BUILTIN_TOOL_ENV[tool] == records, tool
    assert BUILTIN_TOOL_ENV["update_record"] == records
    for tool in ("list_files", "read_file", "search_files"):
        assert BUILTIN_TOOL_ENV[tool] == files, tool
    assert "get_env" not in BUILTIN_TOOL_ENV and "get_env_raw" not in BUILTIN_TOOL_ENV
