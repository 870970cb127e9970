"""A credential value in JSON text is masked whole, quotes and escapes and all (ADR 0035).

Red-team of the fix for the leak ``test_escaped_quote_in_value.py`` pinned: the catalogue reads
an escaped quote as the end of a value (``print(\\"token=EOF\\")`` must stay as written), so in
``{"password": "hunter2\\"TAIL"}`` only ``hunter2`` was masked and ``TAIL`` was stored. JSON
text is now read as JSON first: the value of a member under a credential name is masked over
its whole string, at any depth of JSON strings nested in the text.

Each test tries one way to get the part after the quote stored, or to make the stored text
stop being JSON: quotes at several depths, backslash runs before them, ``\\u0022`` quotes, a
credential name written with escapes, duplicate names, JSON Lines and cut JSON, numbers, and
text that is almost JSON (which keeps the catalogue's reading). Where the input is JSON, the
expected output is the same document with the value replaced by the mask and written with the
same escapes at every depth: every other character is kept as written.
"""

from __future__ import annotations

import json

import pytest

from nr_llm_core.redaction import mask_secrets, redact_text

TAIL = "TAILSECRETzq"
MASK = "[REDACTED:credential-value]"
DEPTHS = [0, 1, 2, 3, 5]


def _string(text: str, quote: str = '\\"') -> str:
    """``text`` as a JSON string, each quote in it written as ``quote`` (``\\"`` or
    ``\\u0022``), each backslash as ``\\\\``, each control character as ``\\u00XX``."""
    out = []
    for c in text:
        if c == '"':
            out.append(quote)
        elif c == "\\":
            out.append("\\\\")
        elif ord(c) < 0x20:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def _nest(text: str, depth: int, quote: str = '\\"') -> str:
    for _ in range(depth):
        text = _string(text, quote)
    return text


def _document(password: str, *, quote: str = '\\"') -> str:
    """JSON text with the password between two ordinary members (one with quotes of its own),
    the password's quotes written as ``quote``."""
    return (
        '{"user": "ann", "password": '
        + _string(password, quote)
        + ', "note": "say \\"hi\\" \\\\ bye"}'
    )


def _expected(depth: int, quote: str = '\\"') -> str:
    return _nest(_document(MASK), depth, quote)


def _parsed(text: str, depth: int) -> object:
    value: object = text
    for _ in range(depth + 1):
        assert isinstance(value, str), value
        value = json.loads(value)
    return value


PASSWORDS = [
    f'hunter2"{TAIL}',
    f'"{TAIL}',
    f'{TAIL}"',
    f'hunter2\\"{TAIL}',
    f'hunter2\\\\"{TAIL}',
    "hunter2" + "\\" * 7 + '"' + TAIL,
    f'a"b"c"{TAIL}',
    f'hunter2 "{TAIL}" more words',
    f'hunter2", "user": "{TAIL}',
    f'hunter2\n"{TAIL}',
]


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("password", PASSWORDS)
def test_a_value_with_quotes_is_masked_whole_at_every_depth(password: str, depth: int) -> None:
    """Tries: quotes (and runs of backslashes before them) anywhere in a password, in JSON text
    quoted as a JSON string 0-5 times more; nothing of the password may be stored, and the
    stored text is the same JSON at every depth with the mask for the value."""
    text = _nest(_document(password), depth)
    stored = redact_text(text)
    assert TAIL not in stored
    assert stored == _expected(depth)
    assert _parsed(stored, depth) == {"user": "ann", "password": MASK, "note": 'say "hi" \\ bye'}


@pytest.mark.parametrize("depth", [0, 1, 2])
@pytest.mark.parametrize("value_quote", ["\\u0022", "\\u005c\\u0022", '\\"'])
@pytest.mark.parametrize("nest_quote", ["\\u0022", '\\"'])
def test_quotes_written_as_unicode_escapes(value_quote: str, nest_quote: str, depth: int) -> None:
    """Tries: the quote inside the value written as ``\\u0022`` (and a backslash as
    ``\\u005c``), and the quotes of every enclosing JSON string written as ``\\u0022`` too."""
    document = (
        '{"user": "ann", "password": "hunter2'
        + value_quote
        + TAIL
        + '", "note": "say \\"hi\\" \\\\ bye"}'
    )
    stored = redact_text(_nest(document, depth, nest_quote))
    assert TAIL not in stored
    assert stored == _expected(depth, nest_quote)


