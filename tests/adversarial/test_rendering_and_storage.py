"""ADVERSARIAL.md, Rendering and storage: the rows end to end, through the public API.

tests/test_redaction.py pins every secret shape on the redactor alone, and tests/test_privacy.py
the level resolution on the filter alone. Here a real ``ToolLoop`` records into a real
``AgentRunPersister`` and the database files are searched byte for byte; and ``nr-llm tools run``
prints a real entry point's hostile artifacts through click's ``CliRunner``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

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
from nr_llm_core.cli import main

from ._tools import RAW_UNSAFE, SHOWN


def database_bytes(db: Path) -> bytes:
    """The database file with its -wal and -shm files."""
    return b"".join(p.read_bytes() for p in db.parent.iterdir() if p.name.startswith(db.name))


# -- REDACTED: every secret shape of the row, masked wherever it rides --------------------------

PASSWORD = "correct-horse-battery-staple"
API_KEY = "plain-looking-api-key-value"
REFRESH = "plain-looking-refresh-value"
BEARER = "bEaReR.abc-123_XYZ="
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"
    ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
URL_PASSWORD = "s3cr3t-url-password"
QUERY_TOKEN = "tok3nQueryValue99"
CARD_TEXT = "4111 1111 1111 1111"
CARD_INT = 4012888888881881
BENIGN = "benign words stay readable"

FREE_TEXT = (
    f"{BENIGN}. Authorization: Bearer {BEARER} then {JWT} and\n"
    f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\n-----END PRIVATE KEY-----\n"
    f"key {AWS_KEY}, db postgres://admin:{URL_PASSWORD}@db.internal:5432/app, "
    f"link https://api.example.com/v1?token={QUERY_TOKEN}&page=2, card {CARD_TEXT}."
)
# Each shape masked with its kind; the benign text and the context around each secret kept.
MASKED_TEXT = (
    f"{BENIGN}. Authorization: Bearer [REDACTED:bearer-token] then [REDACTED:jwt] and\n"
    "[REDACTED:private-key]\n"
    "key [REDACTED:aws-access-key-id], "
    "db postgres://[REDACTED:url-credentials]@db.internal:5432/app, "
    "link https://api.example.com/v1?token=[REDACTED:credential-value]&page=2, "
    "card [REDACTED:card]."
)
NEVER_STORED = [
    PASSWORD,
    API_KEY,
    REFRESH,
    BEARER,
    JWT,
    JWT.split(".")[2],
    PEM_BODY,
    AWS_KEY,
    URL_PASSWORD,
    QUERY_TOKEN,
    CARD_TEXT,
    CARD_TEXT.replace(" ", ""),
    str(CARD_INT),
]
# What the model sends: secrets under sensitive keys deep in lists of dicts, a card number as an
# int, and the free text.
ARGUMENTS: dict[str, Any] = {
    "items": [
        {"user": "ann", "password": PASSWORD},
        {"headers": [{"X-Api-Key": API_KEY, "refreshToken": REFRESH, "accept": "json"}]},
    ],
    "number": CARD_INT,
    "note": FREE_TEXT,
}


class Echoes:
    """Returns the free text in both channels: content, a TEXT artifact and a TABLE."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("echoes", "Echoes secrets back.", {"type": "object"}, data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.text(
            FREE_TEXT,
            Artifact.text(f"label Bearer {BEARER}", FREE_TEXT),
            Artifact.table("rows", ["user", "card"], [["ann", CARD_TEXT], ["bob", JWT]]),
        )


