"""What the REDACTED tests share: the paths a run stores, a relaying tool, a real run into a
real SQLite file, the bytes of that file and its companions, and small text helpers.

Every database test of tests/redaction puts each path's own canary into the prompt, the tool
call's arguments, the tool's content, a text artifact, a table cell and the model's answer
(:data:`PATHS`), runs a real :class:`~nr_llm_core.ToolLoop` into a real SQLite file at
``redacted`` (:func:`run_into`), and greps every byte of the file and its ``-wal``, open and
closed (:func:`db_files`, :func:`assert_absent`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

from nr_llm_core import (
    AgentRunPersister,
    Artifact,
    PrivacyLevel,
    ScriptedProvider,
    ToolHost,
    ToolLoop,
    ToolResult,
    ToolSpec,
    hookimpl,
)
from nr_llm_core.loop import TerminationReason

__all__ = [
    "PATHS",
    "Relay",
    "Stored",
    "assert_absent",
    "db_files",
    "nest",
    "run_into",
    "texts",
]

#: Each path a run stores, by the tag its canary carries.
PATHS = {
    "PRMT": "prompt",
    "ARGS": "arguments",
    "CONT": "content",
    "ARTT": "text artifact",
    "CELL": "table cell",
    "ANSW": "answer",
}


class Relay:
    """Returns, as its content, a text artifact and a table cell, exactly the texts it is given
    (a tool that relays a command's output or a file)."""

    def __init__(self, payloads: dict[str, str]) -> None:
        self.payloads = payloads

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("relay", "Relays output.", {"type": "object"}, data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        p = self.payloads
        return ToolResult.text(
            p["CONT"],
            Artifact.text("page", p["ARTT"]),
            Artifact.table("rows", ["raw"], [[p["CELL"]]]),
        )


def db_files(db: Path) -> dict[str, bytes]:
    """The database and every companion file (``-wal``, ``-shm``) byte for byte."""
    return {p.name: p.read_bytes() for p in db.parent.iterdir() if p.name.startswith(db.name)}


class Stored(NamedTuple):
    """What a run left: its step records, and the database's files while open and closed."""

    records: list[Any]
    opened: dict[str, bytes]
    closed: dict[str, bytes]


def run_into(db: Path, payloads: dict[str, str]) -> Stored:
    """One real run at ``redacted`` into the SQLite file ``db``, each path carrying its payload
    (the arguments as the model sends them, the answer as the model's last turn)."""
    turns = [
        {"tool_calls": [{"name": "relay", "arguments": {"out": payloads["ARGS"]}, "id": "c1"}]},
        payloads["ANSW"],
    ]
    host = ToolHost()
    host.register(Relay(payloads))
    with AgentRunPersister(db, privacy=PrivacyLevel.REDACTED) as store:
        result = ToolLoop(ScriptedProvider(turns), host, persister=store).run(payloads["PRMT"])
        assert result.termination_reason is TerminationReason.COMPLETED
        records = [json.loads(s["payload"]) for s in store.steps(result.run_id)]
        opened = db_files(db)
    return Stored(records, opened, db_files(db))


def assert_absent(stored: Stored, needles: dict[str, list[str]]) -> None:
    """No needle (listed per path tag) is in any byte of the database or its companions, open
    or closed; and the ``-wal`` was there to be looked at."""
    assert any(name.endswith("-wal") for name in stored.opened)  # the WAL is looked at too
    for tag, path in PATHS.items():
        for needle in needles[tag]:
            for files in (stored.opened, stored.closed):
                for name, data in files.items():
                    assert needle.encode() not in data, f"the {path}'s {needle} is in {name}"


def texts(value: object) -> list[str]:
    """Every string in a JSON-like value, dict keys aside."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in texts(v)]
    if isinstance(value, list):
        return [s for v in value for s in texts(v)]
    return []


def nest(text: str, depth: int) -> str:
    """``text`` written as a JSON string ``depth`` times."""
    for _ in range(depth):
        text = json.dumps(text)
    return text
