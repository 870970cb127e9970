"""The red team of ADR 0035 end to end: a real run into a real SQLite file, exported over OTLP.

Every path a run stores (the prompt, the tool call's arguments, the tool's content, a text
artifact, a table cell, the model's answer) carries a tool's output of the kinds the JSON reader
stopped too early on: ``curl -i``'s headers before a body that ``json.dumps`` wrote with
``NaN``, a warning line, a document after a byte order mark, a log line's prefix, a structured
log whose message quotes a body after a prefix, a ``grep`` line of a pretty-printed file, a
Node.js ``set-cookie`` array, a name the catalogue reads at its end (``"my pwd"``), a float
under a credential name, a card number as a JSON number, an object written as a JSON string
under ``credentials``, and compact JSON with a scheme and ``user:pw@`` in neighbouring
strings. Each credential holds a canary after a quote. The text is stored as is and as a JSON
string (as tool-call arguments are).

No canary may be in any byte of the database or its ``-wal``, open or closed, nor in any byte
an OpenTelemetry exporter sends at ``redacted`` (built from the same filtered record); and the
documents in the stored text are still JSON. The playground's live view streams that same
record (``tests/playground/test_live_privacy.py::test_each_streamed_step_is_the_stored_record``).
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
from nr_llm_core.otel import OtelTelemetry
from tests.otel._receiver import OtlpReceiver, exporting

from ._support import PATHS, Relay, db_files, texts

KINDS = ("NAN", "BOM", "PREFIX", "MSG", "GREP", "COOKIE", "TAILNAME", "INSTRING")
CARD = "4111111111111111"


def _canary(tag: str, kind: str) -> str:
    return f"{tag}{kind}AFTERQUOTEzq"


def _lines(tag: str) -> list[str]:
    """The tool output for one path: each line one of the shapes, its canary after a quote."""

    def pw(kind: str) -> str:
        return 'Pw"' + _canary(tag, kind)

    return [
        "HTTP/1.1 200 OK",
        "Content-Type: application/json",
        "",
        json.dumps(
            {"note": f"benign{tag.lower()}word", "score": float("nan"), "password": pw("NAN")}
        ),
        "WARNING: the cache is cold",
        "\ufeff" + json.dumps({"api_key": pw("BOM")}),
        "response: " + json.dumps({"token": pw("PREFIX")}),
        json.dumps({"msg": "request body: " + json.dumps({"client_secret": pw("MSG")})}),
        '    "password": ' + json.dumps(pw("GREP")) + ",",
        json.dumps({"set-cookie": ["sid=" + _canary(tag, "COOKIE") + "; Path=/; HttpOnly"]}),
        json.dumps({"my pwd": pw("TAILNAME")}),
        json.dumps({"password": 1.5, "order": int(CARD), "n": 1}),
        json.dumps({"credentials": json.dumps({"user": "ann", "pass": pw("INSTRING")})}),
        json.dumps(["http://a", "b:c@d"], separators=(",", ":")),
    ]


@pytest.mark.parametrize("depth", [0, 1])
def test_no_canary_reaches_the_database_or_the_exporter(depth: int, tmp_path: Path) -> None:
    payloads = {}
    for tag in PATHS:
        text = "\n".join(_lines(tag))
        payloads[tag] = json.dumps(text) if depth else text
        assert len(payloads[tag]) < 2000  # under the redactor's cap: nothing is cut away
    db = tmp_path / "audit.db"
    turns = [
        {"tool_calls": [{"name": "relay", "arguments": {"out": payloads["ARGS"]}, "id": "c1"}]},
        payloads["ANSW"],
    ]
    host = ToolHost()
    host.register(Relay(payloads))
    with OtlpReceiver() as receiver:
        with exporting(receiver) as (tracer_provider, meter_provider):
            telemetry = OtelTelemetry(
                tracer_provider=tracer_provider, meter_provider=meter_provider
            )
            with AgentRunPersister(db, privacy=PrivacyLevel.REDACTED) as store:
                loop = ToolLoop(ScriptedProvider(turns), host, persister=store, telemetry=telemetry)
                result = loop.run(payloads["PRMT"])
                assert result.termination_reason is TerminationReason.COMPLETED
                records = [json.loads(s["payload"]) for s in store.steps(result.run_id)]
                opened = db_files(db)
        wire = receiver.all_bytes()
    closed = db_files(db)
    assert any(name.endswith("-wal") for name in opened)  # the WAL is looked at too
    assert b"benigncontword" in wire  # content is exported at this level: the sweep can fail
    for tag, path in PATHS.items():
        needles = [_canary(tag, kind) for kind in KINDS]
        for needle in needles:
            for files in (opened, closed):
                for name, data in files.items():
                    assert needle.encode() not in data, f"the {path}'s {needle} is in {name}"
            assert needle.encode() not in wire, f"the {path}'s {needle} was exported"
    for files in (opened, closed):
        for name, data in files.items():
            assert CARD.encode() not in data, name
    assert CARD.encode() not in wire
    # Every stored copy of each path's text still holds its documents as JSON.
    stored = [text for record in records for text in texts(record)]
    for tag, path in PATHS.items():
        copies = [text for text in stored if f"benign{tag.lower()}word" in text]
        assert copies, f"the {path} was stored"
        for text in copies:
            lines = (json.loads(text) if depth else text).split("\n")
            assert len(lines) == len(_lines(tag))
            first = json.loads(lines[3])
            assert first["password"] == "[REDACTED:credential-value]"
            assert json.loads(lines[5].lstrip("\ufeff")) == {
                "api_key": "[REDACTED:credential-value]"
            }
            assert json.loads(lines[9]) == {"set-cookie": ["[REDACTED:credential-value]"]}
            assert json.loads(lines[11]) == {
                "password": "[REDACTED:credential-value]",
                "order": "[REDACTED:card]",
                "n": 1,
            }
            inner = json.loads(json.loads(lines[12])["credentials"])
            assert inner == {"user": "[REDACTED:credential-value]", "pass": inner["user"]}
            assert lines[13] == '["http://a","b:c@d"]'  # two strings, not one mask
