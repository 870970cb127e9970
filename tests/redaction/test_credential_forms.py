"""Values after credential names that a red team (ADR 0046) found stored at ``redacted``.

Each text case names the form, the text, the canary (a part of the secret that was stored) and
the text around the value that must be kept: a ``;``-separated connection string's password
that holds spaces (it runs to its ``;``), SQL's quoted password literal after ``PASSWORD`` or
``IDENTIFIED BY`` and a space, YAML's block scalars (``password: |`` and the indented lines
after it), an XML element named as a credential, ``.netrc``'s ``password``, ``curl -u``, a
name/value pair in JSON text (``{"name": "DB_PASSWORD", "value": …}``).
Structured values: a name/value pair whose name is a credential name (Kubernetes' ``env``)
masks its value; a table whose column is named like a credential
masks that column's cells. Each is also run through a real loop into a real SQLite file and its
``-wal``. Forms not defended are strict xfails, listed in docs/privacy.md.
"""

from __future__ import annotations

import json
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
from nr_llm_core.redaction import redact_text, redact_value

from ._support import db_files, nest
from .test_value_forms import Case, _case

CASES = [
    _case("connection-string", "Server=db;User Id=sa;Password=blue CANARYg1 sky;Database=app",
          "CANARYg1", "Server=db;User Id=sa;Password=", ";Database=app"),
    _case("connection-string-last", "Host=db; Password=two CANARYg2 words", "CANARYg2",
          "Host=db; Password="),
    _case("sql-role", "CREATE ROLE app WITH LOGIN PASSWORD 'CANARYg3';", "CANARYg3",
          "CREATE ROLE app WITH LOGIN PASSWORD '", "';"),
    _case("yaml-block-literal", "db:\n  password: |\n    two CANARYi1\n  user: ann\n", "CANARYi1",
          "  password: |\n    ", "\n  user: ann"),
    _case("yaml-block-folded", "password: >-\n  a CANARYi2\n\nuser: ann", "CANARYi2",
          "password: >-\n  ", "\n\nuser: ann"),
    _case("xml-element", "<db><password>a CANARYi5</password></db>", "CANARYi5",
          "<db><password>", "</password></db>"),
    _case("netrc", "machine db\n  login ann\n  password CANARYi6\nmachine x", "CANARYi6",
          "  password ", "\nmachine x"),
    _case("curl-user", "curl -u ann:CANARYi7 https://x", "CANARYi7", "curl -u ann:", " https://x"),
    _case("curl-long-user", "curl -s --user 'ann:CANARYi8' https://x", "CANARYi8",
          "--user 'ann:", "' https://x"),
    _case("json-name-value", '[{"name": "DB_PASSWORD", "value": "a CANARYi3"}, {"name": "HOST", '
          '"value": "db.internal"}]', "CANARYi3", '{"name": "DB_PASSWORD", "value": "',
          '"db.internal"'),
    _case("sql-identified", "CREATE USER 'app'@'%' IDENTIFIED BY 'it''s CANARYg4';", "CANARYg4",
          "CREATE USER 'app'@'%' IDENTIFIED BY '", "';"),
]  # fmt: skip

KEPT = [
    "Server=db;User Id=sa;Password=${DB_PASSWORD};Database=app",
    "Server=db;Password=<your password>;Database=app",
    "ALTER ROLE app WITH PASSWORD NULL;",
    "IDENTIFIED BY '${DB_PASSWORD}'",
    "password: |\n  ${DB_PASSWORD}\nuser: ann",
    "<password>${db.password}</password>",
    "machine learning password reset",
    "curl -u ann:$PASSWORD https://x",
]


@pytest.mark.parametrize("depth", [0, 1])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_value_is_masked_and_the_text_around_it_kept(case: Case, depth: int) -> None:
    """Tries: each form as is and as a JSON string's content; the whole value is masked, the
    text around it stays, and masking again changes nothing."""
    out = redact_text(nest(case.text, depth))
    assert case.canary not in out
    assert redact_text(out) == out
    plain = json.loads(out) if depth else out
    for kept in case.kept:
        assert kept in plain, (kept, plain)


