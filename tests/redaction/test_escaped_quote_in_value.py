"""A credential whose value holds a quote, in JSON text: red-team of ADR 0034 (REDACTED reads
encoded text).

JSON writes a quote inside a string as ``\\"``. The ``credential-value`` shape took the
backslash of that escape as the value's last character and stopped at the quote, so the mask
ate the backslash: ``{"password": "hunter2\\"TAIL"}`` was stored as
``{"password": "[REDACTED:credential-value]"TAIL"}``, which is no longer JSON (the quote left
behind ends the string early, and the text after it breaks the document).

The catalogue reads an escaped quote as a quote (it ends a value: ``print(\\"token=EOF\\")``
must stay as written), so the part of a value after a quote inside it was stored. JSON text is
now read as JSON first, and a credential's value is masked whole (ADR 0035;
``test_json_members.py`` tries to break it).
"""

from __future__ import annotations

import json

import pytest

from nr_llm_core.redaction import redact_text

TAIL = "TAILSECRETzq"
VALUES = [f'hunter2"{TAIL}', f'hunter2\\"{TAIL}', f'a\\\\b"{TAIL}', "abc\\", "abc\\\\"]


def _loads(text: str, depth: int) -> object:
    for _ in range(depth):
        text = json.loads(text)
    return json.loads(text)


@pytest.mark.parametrize("depth", [0, 1, 2])
@pytest.mark.parametrize("value", VALUES)
def test_masking_a_value_in_json_text_leaves_json_text(value: str, depth: int) -> None:
    """Tries: a password with a quote or a backslash in it, in one JSON document, quoted as a
    JSON string 0-2 times more; the stored text must still be JSON at every depth, the same
    document but for the password, whose start is masked."""
    text = json.dumps({"password": value, "user": "bob"})
    for _ in range(depth):
        text = json.dumps(text)
    stored = _loads(redact_text(text), depth)
    assert isinstance(stored, dict)
    assert stored["user"] == "bob"
    assert set(stored) == {"password", "user"}
    assert stored["password"].startswith("[REDACTED:credential-value]")
    assert "hunter2" not in json.dumps(stored)


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize(
    "value",
    ['Zq8s3cretV\\"y', "a=token=Zq8s3cretV\\", 'https://e.example/?a=1&token=Zq8s3cretV%5C\\"y'],
)
def test_masking_a_value_before_an_escaped_quote_leaves_json_text(value: str, depth: int) -> None:
    """Tries: a credential (``token=``, also in a query after ``&``) inside a string value,
    right before a backslash run that escapes a quote one level or more down; the mask must
    take that run whole or leave it whole."""
    document = {"k": f"see token={value} end", "z": "keep"}
    text = json.dumps(document)
    for _ in range(depth):
        text = json.dumps(text)
    stored = _loads(redact_text(text), depth)
    assert isinstance(stored, dict)
    assert stored["z"] == "keep"
    assert "[REDACTED:credential-value]" in stored["k"]


@pytest.mark.parametrize("depth", [0, 1, 2])
def test_a_quote_inside_a_value_is_masked_with_the_value(depth: int) -> None:
    """Tries: a password with a quote in it, in JSON text quoted as a JSON string 0-2 times
    more; the part after the quote must not be stored."""
    text = json.dumps({"password": f'hunter2"{TAIL}'})
    for _ in range(depth):
        text = json.dumps(text)
    assert TAIL not in redact_text(text)


@pytest.mark.parametrize("depth", [0, 1, 2])
@pytest.mark.parametrize(
    "header",
    [
        'Cookie: sessionid=38afes7a8"; csrftoken=Wk5c3PL0"',
        'Set-Cookie: id=a3fWa"tail; Expires=Thu, 21 Oct 2021 07:28:00 GMT',
        'Cookie: a=b\\"c',
    ],
)
def test_masking_a_cookie_before_an_escaped_quote_leaves_json_text(header: str, depth: int) -> None:
    """Tries: a cookie value right before a quote, in a string of JSON text quoted 0-2 times
    more; the cookie shape read the backslash that escapes the quote as part of the value and
    masked it, so the quote ended the string early. The value is masked, the text is JSON."""
    text = json.dumps({"k": header, "z": "keep"})
    for _ in range(depth):
        text = json.dumps(text)
    stored = _loads(redact_text(text), depth)
    assert isinstance(stored, dict)
    assert stored["z"] == "keep"
    assert "=[REDACTED:cookie]" in stored["k"]
    assert "38afes7a8" not in stored["k"] and "a3fWa" not in stored["k"]
