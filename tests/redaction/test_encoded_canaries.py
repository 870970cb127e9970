"""Encoded secrets through a whole run at REDACTED, looked for in the bytes of the database.

A real ``ToolLoop`` records into a real SQLite file at ``redacted``. Every path a run stores
carries the same secret shape under the same encoding (tests/redaction/encodings.py), each
with its own tag: the user's prompt, the tool call's arguments (as the model sends them), the
tool's content, a text artifact, a table cell and the model's answer. No needle may be in any
byte of the database or its ``-wal``, while the store is open or after it is closed; the
benign words of every path are stored (the level keeps content), and the masks are there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

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

from ._support import PATHS, db_files
from .encodings import CANARIES, ENCODINGS, Canary


class Fetch:
    """Returns, in its content and artifacts, what it is told to (as a tool that relays a
    web page or a command's output does)."""

    def __init__(self, payloads: dict[str, str]) -> None:
        self.payloads = payloads

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("fetch", "Fetches a page.", {"type": "object"}, data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        p = self.payloads
        return ToolResult.text(
            f"benigncontentword {p['CONT']}",
            Artifact.text("page", f"benignartifactword {p['ARTT']}"),
            Artifact.table("rows", ["raw"], [[f"benigncellword {p['CELL']}"]]),
        )


@pytest.mark.parametrize("encoding", list(ENCODINGS))
@pytest.mark.parametrize("canary", CANARIES, ids=lambda c: c.kind)
def test_no_encoded_secret_reaches_the_database(
    canary: Canary, encoding: str, tmp_path: Path
) -> None:
    payloads = {tag: ENCODINGS[encoding](canary.document(tag), canary.trigger) for tag in PATHS}
    for tag, payload in payloads.items():
        assert canary.needle(tag) in payload
    db = tmp_path / "audit.db"
    turns = [
        {"tool_calls": [{"name": "fetch", "arguments": {"url": payloads["ARGS"]}, "id": "c1"}]},
        f"benignanswerword {payloads['ANSW']}",
    ]
    host = ToolHost()
    host.register(Fetch(payloads))
    with AgentRunPersister(db, privacy=PrivacyLevel.REDACTED) as store:
        loop = ToolLoop(ScriptedProvider(turns), host, persister=store)
        result = loop.run(f"benignpromptword {payloads['PRMT']}")
        assert result.termination_reason is TerminationReason.COMPLETED
        stored = "\n".join(s["payload"] for s in store.steps(result.run_id))
        opened = db_files(db)
    closed = db_files(db)
    assert any(name.endswith("-wal") for name in opened)  # the WAL is looked at too
    for word in ("prompt", "content", "artifact", "cell", "answer"):
        assert f"benign{word}word" in stored, word
    for tag, path in PATHS.items():
        needle = canary.needle(tag).encode()
        for files in (opened, closed):
            for name, data in files.items():
                assert needle not in data, f"the {path}'s secret is in {name}"
    assert "[REDACTED:" in stored