@pytest.mark.parametrize("text", KEPT)
def test_placeholders_in_those_forms_are_kept(text: str) -> None:
    assert redact_text(text) == text


def test_a_name_value_pair_masks_its_value() -> None:
    """Tries: Kubernetes' env list (``name``/``value``) and ECS's (``Name``/``Value``) as
    structured values; a pair under another name is kept."""
    env = [
        {"name": "DB_PASSWORD", "value": "CANARYh1"},
        {"Name": "api_token", "Value": "CANARYh2"},
        {"name": "HOST", "value": "db.internal"},
    ]
    out = redact_value(env)
    assert "CANARYh1" not in str(out) and "CANARYh2" not in str(out)
    assert out[0]["name"] == "DB_PASSWORD" and out[2] == env[2]


def test_a_table_masks_the_cells_of_a_credential_column() -> None:
    """Tries: a TABLE artifact's data whose columns are named ``password`` and ``api_token``;
    the other columns' cells are kept."""
    data = {"columns": ["user", "password", "api_token"], "rows": [["ann", "s1 CANARYh3", "x"]]}
    out = redact_value(data)
    assert out["rows"][0][0] == "ann"
    assert "CANARYh3" not in str(out) and out["rows"][0][2] != "x"


class _Relay:
    """Returns the texts as its content, and a table whose ``password`` column holds a canary."""

    def __init__(self, text: str) -> None:
        self.text = text

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("relay", "Relays output.", {"type": "object"}, data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.text(
            self.text,
            Artifact.text("page", self.text),
            Artifact.table("users", ["user", "password"], [["ann", "CELLCANARYh4 x"]]),
        )


def test_no_form_reaches_the_database(tmp_path: Path) -> None:
    """Tries: every text form in the prompt, the arguments, the content, a text artifact and
    the answer; a name/value pair in the arguments; a table's password column. No canary in
    any byte of the SQLite file or its ``-wal``, open or closed."""
    text = "\n".join(c.text for c in CASES)
    arguments = {"out": text, "env": [{"name": "DB_PASSWORD", "value": "ARGSCANARYh5"}]}
    turns = [{"tool_calls": [{"name": "relay", "arguments": arguments, "id": "c1"}]}, text]
    host = ToolHost()
    host.register(_Relay(text))
    db = tmp_path / "audit.db"
    with AgentRunPersister(db, privacy=PrivacyLevel.REDACTED) as store:
        result = ToolLoop(ScriptedProvider(turns), host, persister=store).run(text)
        assert result.termination_reason is TerminationReason.COMPLETED
        opened = db_files(db)
        stored = json.dumps([json.loads(s["payload"]) for s in store.steps(result.run_id)])
    assert any(name.endswith("-wal") for name in opened)
    canaries = [c.canary for c in CASES] + ["CELLCANARYh4", "ARGSCANARYh5"]
    for files in (opened, db_files(db)):
        for name, data in files.items():
            for canary in canaries:
                assert canary.encode() not in data, (canary, name)
    assert "Database=app" in stored and "DB_PASSWORD" in stored  # the text around is kept


# Not defended (docs/privacy.md): each a strict xfail that fails the day it is caught.
NOT_DEFENDED = {
    "yaml-name-value-text": "- name: DB_PASSWORD\n  value: CANARYi4\n",
}


@pytest.mark.xfail(
    strict=True,
    reason="not defended: a name/value pair written as YAML text is read as two lines, and "
    "'value' is no credential name (docs/privacy.md)",
)
@pytest.mark.parametrize("name", sorted(NOT_DEFENDED))
def test_forms_not_defended(name: str) -> None:
    text = NOT_DEFENDED[name]
    canary = "CANARY" + text.split("CANARY")[1][:2]
    assert canary not in redact_text(text)
