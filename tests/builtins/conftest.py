"""Fixtures for the builtin tools: a real host, a real SQLite file, a real directory tree."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nr_llm_builtins.demo_db import build_demo_db
from nr_llm_builtins.files import ListFiles, ReadFile, SearchFiles
from nr_llm_builtins.records import (
    DescribeTable,
    ListTables,
    ReadRecords,
    SearchRecords,
    UpdateRecord,
)
from nr_llm_builtins.system import GetEnv, GetEnvRaw, SystemStatus
from nr_llm_builtins.utility import Calculate, CurrentTime
from nr_llm_core import ToolHost, ToolResult

ALL_TOOLS = (
    ListTables,
    DescribeTable,
    ReadRecords,
    SearchRecords,
    UpdateRecord,
    ListFiles,
    ReadFile,
    SearchFiles,
    GetEnv,
    GetEnvRaw,
    SystemStatus,
    CurrentTime,
    Calculate,
)


@pytest.fixture(autouse=True)
def _work_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The demo database is built below the current directory: never in the checkout.
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def host() -> ToolHost:
    """Every builtin registered in code, the disabled-by-default ones switched on."""
    h = ToolHost(enable=["update_record", "get_env_raw"])
    for tool in ALL_TOOLS:
        h.register(tool)
    return h


@pytest.fixture
def invoke(host: ToolHost) -> Callable[..., ToolResult]:
    """Call a tool through the seam, checking that no call ever fails with an exception."""

    def call(name: str, arguments: Any) -> ToolResult:
        result = host.invoke(name, arguments)
        assert result.content != f'Error: tool "{name}" failed.', "the tool raised"
        assert "Traceback" not in result.content
        return result

    return call


@pytest.fixture
def shop_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The demo shop in a fresh SQLite file, configured as the records database."""
    path = build_demo_db(tmp_path / "db" / "shop.db")
    monkeypatch.setenv("NR_LLM_RECORDS_DB", str(path))
    return path


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A files root with text, a binary, hidden files, and symlinks in and out of it.

    Outside it: a secret file and a folder that links point to.
    """
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("OUTSIDE-SECRET\n")
    base = tmp_path / "root"
    (base / "docs" / "deep").mkdir(parents=True)
    (base / "docs" / "guide.md").write_text("# Guide\nhello world\nsecond hello\n")
    (base / "docs" / "deep" / "notes.txt").write_text("deep note: hello\n")
    (base / "numbers.txt").write_text("".join(f"line {i}\n" for i in range(1, 501)))
    (base / "blob.bin").write_bytes(b"\x00\x01\x02hello\x00")
    (base / ".env").write_text("API_KEY=HIDDEN-SECRET\n")
    (base / ".git").mkdir()
    (base / ".git" / "config").write_text("hello HIDDEN-SECRET\n")
    os.symlink(outside / "secret.txt", base / "escape.txt")
    os.symlink(outside, base / "escape_dir")
    os.symlink(base / "docs" / "guide.md", base / "inside_link.md")
    os.symlink(base / ".env", base / "env_link")
    monkeypatch.setenv("NR_LLM_FILES_ROOT", str(base))
    return base
