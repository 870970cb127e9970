"""A value after a credential name, in the forms a red team found stored at REDACTED (ADR 0043).

Each case names the form, the text, the canary (a part of the secret that was stored) and the
text around the value that must be kept: a quoted value that starts with a space, a quoted
value over several lines, a credential on a command line, JSON that is URL- or HTML-encoded
and a query string's value, a phrase to the end of an INI, ``.env`` or YAML line.
``test_value_forms_database.py`` runs them through a real loop into a real SQLite file.
"""

from __future__ import annotations

import html
import json
import urllib.parse
from typing import NamedTuple

import pytest

from nr_llm_core.redaction import mask_secrets, redact_text

from ._support import nest


class Case(NamedTuple):
    """A text holding a secret: ``canary`` is the part that was stored, ``kept`` the text around
    the value that must stay."""

    name: str
    text: str
    canary: str
    kept: tuple[str, ...]


def _case(name: str, text: str, canary: str, *kept: str) -> Case:
    return Case(name, text, canary, kept)


def _url(value: object) -> str:
    return urllib.parse.quote(json.dumps(value))


CASES = [
    # 1. A quoted value that starts with a space.
    _case("space-yaml", 'password: " hunter2-CANARYa1"\nuser: ann', "CANARYa1", "\nuser: ann"),
    _case("space-python", "{'token': ' abcCANARYa2xyz', 'u': 1}", "CANARYa2", ", 'u': 1}"),
    _case("space-ini", 'token = " abcCANARYa3"\nhost = db', "CANARYa3", "\nhost = db"),
    _case("space-json", '{"token": " abcCANARYa4", "u": 1}', "CANARYa4", '"u": 1}'),
    # 2. A quoted value over several lines (YAML, the shell, .env).
    _case("lines-yaml", 'db:\n  password: "abc\n    CANARYb1def"\n  user: ann', "CANARYb1",
          "\n  user: ann"),
    _case("lines-shell", "PASSWORD='abc\nCANARYb2def' psql\nls", "CANARYb2", "' psql\nls"),
    _case("lines-yaml-single", "password: 'ab\n  cd CANARYb3'\nuser: ann", "CANARYb3",
          "'\nuser: ann"),
    _case("lines-dotenv", 'DB_PASSWORD="ab\nCANARYb4"\nDB_USER=app', "CANARYb4", "\nDB_USER=app"),
    # 3. Command lines.
    _case("flag-space", "tool --password CANARYc1s3cret --verbose", "CANARYc1", " --verbose"),
    _case("flag-equals-word", "tool --password=canaryCtwoword run", "canaryCtwo", " run"),
    _case("flag-token", "gh auth --token CANARYc3tok9 x", "CANARYc3", " x"),
    _case("flag-api-key", "llm --api-key CANARYc4key9 x", "CANARYc4", " x"),
    _case("flag-quoted", 'tool --password "two words CANARYc5" x', "CANARYc5", '" x'),
    _case("mysql-attached", "mysql -u root -pCANARYc6s3cret shop", "CANARYc6", " shop", "-u root"),
    _case("sshpass", "sshpass -p CANARYc7s3cret ssh host", "CANARYc7", " ssh host"),
    _case("mongo", "mongosh -u admin -p CANARYc8s3cret db", "CANARYc8", " db"),
    # 4. JSON that is URL- or HTML-encoded, and a query string's value.
    _case("url-json-quote", "q=" + _url({"password": 'ab"CANARYd1', "u": 1}), "CANARYd1", "q="),
    _case("url-json-plus", "q=" + urllib.parse.quote_plus(json.dumps({"password": "ab CANARYd2"})),
          "CANARYd2", "q="),
    _case("html-json-quote", html.escape(json.dumps({"password": 'ab"CANARYd3'})), "CANARYd3",
          "password"),
    _case("html-json-34", json.dumps({"password": 'ab"CANARYd4'}).replace('"', "&#34;"),
          "CANARYd4", "password"),
    _case("query-word", "https://x.example/a?password=canaryDfiveword&x=1", "canaryDfive", "&x=1"),
    _case("query-api-key", "https://x.example/a?api_key=canaryDsixword&x=1", "canaryDsix", "&x=1"),
    # 5. A phrase to the end of an INI, .env or YAML line.
    _case("ini-phrase", "[db]\npassword = two words CANARYe1\nhost = db", "CANARYe1",
          "\nhost = db"),
    _case("yaml-phrase", "db:\n  password: some phrase CANARYe2\n  user: ann", "CANARYe2",
          "\n  user: ann"),
    _case("dotenv-phrase", "DB_PASSWORD = two words CANARYe3\nDB_USER=app", "CANARYe3",
          "\nDB_USER=app"),
    _case("properties-phrase", "spring.datasource.password=open sesame CANARYe4\nx=1",
          "CANARYe4", "\nx=1"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_value_is_masked_and_the_text_around_it_kept(case: Case) -> None:
    """Tries: each form with its canary in the secret; nothing of the canary may be stored,
    and the text around the value must stay."""
    assert case.canary in case.text
    out = mask_secrets(case.text)
    assert case.canary not in out, out
    assert "[REDACTED:" in out
    for kept in case.kept:
        assert kept in out, (kept, out)


#: Cases not defended inside a JSON string (docs/privacy.md, "not defended"): JSON that is
#: form-encoded (a "+" for each space) and then written as a JSON string's content. The
#: JSON reader reads the outer string; the decoded view that reads the inner JSON decodes the
#: outer string's quotes too, and the value is read up to its first space there.
NOT_IN_JSON_STRINGS = frozenset({"url-json-plus"})


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize(
    "case", [c for c in CASES if c.name not in NOT_IN_JSON_STRINGS], ids=lambda c: c.name
)
def test_the_value_is_masked_in_a_json_string_and_the_text_stays_json(
    case: Case, depth: int
) -> None:
    """Tries: the same texts as the content of a JSON string, 1-2 deep, next to a member that
    must be kept; the text must stay JSON."""
    out = redact_text(nest(json.dumps({"file": case.text, "z": "keep"}), depth - 1))
    assert case.canary not in out
    document = json.loads(nest_loads(out, depth - 1))
    assert document["z"] == "keep"


@pytest.mark.xfail(
    strict=True,
    reason="not defended: form-encoded JSON inside a JSON string is read up to a space (a +)",
)
def test_form_encoded_json_inside_a_json_string_is_not_defended() -> None:
    (case,) = [c for c in CASES if c.name in NOT_IN_JSON_STRINGS]
    assert case.canary not in redact_text(json.dumps({"file": case.text, "z": "keep"}))


@pytest.mark.xfail(
    strict=True,
    reason="not defended: NAME=two words is read as the shell reads it (PGPASSWORD=x psql)",
)
def test_an_environment_assignment_is_read_to_its_first_space() -> None:
    """``.env`` files read ``DB_PASSWORD=two words`` whole; a shell line reads
    ``PGPASSWORD=s3cret psql -h db`` to its first space. Both have the same form, and the
    shell's is kept: the command after the value stays readable."""
    assert "CANARYe5" not in mask_secrets("DB_PASSWORD=two words CANARYe5\nDB_USER=app")


def nest_loads(text: str, depth: int) -> str:
    for _ in range(depth):
        text = json.loads(text)
    return text


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_masking_is_idempotent(case: Case) -> None:
    once = redact_text(case.text)
    assert redact_text(once) == once


@pytest.mark.parametrize(
    "text",
    [
        # Code around a quote that a space follows: the quote ends a string.
        'print("password: " + password)',
        'log("token: " + tok + " for " + user)',
        'msg = "Password: " if ask else ""',
        'echo "password: " $PW',
        # Command lines: metavars, variables, other flags, -p of tools that take no password.
        "usage: tool [-h] [--password PASSWORD] [--token TOKEN]",
        "tool --password=PASSWORD",
        'tool --password "$DB_PASSWORD" --user ann',
        "tool --token $TOKEN run",
        "tool --password --user ann",
        "Pass --token to the command.",
        "Use the --password option.",
        "mkdir -p build/out",
        "gcc -pthread -pipe main.c",
        "mysql -u root -p shop",
        "docker run -p 8080:80 nginx",
        "find . -path ./x -prune -print",
        # Config lines that are code or prose.
        "    password: The password to use.",
        "    token: the token the server issued, or None.",
        "token = tokens[0] if tokens else None",
        "password = getpass.getpass()",
        "password: ${DB_PASSWORD} # from the vault",
        "password = password",
        "token: str",
        # A query string's placeholder.
        "https://x.example/a?token=${TOKEN}&x=1",
        "GET /cb?token=<token>&x=1",
    ],
)
def test_code_prose_and_placeholders_are_kept(text: str) -> None:
    """The forms above have look-alikes that hold no secret; each stays as written."""
    assert mask_secrets(text) == text