def test_redacted_masks_every_secret_shape_wherever_it_rides(tmp_path: Path) -> None:
    db = tmp_path / "redacted.db"
    host = ToolHost()
    host.register(Echoes())
    provider = ScriptedProvider(
        [
            {
                "content": FREE_TEXT,
                "tool_calls": [{"id": "c1", "name": "echoes", "arguments": ARGUMENTS}],
            },
            FREE_TEXT,
        ]
    )
    with AgentRunPersister(db) as store:
        loop = ToolLoop(provider, host, persister=store, privacy=PrivacyLevel.REDACTED)
        result = loop.run(FREE_TEXT)
        steps = [s["step"] for s in store.steps(result.run_id)]
        open_bytes = database_bytes(db)
    closed_bytes = database_bytes(db)
    assert result.invocations[0].result.content == FREE_TEXT  # the secrets did go through
    assert [s["kind"] for s in steps] == ["request", "llm", "tool", "request", "llm"]
    for secret in NEVER_STORED:
        assert secret.encode() not in open_bytes, secret
        assert secret.encode() not in closed_bytes, secret
    tool = steps[2]
    assert tool["tool_arguments"]["items"][0] == {"user": "ann", "password": "[REDACTED:sensitive]"}
    assert tool["tool_arguments"]["items"][1]["headers"][0] == {
        "X-Api-Key": "[REDACTED:sensitive]",
        "refreshToken": "[REDACTED:sensitive]",
        "accept": "json",
    }
    assert tool["tool_arguments"]["number"] == "[REDACTED:card]"
    for text in (
        tool["tool_arguments"]["note"],
        tool["tool_result"],
        tool["tool_artifacts"][0]["data"]["text"],
        steps[0]["messages_sent"][0]["content"],
        steps[1]["content"],
        steps[4]["content"],
    ):
        assert text == MASKED_TEXT
    assert steps[1]["requested_tool_calls"][0]["arguments"] == tool["tool_arguments"]
    assert tool["tool_artifacts"][0]["label"] == "label Bearer [REDACTED:bearer-token]"
    assert tool["tool_artifacts"][1]["data"] == {
        "columns": ["user", "card"],
        "rows": [["ann", "[REDACTED:card]"], ["bob", "[REDACTED:jwt]"]],
    }


# -- an unset or invalid privacy level is METADATA, end to end ------------------------------------

CANARY = "privacy-level-canary-3d7e"


class Plain:
    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("plain", "Returns the canary.", data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.text(f"result {CANARY}", Artifact.text(f"label {CANARY}", CANARY))


@pytest.mark.parametrize(
    ("environment", "argument"),
    [(None, None), ("", None), ("fulll", None), (None, "verbatim"), ("FULL!", 3)],
    ids=["unset", "empty", "invalid-environment", "invalid-argument", "both-invalid"],
)
def test_an_unset_or_invalid_privacy_level_stores_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, environment: str | None, argument: Any
) -> None:
    if environment is not None:
        monkeypatch.setenv("NR_LLM_PRIVACY_LEVEL", environment)
    db = tmp_path / "level.db"
    host = ToolHost()
    host.register(Plain())
    provider = ScriptedProvider(
        [{"tool_calls": [{"id": "c1", "name": "plain", "arguments": {"q": CANARY}}]}, CANARY]
    )
    with AgentRunPersister(db) as store:
        assert store.privacy is PrivacyLevel.METADATA
        result = ToolLoop(provider, host, persister=store, privacy=argument).run(CANARY)
        record = store.get_run(result.run_id)
        steps = [s["step"] for s in store.steps(result.run_id)]
    assert result.invocations[0].result.content == f"result {CANARY}"
    assert record is not None and record["privacy_level"] == "metadata"
    assert len(steps) == 5 and all(s["content_redacted"] is True for s in steps)
    assert steps[2]["tool_artifact_types"] == ["text"]
    assert CANARY.encode() not in database_bytes(db)


# -- the CLI shows hostile artifact characters visibly -----------------------------------------


@pytest.mark.usefixtures("hostile_entry_point")
def test_tools_run_shows_hostile_artifact_characters_visibly() -> None:
    ran = CliRunner().invoke(main, ["tools", "run", "adv_hostile"])
    assert ran.exit_code == 0, ran.output
    assert not RAW_UNSAFE.search(ran.output), repr(ran.output)
    for field in ("content", "label", "text", "table"):
        assert f"{field} {SHOWN}" in ran.output, field
    for cell in ("column", "cell"):  # table cells are cut at 40 characters, escapes included
        assert f"{cell} {SHOWN}"[:39] + "…" in ran.output, cell
