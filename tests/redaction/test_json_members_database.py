"""ADR 0035 through a whole run into a real SQLite file (and its ``-wal``).

A real ``ToolLoop`` records into a real SQLite file at ``redacted``. Each path a run stores
(the prompt, the tool call's arguments, the tool's content, a text artifact, a table cell, the
model's answer) carries JSON text whose credentials hold a quote, with a canary after the
quote: a password with ``\\"``, a name written ``pass\\u0077ord`` whose value holds
``\\u0022``, an ``api_key`` with a backslash run before its quote, and a number under
``token``. The text is JSON quoted as a JSON string 0-2 times more. No canary may be in any
byte of the database or its ``-wal``, open or closed, and every stored copy of the text is
still the same JSON at every depth, with the mask where each value was.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nr_llm_core import (
    AgentRunPersister,
    PrivacyLevel,
    ScriptedProvider,
    ToolHost,
    ToolLoop,
)
from nr_llm_core.loop import TerminationReason

from ._support import PATHS, Relay, db_files, nest, texts

MASK = "[REDACTED:credential-value]"


def _document(tag: str) -> str:
    """JSON text with four credentials, each with the tag's canary after a quote (or, for the
    number, as its digits), and an ordinary member to show the rest is kept."""
    return (
        '{"note": "benign' + tag.lower() + 'word", '
        '"password": "Pw\\"' + tag + 'AFTERQUOTEzq", '
        '"pass\\u0077ord": "Pw\\u0022' + tag + 'AFTERUQUOTEzq", '
        '"api_key": "Pw\\\\\\\\\\"' + tag + 'AFTERRUNzq", '
        '"token": 7734' + str(sum(map(ord, tag))) + "1}"
    )


def _needles(tag: str) -> list[str]:
    return [
        f"{tag}AFTERQUOTEzq",
        f"{tag}AFTERUQUOTEzq",
        f"{tag}AFTERRUNzq",
        f"7734{sum(map(ord, tag))}1",
    ]


@pytest.mark.parametrize("depth", [0, 1, 2])
def test_no_canary_after_a_quote_reaches_the_database(depth: int, tmp_path: Path) -> None:
    payloads = {tag: nest(_document(tag), depth) for tag in PATHS}
    for tag, payload in payloads.items():
        for needle in _needles(tag):
            assert needle in payload
    db = tmp_path / "audit.db"
    turns = [
        {"tool_calls": [{"name": "relay", "arguments": {"url": payloads["ARGS"]}, "id": "c1"}]},
        payloads["ANSW"],
    ]
    host = ToolHost()
    host.register(Relay(payloads))
    with AgentRunPersister(db, privacy=PrivacyLevel.REDACTED) as store:
        result = ToolLoop(ScriptedProvider(turns), host, persister=store).run(payloads["PRMT"])
        assert result.termination_reason is TerminationReason.COMPLETED
        records = [json.loads(s["payload"]) for s in store.steps(result.run_id)]
        opened = db_files(db)
    closed = db_files(db)
    assert any(name.endswith("-wal") for name in opened)  # the WAL is looked at too
    for tag, path in PATHS.items():
        for needle in _needles(tag):
            for files in (opened, closed):
                for name, data in files.items():
                    assert needle.encode() not in data, f"the {path}'s {needle} is in {name}"
    # Every stored copy of each path's text is the same JSON at every depth, masked.
    stored = [text for record in records for text in texts(record)]
    for tag, path in PATHS.items():
        copies = [text for text in stored if f"benign{tag.lower()}word" in text]
        assert copies, f"the {path} was stored"
        for text in copies:
            value: object = text
            for _ in range(depth + 1):
                assert isinstance(value, str)
                value = json.loads(value)
            # "pass\u0077ord" reads "password": the two members are one key of a dict.
            assert value == {
                "note": f"benign{tag.lower()}word",
                "password": MASK,
                "api_key": MASK,
                "token": MASK,
            }
            assert text == nest(
                '{"note": "benign' + tag.lower() + 'word", "password": "' + MASK + '", '
                '"pass\\u0077ord": "' + MASK + '", "api_key": "' + MASK + '", '
                '"token": "' + MASK + '"}',
                depth,
            )