@pytest.mark.parametrize("depth", [0, 1, 2])
@pytest.mark.parametrize(
    "name",
    [
        "pass\\u0077ord",
        "\\u0070assword",
        "PASS\\u0057ORD",
        "db\\u005fpassword",
        "api\\u005Fkey",
        "to\\u006ben",
        "\\u0063lient_secret",
        "X-Api\\u002dKey",
    ],
)
def test_a_credential_name_written_with_escapes(name: str, depth: int) -> None:
    """Tries: the member's name spelled with ``\\u`` escapes, so that no shape reads it as
    written; the name is read as JSON reads it."""
    document = '{"' + name + '": ' + _string(f'hunter2"{TAIL}') + ', "user": "ann"}'
    stored = redact_text(_nest(document, depth))
    assert TAIL not in stored
    assert stored == _nest('{"' + name + '": "' + MASK + '", "user": "ann"}', depth)


@pytest.mark.parametrize(
    "name",
    [
        "password",
        "passwd",
        "pwd",
        "secret",
        "client_secret",
        "token",
        "access_token",
        "refreshToken",
        "api_key",
        "apiKey",
        "X-Api-Key",
        "Authorization",
        "Cookie",
        "PGPASSWORD",
        "spring.datasource.password",
        "aws_secret_access_key",
        "private_key",
        "credentials",
        "signature",
    ],
)
def test_every_credential_name_masks_its_whole_value(name: str) -> None:
    """Tries: each kind of name the catalogue or the structured-value walk treats as a
    credential, with a value holding spaces, a quote, a semicolon and an ``=`` (where the
    shapes that read such names stop)."""
    value = f'Bearer ab12; x=y "{TAIL}" end'
    stored = redact_text(json.dumps({name: value, "user": "ann"}))
    assert TAIL not in stored
    assert json.loads(stored) == {name: MASK, "user": "ann"}


@pytest.mark.parametrize(
    "document",
    [
        {"password": "${DB_PASSWORD}"},
        {"password": "<your password>"},
        {"password": "****"},
        {"password": ""},
        {"password": "x"},
        {"password": None},
        {"password": True},
        {"token": 12},
        {"signature": "sha256"},
        {"max_tokens": 500, "tokenizer": 'bpe "fast"', "password_hint": 'a "b" c'},
        {"note": 'say "hi" to token=EOF \\" here'},
        {"src": 'print("shlex: token=EOF")', "env": "PWD=/home/ann"},
        {"password": MASK},
    ],
)
def test_what_is_not_a_secret_is_kept_as_written(document: dict[str, object]) -> None:
    """Tries: placeholders, empty and one-character values, literals, small numbers, short
    signatures and names that only contain a credential word; none is masked."""
    for depth in (0, 1, 2):
        text = _nest(json.dumps(document), depth)
        assert redact_text(text) == text


@pytest.mark.parametrize("depth", [0, 1, 2])
@pytest.mark.parametrize("number", ["12345678", "-98765.4321e-7", "4111111111111111"])
def test_a_number_under_a_credential_name_becomes_the_masked_string(
    number: str, depth: int
) -> None:
    """Tries: a password that is a JSON number (the shape masked ``12345678}`` and the text
    stopped being JSON); it is replaced by the mask as a JSON string, at every depth."""
    document = '{"password": ' + number + ', "user": "ann"}'
    stored = redact_text(_nest(document, depth))
    assert number not in stored
    assert stored == _nest('{"password": "' + MASK + '", "user": "ann"}', depth)


def test_every_member_of_a_repeated_name_is_masked() -> None:
    """Tries: the name twice in one object (a parser into a dict keeps only the last); each
    value is masked."""
    text = '{"password": "a\\"FIRST' + TAIL + '", "password": "b\\"SECOND' + TAIL + '"}'
    stored = redact_text(text)
    assert TAIL not in stored
    assert stored == '{"password": "' + MASK + '", "password": "' + MASK + '"}'


@pytest.mark.parametrize(
    "document",
    [
        [{"a": [{"password": f'x"{TAIL}'}]}],
        {"outer": {"inner": {"client_secret": f'x"{TAIL}'}}},
        {"body": json.dumps({"password": f'x"{TAIL}'})},
        {"calls": [{"arguments": json.dumps({"url": json.dumps({"token": f'x"{TAIL}'})})}]},
        [json.dumps([json.dumps({"api_key": f'x"{TAIL}'})])],
    ],
    ids=["list-of-dicts", "nested-dicts", "json-in-a-value", "json-in-json-in-a-list", "strings"],
)
def test_a_member_deep_in_containers_and_strings(document: object) -> None:
    """Tries: the member in lists of dicts, and in JSON text held in a string value (as tool
    call arguments are), nested again; the stored text stays the same JSON."""
    stored = redact_text(json.dumps(document))
    assert TAIL not in stored
    json.loads(stored)


