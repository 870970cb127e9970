"""Shared pieces of the store tests: the files a store owns, a real tool distribution whose
every call appends one line to a log file, and runs that stop for approval on it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from nr_llm_core import ScriptedProvider, ToolHost, ToolLoop, hookimpl
from nr_llm_core.loop import TerminationReason
from nr_llm_core.results import ToolResult, ToolSpec
from nr_llm_core.stores import open_store, store_kind

from ..stores.fixtures import execute

#: The environment variable naming the log file the append tool writes to.
LOG_VAR = "STORE_TEST_APPEND_LOG"

APPEND_MODULE = '''
import os
from nr_llm_core import ToolResult, ToolSpec, hookimpl

class Append:
    """Appends one line per call to the file named by $STORE_TEST_APPEND_LOG."""

    @hookimpl
    def tool_spec(self):
        return ToolSpec(
            "append_line",
            "Append one line to the log.",
            {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            data_class="public",
            requires_approval=True,
        )

    @hookimpl
    def execute(self, arguments):
        # O_APPEND: one short write per call, whole lines even from racing processes.
        with open(os.environ["STORE_TEST_APPEND_LOG"], "a", encoding="utf-8") as log:
            log.write(f"{os.getpid()} {arguments['text']}\\n")
        return ToolResult.text("appended " + arguments["text"])
'''

#: The turns of a run that asks for one append (approval needed), then answers.
APPEND_TURNS: list[Any] = [
    {
        "content": "appending",
        "tool_calls": [{"id": "a1", "name": "append_line", "arguments": {"text": "once"}}],
    },
    "appended it",
]


def owned_files(db: Path) -> dict[str, bytes]:
    """Every file the audit store at ``db`` owns, by name: the database, its ``-wal``,
    ``-shm`` and ``-journal``, and every file under a directory named after it, recursively."""
    out: dict[str, bytes] = {}
    for path in sorted(db.parent.iterdir()):
        if not path.name.startswith(db.name):
            continue
        if path.is_dir():
            for inner in sorted(path.rglob("*")):
                if inner.is_file():
                    out[str(inner.relative_to(db.parent))] = inner.read_bytes()
        else:
            out[path.name] = path.read_bytes()
    return out


def stored_text(target: str) -> str:
    """Everything the store holds, as a reader of its storage sees it: the SQLite file and
    its companions byte for byte; on PostgreSQL every row of its tables, as text."""
    if store_kind(target) == "sqlite":
        return "".join(data.decode("latin-1") for data in owned_files(Path(target)).values())
    rows = [execute(target, f"SELECT t::text FROM {t} t") for t in ("runs", "events", "states")]
    return "\n".join(str(r[0]) for found in rows for r in found)


def files_holding(db: Path, canaries: Iterable[str]) -> dict[str, list[str]]:
    """canary -> the owned files whose raw bytes contain it (only canaries found)."""
    files = owned_files(db)
    found: dict[str, list[str]] = {}
    for canary in canaries:
        names = [name for name, data in files.items() if canary.encode() in data]
        if names:
            found[canary] = names
    return found


def make_site(root: Path) -> Path:
    """A site folder holding a real distribution with the ``append_line`` tool."""
    site = root / "site"
    info = site / "nr_llm_store_append-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: nr-llm-store-append\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text(
        "[nr_llm.tool]\nappend_line = nr_llm_store_append:Append\n"
    )
    (info / "RECORD").write_text("")
    (site / "nr_llm_store_append.py").write_text(textwrap.dedent(APPEND_MODULE))
    return site


class Append:
    """The in-process twin of the distribution's tool (same spec, same log line)."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(
            "append_line",
            "Append one line to the log.",
            {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            data_class="public",
            requires_approval=True,
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        with open(os.environ[LOG_VAR], "a", encoding="utf-8") as log:
            log.write(f"{os.getpid()} {arguments['text']}\n")
        return ToolResult.text("appended " + arguments["text"])


def append_host() -> ToolHost:
    """A host with the in-process append tool only."""
    host = ToolHost()
    host.register(Append())
    return host


def suspend_append_run(target: str | Path) -> tuple[str, str]:
    """Start a run that waits for approval of one append, in the store at ``target`` (a
    SQLite file or a PostgreSQL URL); (run id, digest)."""
    with open_store(target) as store:
        result = ToolLoop(ScriptedProvider(APPEND_TURNS), append_host(), persister=store).run(
            "append once"
        )
    assert result.termination_reason is TerminationReason.AWAITING_APPROVAL
    assert result.suspended is not None
    return result.run_id, result.suspended.digest


def write_script(path: Path) -> Path:
    """The append run's turns as a ``--script`` file."""
    path.write_text(json.dumps(APPEND_TURNS))
    return path


def log_lines(log: Path) -> list[str]:
    """The append log's lines (none when it does not exist)."""
    return log.read_text().splitlines() if log.exists() else []


def cli_env(site: Path, log: Path) -> dict[str, str]:
    """A subprocess environment: the test distribution importable, no NR_LLM_* from outside."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NR_LLM_")}
    env["PYTHONPATH"] = str(site)
    env[LOG_VAR] = str(log)
    return env


def start_cli(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    """``nr-llm ARGS`` in a new interpreter (not waited for)."""
    return subprocess.Popen(
        [sys.executable, "-m", "nr_llm_core", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


READER = """
import sqlite3, sys
from nr_llm_core.audit import AgentRunPersister
store = AgentRunPersister(sys.argv[1])
store.list_runs()
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN")
conn.execute("SELECT COUNT(*) FROM runs").fetchall()  # holds this snapshot until told to stop
print("ready", flush=True)
sys.stdin.readline()
conn.execute("COMMIT")
conn.close()
store.close()
"""


@contextmanager
def second_reader(db: Path) -> Iterator[None]:
    """Another process with a persister and a read transaction open on ``db`` meanwhile."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NR_LLM_")}
    with subprocess.Popen(
        [sys.executable, "-c", READER, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    ) as proc:
        assert proc.stdout is not None and proc.stdin is not None
        try:
            assert proc.stdout.readline().strip() == "ready"
            yield
        finally:
            proc.stdin.write("\n")
            proc.stdin.flush()
            assert proc.wait(60) == 0
