"""The reader of JSON text (``nr_llm_core/_json_members.py``, ADR 0035) on generated documents.

Documents of nested objects and arrays (under credential names too, where every string and
number inside is judged under that name), with names drawn from credential names and from
anything, and string values holding quotes, backslashes, control characters, astral
characters and lone surrogates, are written by ``json.dumps`` (ASCII-only or not) and quoted
as a JSON string 0-3 times more. The reader must return exactly the text ``json.dumps`` writes
for the same document with each chosen value replaced by the mask, quoted the same way: the
same JSON at every depth, every other character as written, and the way back from a nested
string's content to the characters it was written with exact for every character.
"""

from __future__ import annotations

import json

from hypothesis import example, given
from hypothesis import strategies as st

from nr_llm_core._json_members import mask_members
from nr_llm_core.redaction import _is_credential_member, _member_mask, mask_secrets

MASK = "[REDACTED:credential-value]"

_NAMES = st.sampled_from(
    ["password", "pass\u0077ord", "api_key", "X-Api-Key", "token", "max_tokens", "sig", "note"]
)
# Any character, surrogates included; a value starts with a letter so that it is never JSON
# text itself (the reader reads a string with a brace, a bracket or a quote one level down,
# tests/redaction/test_json_members.py; twelve characters hold no credential member).
_CHARS = st.characters(codec=None, exclude_categories=())
_STRINGS = st.builds(lambda s: "v" + s, st.text(_CHARS, max_size=12))
_SCALARS = st.one_of(
    _STRINGS,
    st.integers(min_value=-(10**12), max_value=10**12),
    st.booleans(),
    st.none(),
)
_DOCUMENTS = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(_NAMES, st.text(_CHARS, max_size=8)), inner, max_size=4),
    ),
    max_leaves=12,
)


def _masked(value: object, under: str | None = None, member: str | None = None) -> object:
    """``value`` with each string and number the redactor's judge masks as its mask: a string
    under a credential name (the member's own, or the one whose array or object ``value`` is
    inside), a number under one or under its member's name (``member``)."""
    if isinstance(value, list):
        return [_masked(item, under) for item in value]
    if isinstance(value, dict):
        return {
            name: _masked(item, name if _is_credential_member(name) else under, name)
            for name, item in value.items()
        }
    if isinstance(value, str) and under is not None:
        return _member_mask(under, value, True, True) or value
    if isinstance(value, int) and type(value) is not bool:
        if under is not None:
            return _member_mask(under, str(value), False, True) or value
        return _member_mask(member, str(value), False, False) or value
    return value


@given(_DOCUMENTS, st.booleans(), st.integers(min_value=0, max_value=3))
def test_the_masked_text_is_the_same_json_with_the_mask_where_each_value_was(
    document: object, ascii_only: bool, depth: int
) -> None:
    def write(value: object) -> str:
        text = json.dumps(value, ensure_ascii=ascii_only)
        for _ in range(depth):
            text = json.dumps(text, ensure_ascii=ascii_only)
        return text

    assert mask_members(write(document), _is_credential_member, _member_mask) == write(
        _masked(document)
    )


# JSON's punctuation, escapes and a credential name's letters, often: almost-JSON text.
_ALMOST_JSON = st.lists(
    st.one_of(st.sampled_from([*'{}[]":,\\ 0-1e.', "\\u0022", "password", "true"]), _CHARS),
    max_size=40,
).map("".join)


@given(_ALMOST_JSON, st.integers(min_value=0, max_value=3))
def test_any_text_is_left_alone_or_changed_only_by_masks(text: str, depth: int) -> None:
    """Anything, JSON, almost JSON or not: the reader never raises, what it returns differs
    from its input only by masks, and reading that again changes nothing."""
    for _ in range(depth):
        text = json.dumps(text)
    out = mask_members(text, _is_credential_member, _member_mask)
    assert out == text or "[REDACTED:" in out
    assert mask_members(out, _is_credential_member, _member_mask) == out


# The whole redactor (the reader, then the catalogue as written and as read) on documents of
# the values that broke JSON before the red team of ADR 0035: numbers the catalogue masks in
# place, URLs and userinfo in neighbouring strings, quotes and brackets in values, names
# the catalogue reads at their end.
_TRICKY_NAMES = st.sampled_from(
    ["password", "my pwd", "a/pwd", "token", "SharedSecretValue", "set-cookie", "note", "u", "e"]
)
_TRICKY_SCALARS = st.one_of(
    st.sampled_from(
        [
            *(1.5, -5, 1e3, 12, 4111111111111111, -4111111111111111, 12345678901234567890123),
            *("http://a", "b:c@d", 'x"y', "]}", "4111 1111 1111 1111", "Bearer abcdef123456"),
        ]
    ),
    st.booleans(),
    st.none(),
)
_TRICKY_DOCUMENTS = st.one_of(
    # Flat: neighbours in one array or object, where a shape could read from one into the next.
    st.lists(_TRICKY_SCALARS, min_size=2, max_size=6),
    st.dictionaries(_TRICKY_NAMES, _TRICKY_SCALARS, min_size=2, max_size=6),
    st.recursive(
        _TRICKY_SCALARS,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(_TRICKY_NAMES, inner, max_size=4)
        ),
        max_leaves=10,
    ).filter(lambda d: isinstance(d, (list, dict))),
)


def _outline(value: object) -> object:
    """A parsed document without its strings and numbers (names kept as pairs, in order)."""
    if isinstance(value, list):
        return [_outline(item) for item in value]
    if isinstance(value, tuple):
        return ("object", [_outline(item) for _, item in value[1]])
    return None


def _pairs(pairs: list[tuple[str, object]]) -> tuple[str, list[tuple[str, object]]]:
    return ("object", pairs)


@example(["http://a", "b:c@d"], (",", ":"), "", 1)  # a shape that read across two strings
@example({"password": 1.5, "u": 1}, (", ", ": "), "response: ", 0)  # a mask that took a "}"
@given(
    _TRICKY_DOCUMENTS,
    st.sampled_from([(",", ":"), (", ", ": ")]),
    st.sampled_from(["", "\ufeff", "response: ", "HTTP/1.1 200 OK\r\n\r\n"]),
    st.integers(min_value=0, max_value=2),
)
def test_the_whole_redactor_keeps_every_document_the_same_json(
    document: object, separators: tuple[str, str], before: str, depth: int
) -> None:
    """Whatever it masks, the redactor leaves each document the same JSON: every array and
    object with as many items as it had, after whatever came before it, at every depth; and
    masking again changes nothing."""
    text = before + json.dumps(document, separators=separators)
    for _ in range(depth):
        text = json.dumps(text)
    stored = mask_secrets(text)
    value: object = stored
    for _ in range(depth):
        assert isinstance(value, str)
        value = json.loads(value)
    assert isinstance(value, str) and value.startswith(before)
    parsed = json.loads(value[len(before) :], object_pairs_hook=_pairs)
    assert _outline(parsed) == _outline(json.loads(json.dumps(document), object_pairs_hook=_pairs))
    assert mask_secrets(stored) == stored