@pytest.mark.parametrize(
    "text",
    [
        '{"password": "a\\"' + TAIL + '1"}\n{"password": "b\\"' + TAIL + '2"}\n',
        '{"user": "ann", "password": "a\\"' + TAIL + '", "note": "cut here',
        '{"user": "ann", "password": "a\\"' + TAIL,
        '{"user": "ann", "password": "a\\"' + TAIL + "\\",
        '{"user": "ann", "password": "a\\"' + TAIL + "\\u00",
        '{"password": "a\\"' + TAIL + '"} and then some text',
        '{"password": "a\\"' + TAIL + '",}',
        '{"password": "a\\"' + TAIL + "\", 'user': 1}",
        '{"password": "a\\"' + TAIL + '\tand a tab"}',
        '{"k": "{\\"password\\": \\"a\\\\\\"' + TAIL,
    ],
    ids=[
        "json-lines",
        "cut-after-the-value",
        "cut-inside-the-value",
        "cut-after-a-backslash",
        "cut-inside-a-u-escape",
        "text-after-the-document",
        "trailing-comma",
        "single-quotes-after",
        "raw-tab-in-the-value",
        "cut-inside-a-json-string",
    ],
)
def test_json_cut_short_or_followed_by_more(text: str) -> None:
    """Tries: JSON Lines, a document cut by a cap (after the value, inside it, inside an
    escape, inside a JSON string that holds the document), one followed by other text or by
    an error; what was read as JSON before the cut or the error is masked as JSON."""
    stored = redact_text(text)
    assert TAIL not in stored
    assert MASK in stored


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ('print(\\"token=EOF\\")', 'print(\\"token=EOF\\")'),
        (
            "{'password': 'hunter2\\'" + TAIL + "'}",
            "{'password': '" + MASK + "'}",  # read whole since ADR 0040
        ),
        (
            'password: "hunter2\\"' + TAIL + '"',
            'password: "' + MASK + '"',  # read whole since ADR 0040
        ),
        (
            'export PASSWORD="hunter2\\"' + TAIL + '"',
            'export PASSWORD="' + MASK + '"',  # read whole since ADR 0040
        ),
        ('{"password" "hunter2\\"' + TAIL + '"}', '{"password" "hunter2\\"' + TAIL + '"}'),
        ('{"password": "hunter2\\q' + TAIL + '"}', '{"password": "' + MASK + '"}'),
        ('["password", "hunter2\\"' + TAIL + '"]', '["password", "hunter2\\"' + TAIL + '"]'),
    ],
    ids=[
        "source-text",
        "python-literal",
        "yaml",
        "shell",
        "no-colon",
        "invalid-escape",
        "a-name-that-is-no-member",
    ],
)
def test_text_that_is_not_json_keeps_the_catalogue_reading(text: str, stored: str) -> None:
    """Tries: text that is almost JSON (single quotes, a missing colon, an invalid escape, a
    credential word as an array element) or not JSON at all; each is stored as the catalogue
    alone stores it: a quoted value after a name is read to its real end as YAML, the shell
    and Python write it (ADR 0040), and an escaped quote ends an unquoted value."""
    assert redact_text(text) == stored


def test_json_after_other_text() -> None:
    """Tries: JSON that starts after other text on the same string (a log line's prefix);
    out of scope until the red team of ADR 0035 (``test_json_members_redteam.py``), now read
    from where it starts."""
    stored = redact_text('response: {"password": "hunter2\\"' + TAIL + '"}')
    assert stored == 'response: {"password": "' + MASK + '"}'


@pytest.mark.parametrize("depth", [0, 1, 2])
def test_masking_twice_changes_nothing(depth: int) -> None:
    """Idempotent: the stored text is masked again to itself."""
    for password in PASSWORDS:
        once = redact_text(_nest(_document(password), depth))
        assert redact_text(once) == once
        assert mask_secrets(once) == once


def test_the_cap_falls_after_the_whole_value_is_masked() -> None:
    """Tries: a long document cut at 2,000 characters right inside the password's tail; the
    whole value was masked before the cut."""
    document = json.dumps({"filler": "x" * 1960, "password": f'hunter2"{TAIL}' * 10})
    stored = redact_text(document)
    assert TAIL not in stored
    assert stored.endswith("… [truncated]")
