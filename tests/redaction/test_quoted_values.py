"""A quoted value after a credential name in text that is not JSON is masked to its real end
(ADR 0040).

The catalogue read a value up to its first quote, so what followed a quote inside it was stored:
YAML's ``password: "ab\\"cd"`` kept ``cd"``, ``'it''s'`` kept ``s'``, the shell's
``PASSWORD='a'"'"'b'`` kept ``'"'"'b'``, ``-p'…'`` was not read at all. Each case here names the
format, the text, the part of the secret that was stored, and the text around it that must be
kept. ``test_quoted_values_database.py`` runs them through a real loop into a real SQLite file.
"""

from __future__ import annotations

import json
from typing import NamedTuple

import pytest

from nr_llm_core.redaction import mask_secrets, redact_text, redact_value

MASK = "[REDACTED:credential-value]"


class Case(NamedTuple):
    """A text holding a quoted secret: ``tail`` is the part of the secret after its first
    quote (what was stored), ``kept`` the text around it that must stay."""

    name: str
    text: str
    tail: str
    kept: tuple[str, ...]


def _case(name: str, text: str, tail: str, *kept: str) -> Case:
    return Case(name, text, tail, kept)


CASES = [
    # YAML: double-quoted scalars take backslash escapes; single-quoted double their quote.
    _case("yaml-double", 'db:\n  password: "ab\\"cdTAIL1zq"\n  user: ann\n', "cdTAIL1zq",
          "db:\n  password: \"", "\"\n  user: ann\n"),
    _case("yaml-single", "password: 'it''sTAIL2zq'\nuser: ann", "sTAIL2zq", "\nuser: ann"),
    _case("yaml-backslash-at-end", 'token: "abc\\\\"  # note\nx: 1', "abc", "  # note\nx: 1"),
    _case("yaml-flow", "{password: 'a''bTAIL3zq', user: ann}", "bTAIL3zq", ", user: ann}"),
    # The shell: parts side by side make one word.
    _case("shell-concat", "PASSWORD='a'\"'\"'bTAIL4zq' psql -h db", "bTAIL4zq", " psql -h db"),
    _case("shell-escaped-quote", "PASSWORD='a'\\''bTAIL5zq' psql", "bTAIL5zq", " psql"),
    _case("shell-export", 'export TOKEN="abc\\"TAIL6zq" && run', "TAIL6zq", " && run"),
    _case("shell-mixed", 'API_KEY="ab"\'c"dTAIL7zq\' ./start', "TAIL7zq", " ./start"),
    _case("shell-quote-then-bare", 'PASSWORD="ab"cdTAIL8zq; next', "cdTAIL8zq", "; next"),
    _case("mysql-flag", "mysql -u root -p'it''sTAIL9zq' shop", "sTAIL9zq", " shop", "-u root"),
    _case("mysql-flag-double", 'mysqldump -p"s3\\"TAIL10zq" db', "TAIL10zq", " db"),
    # .env files, INI.
    _case("dotenv", 'DB_PASSWORD="pa\\"ssTAIL11zq"\nDB_USER=app\n', "ssTAIL11zq", "\nDB_USER=app"),
    _case("dotenv-single", "SECRET_KEY='pa\\'ssTAIL12zq'\nDEBUG=1", "ssTAIL12zq", "\nDEBUG=1"),
    _case("ini", '[db]\npassword = "a\\"bTAIL13zq"\nhost = db\n', "bTAIL13zq", "\nhost = db"),
    # A phrase in quotes is one value (a passphrase), not a first word.
    _case("passphrase", 'passphrase: "correct horse TAIL14zq"\nx: 1', "TAIL14zq", "\nx: 1"),
    # An unclosed quote (a value cut by a cap, a multi-line value) runs to the end of its line.
    _case("unclosed", 'password: "ab\\"cdTAIL15zq more\nnext: 1', "TAIL15zq", "\nnext: 1"),
    _case("unclosed-single", "PASSWORD='abTAIL16zq more\nnext", "TAIL16zq", "\nnext"),
    # A Python literal's escaped quote.
    _case("python", "{'password': 'it\\'sTAIL17zq', 'u': 'ann'}", "sTAIL17zq", ", 'u': 'ann'}"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_whole_quoted_value_is_masked_and_the_text_around_it_kept(case: Case) -> None:
    """Tries: each format's quoted value with a quote (or a space) inside; nothing of the
    secret after that quote may be stored, and the text around the value must stay."""
    assert case.tail in case.text
    out = mask_secrets(case.text)
    assert case.tail not in out, out
    assert MASK in out
    for kept in case.kept:
        assert kept in out, (kept, out)


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_value_is_masked_in_a_json_string_and_the_text_stays_json(
    case: Case, depth: int
) -> None:
    """Tries: the same texts as the content of a JSON string, 1-2 deep (a tool that returns a
    file's lines as JSON), next to a member that must be kept; the text must stay JSON."""
    text = json.dumps({"file": case.text, "z": "keep"})
    for _ in range(depth - 1):
        text = json.dumps(text)
    out = redact_text(text)
    assert case.tail not in out
    for _ in range(depth - 1):
        out = json.loads(out)
    document = json.loads(out)
    assert document["z"] == "keep"
    assert case.tail not in document["file"]


@pytest.mark.parametrize(
    "text",
    [
        'password: "${DB_PASSWORD}"  # from the vault',
        "password: '<your password>'",
        "PASSWORD='' psql",
        'token: "x"',
        "credentials = '{0}:{1}'.format(user, passwd)",
        'sig = "at least %d" % (atleast,)',
        'docker run -p"8080:80" nginx',
        "ssh -p'22' host",
        "if token == '.':",
        '{"url": "https://x.example/?token=abc123", "next": "keep"}',
        'print("password: " + password)',
    ],
)
def test_placeholders_and_code_around_quotes_are_kept(text: str) -> None:
    """Quoted templates, placeholders, empty values and ports stay as written; a value that
    ends at a quote belonging to the code around it does not take that code."""
    out = mask_secrets(text)
    if "token=abc123" in text:
        assert out == text.replace("abc123", MASK)
    else:
        assert out == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A JSON string's closing quote after a quoted value is no new part of it.
        ('{"env": "TOKEN=\'s3cret1\'", "n": 1}', f'{{"env": "TOKEN=\'{MASK}\'", "n": 1}}'),
        # An unclosed quote stops at a quote of the other kind that ends a string.
        ('["PASSWORD=\'s3cret1", "next"]', f'["PASSWORD=\'{MASK}", "next"]'),
        ("{'cmd': 'password: \"s3cret1', 'k': 1}", f"{{'cmd': 'password: \"{MASK}', 'k': 1}}"),
    ],
)  # fmt: skip
def test_a_quoted_value_ends_before_the_string_around_it(text: str, expected: str) -> None:
    """Tries: a quoted value inside a JSON string or a Python literal, closed or not; the
    strings around it must keep their quotes."""
    assert mask_secrets(text) == expected


def test_redact_value_masks_each_quoted_value_whole() -> None:
    """The structured walk masks every string with the same reading."""
    value = {"lines": [case.text for case in CASES]}
    out = json.dumps(redact_value(value))
    for case in CASES:
        assert case.tail not in out


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_masking_is_idempotent(case: Case) -> None:
    once = redact_text(case.text)
    assert redact_text(once) == once
