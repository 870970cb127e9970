"""A mask never breaks the JSON text it is put in: red-team of ADR 0034.

The email shape's left edge is a lookbehind on the characters of an address, and the ``n`` of
JSON's ``\\n`` is one: in ``{"k": "line\\nann@h.example"}`` the address was matched from that
``n``, the mask took it, and its backslash was left to escape the mask's ``[`` (``\\[`` is no
JSON escape): the stored text no longer parsed, at every depth of nesting.
"""

from __future__ import annotations

import json

import pytest

from nr_llm_core.redaction import redact_text


@pytest.mark.parametrize("depth", [0, 1, 2])
@pytest.mark.parametrize("separator", ["\n", "\t", "\r\n", "\u00e9"])
def test_an_address_after_an_escape_is_masked_and_the_json_still_parses(
    separator: str, depth: int
) -> None:
    """Tries: an email address right after a line break, tab or ``\\u`` escape in JSON text
    quoted 0-2 times more; the text must still parse, the address masked and the escape kept."""
    document = {"k": f"line{separator}ann@h.example end", "z": "keep"}
    text = json.dumps(document)
    for _ in range(depth):
        text = json.dumps(text)
    stored: object = redact_text(text)
    for _ in range(depth + 1):
        assert isinstance(stored, str)
        stored = json.loads(stored)
    assert stored == {"k": f"line{separator}[REDACTED:email] end", "z": "keep"}
