"""ADR 0040 end to end: quoted values after credential names, through a real run into a real
SQLite file.

Every path a run stores (the prompt, the tool call's arguments, the tool's content, a text
artifact, a table cell, the model's answer) carries the texts of ``test_quoted_values.py``
(YAML, the shell, ``-p'…'``, .env, INI, a passphrase, unclosed quotes, a Python literal),
each secret's canary after a quote inside it, and a private-key block cut inside a JSON string
followed by a member that must be kept. The text is stored as is and as a JSON string (as
tool-call arguments are). No canary may be in any byte of the database or its ``-wal``, open or
closed, and the text around each value must be stored.
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

from ._support import PATHS, Relay, db_files, texts
from .test_quoted_values import CASES

KEY_BODY = "MIIEpAIBAAKCAQEAkeyBODYcanaryzq"


def _payload(tag: str) -> str:
    """Each case with the path's tag in its canary, and a key block cut inside a string."""
    lines = [case.text.replace(case.tail, tag + case.tail) for case in CASES]
    cut_key = "-----BEGIN RSA PRIVATE KEY-----\n" + tag + KEY_BODY
    lines.append(json.dumps({"pem": cut_key, "after": f"benign{tag.lower()}word"}))
    return "\n".join(lines)


@pytest.mark.parametrize("depth", [0, 1])
def test_no_quoted_secret_reaches_the_database(depth: int, tmp_path: Path) -> None:
    payloads = {}
    for tag in PATHS:
        text = _payload(tag)
        payloads[tag] = json.dumps(text) if depth else text
        assert len(payloads[tag]) < 2000  # under the redactor's cap: nothing is cut away
    db = tmp_path / "audit.db"
    turns = [
        {"tool_calls": [{"name": "relay", "arguments": {"out": payloads["ARGS"]}, "id": "c1"}]},
        payloads["ANSW"],
    ]
    host = ToolHost()
    host.register(Relay(payloads))
    with AgentRunPersister(db, privacy=PrivacyLevel.REDACTED) as store:
        loop = ToolLoop(ScriptedProvider(turns), host, persister=store)
        result = loop.run(payloads["PRMT"])
        assert result.termination_reason is TerminationReason.COMPLETED
        records = [json.loads(s["payload"]) for s in store.steps(result.run_id)]
        opened = db_files(db)
    closed = db_files(db)
    assert any(name.endswith("-wal") for name in opened)  # the WAL is looked at too
    for tag, path in PATHS.items():
        needles = [tag + case.tail for case in CASES] + [tag + KEY_BODY, tag + KEY_BODY[:12]]
        for needle in needles:
            for files in (opened, closed):
                for name, data in files.items():
                    assert needle.encode() not in data, f"the {path}'s {needle} is in {name}"
    # The text after the cut key's string was stored (the key is masked to the string's end,
    # not to the end of the text), and so was the text around each value.
    stored = [json.loads(s) if depth and s.startswith('"') else s for s in texts(records)]
    for tag, path in PATHS.items():
        assert any(f"benign{tag.lower()}word" in s for s in stored), path
    for case in CASES:
        for kept in case.kept:
            assert any(kept in s for s in stored), kept
