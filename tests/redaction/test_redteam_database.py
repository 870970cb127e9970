"""Red-team of ADR 0034 through a whole run into a real SQLite file (and its ``-wal``).

Two holes found by trying to break REDACTED, each through the six paths a run stores
(tests/redaction/test_encoded_canaries.py's run):

- every catalogue canary with its telling letters written as zero-padded HTML numeric
  references (``&#x0000041;KIA…``): the view read at most six hex digits and stored it whole;
- a password with a quote in it, in JSON content: the mask took the backslash of ``\\"`` and
  the stored content stopped being JSON.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nr_llm_core import AgentRunPersister, PrivacyLevel, ScriptedProvider, ToolHost, ToolLoop
from nr_llm_core.loop import TerminationReason

from ._support import PATHS, db_files, texts
from .encodings import CANARIES, Canary
from .test_encoded_canaries import Fetch


def _padded_letters(text: str, trigger: str) -> str:
    padded = "".join(f"&#x{ord(c):07X};" if c.isalpha() else c for c in trigger)
    return text.replace(trigger, padded)


def _run(db: Path, payloads: dict[str, str]) -> tuple[str, dict[str, bytes], dict[str, bytes]]:
    turns = [
        {"tool_calls": [{"name": "fetch", "arguments": {"url": payloads["ARGS"]}, "id": "c1"}]},
        f"benignanswerword {payloads['ANSW']}",
    ]
    host = ToolHost()
    host.register(Fetch(payloads))
    with AgentRunPersister(db, privacy=PrivacyLevel.REDACTED) as store:
        result = ToolLoop(ScriptedProvider(turns), host, persister=store).run(
            f"benignpromptword {payloads['PRMT']}"
        )
        assert result.termination_reason is TerminationReason.COMPLETED
        steps = store.steps(result.run_id)
        stored = "\n".join(s["payload"] for s in steps)
        opened = db_files(db)
    return stored, opened, db_files(db)


@pytest.mark.parametrize("canary", CANARIES, ids=lambda c: c.kind)
def test_zero_padded_references_do_not_carry_a_secret_into_the_database(
    canary: Canary, tmp_path: Path
) -> None:
    """Tries: each canary with its trigger's letters as ``&#x000004B;``-style references, on
    every path; no needle in the database or its WAL, open or closed."""
    payloads = {tag: _padded_letters(canary.document(tag), canary.trigger) for tag in PATHS}
    for tag, payload in payloads.items():
        assert canary.needle(tag) in payload
    stored, opened, closed = _run(tmp_path / "audit.db", payloads)
    assert "benigncontentword" in stored and "[REDACTED:" in stored
    for tag, path in PATHS.items():
        needle = canary.needle(tag).encode()
        for files in (opened, closed):
            for name, data in files.items():
                assert needle not in data, f"the {path}'s secret is in {name}"


def test_masked_json_content_is_still_json_in_the_database(tmp_path: Path) -> None:
    """Tries: a tool returns JSON whose password holds a quote; the stored content (after its
    fixed prefix) must still parse, with the other member intact and the password's start
    masked."""
    document = json.dumps({"password": 'Hunter2zz"rest', "user": "bob"})
    payloads = dict.fromkeys(PATHS, document)
    stored, opened, closed = _run(tmp_path / "audit.db", payloads)
    assert b"Hunter2zz" not in b"".join([*opened.values(), *closed.values()])
    contents = [
        json.loads(text.removeprefix("benigncontentword "))
        for text in texts(json.loads(f"[{stored.replace(chr(10), ',')}]"))
        if text.startswith("benigncontentword {")
    ]
    assert contents, "the content was stored"
    for content in contents:
        assert content["user"] == "bob"
        assert content["password"].startswith("[REDACTED:credential-value]")
