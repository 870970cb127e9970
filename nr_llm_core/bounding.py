"""Bounding: the host code that turns whatever a tool returned into a safe ``ToolResult``.

It knows nothing of pluggy. Every rule here runs after the plugin returned, outside any hook
call, on values read through the base types' own slots, so that no override a plugin defines
(``__str__``, ``__iter__``, ``items``, ``__len__``, ``__eq__``, a ``__class__`` property …) runs.

- Strings become valid UTF-8 (lone surrogates -> U+FFFD; split surrogate pairs rejoined).
- ``content`` is capped at :data:`MAX_CONTENT_BYTES` on a character boundary plus a marker.
- ``artifacts`` go through an iterative canonicalising walk to plain JSON values, charged against
  a byte budget as the walk goes, which also counts the exact size of the copy's encoding with
  the shared encoder (nothing is encoded here: a sink encodes once, when it writes); any failure
  replaces the whole list with one ``Artifacts omitted`` TEXT artifact.

The limits and the readers live in :mod:`nr_llm_core._bounds`; a long list is walked a column
at a time by :mod:`nr_llm_core._bounding_levels`.
"""

from __future__ import annotations

import enum
import math
import operator
from collections.abc import Iterator
from functools import reduce
from typing import Any, Final

from nr_llm_core._bounding_levels import _walk_columns
from nr_llm_core._bounds import (
    _ARTIFACT_OBJECT,
    _CONTENT_CUT,
    _MAX_ARTIFACTS,
    _TOO_LARGE,
    _UNENCODABLE,
    ARTIFACTS_OMITTED_LABEL,
    INT_MAX,
    INT_MIN,
    MAX_ARTIFACT_BYTES,
    MAX_ARTIFACT_DEPTH,
    MAX_CONTENT_BYTES,
    REASON_TOO_LARGE,
    REASON_UNENCODABLE,
    TRUNCATION_MARKER,
    _dict_charge,
    _Refused,
    all_of,
    coerce_utf8,
    read_key,
    read_str,
)
from nr_llm_core.results import Artifact, ArtifactType, ToolResult

__all__ = [
    "ARTIFACTS_OMITTED_LABEL",
    "INT_MAX",
    "INT_MIN",
    "MAX_ARTIFACT_BYTES",
    "MAX_ARTIFACT_DEPTH",
    "MAX_CONTENT_BYTES",
    "REASON_TOO_LARGE",
    "REASON_UNENCODABLE",
    "TRUNCATION_MARKER",
    "bound_artifacts",
    "bound_content",
    "bound_result",
    "coerce_utf8",
    "read_str",
]


def bound_content(content: str) -> str:
    """Cap ``content`` (an exact ``str``) at 50,000 UTF-8 bytes, valid UTF-8 throughout.

    Over the cap it is cut on a character boundary at 49,958 bytes and the 42-byte
    :data:`TRUNCATION_MARKER` is appended. Only the first 50,000 code units are ever copied:
    every code unit is at least one byte, so a longer string is over the cap.
    """
    over = len(content) > MAX_CONTENT_BYTES
    head = coerce_utf8(content[:MAX_CONTENT_BYTES])  # the string itself when it is short
    if head.isascii():  # one byte per character
        if not over:
            return head
        return head[:_CONTENT_CUT] + TRUNCATION_MARKER
    raw = head.encode()
    if not over and len(raw) <= MAX_CONTENT_BYTES:
        return head
    return raw[:_CONTENT_CUT].decode(errors="ignore") + TRUNCATION_MARKER


def omitted(reason: str) -> tuple[Artifact, ...]:
    """The single marker artifact that replaces a list that failed bounding."""
    return (Artifact(ArtifactType.TEXT, ARTIFACTS_OMITTED_LABEL, {"text": reason}),)


def bound_artifacts(artifacts: tuple[Artifact, ...]) -> tuple[Artifact, ...]:
    """Canonicalise and bound an exact tuple of exact :class:`Artifact` values.

    Returns new artifacts holding plain JSON copies, or the ``Artifacts omitted`` marker.
    """
    if not artifacts:
        return ()
    try:
        canonical, _ = _canonical_artifacts(artifacts)
    except _Refused as refused:
        return omitted(refused.reason)
    except Exception:
        # Anything unforeseen (a dict resized by another thread mid-walk …) fails closed.
        return omitted(REASON_UNENCODABLE)
    return canonical


def bound_result(value: object) -> ToolResult | None:
    """Rebuild a new, bounded :class:`ToolResult` from what a tool returned.

    ``None`` means the value is not a valid result (not a ``ToolResult``, or one whose fields
    were forced to the wrong types): the seam turns that into an invalid-result error.
    """
    if type(value) is not ToolResult:
        return None
    try:
        fields = value._fields
    except AttributeError:  # the slot left empty by object.__new__
        return None
    if type(fields) is not tuple or len(fields) != 3:
        return None
    raw_content, is_error, artifacts = fields
    # Short ASCII text, exactly a str (the common case): what read_str and bound_content would
    # return unchanged, taken as it is.
    exact = type(raw_content) is str
    if exact and len(raw_content) <= _SHORT and raw_content.isascii():  # pragma: no mutate
        content = raw_content
    else:
        # One character more than the cap tells bound_content that the content is over it.
        text = read_str(raw_content, MAX_CONTENT_BYTES + 1)
        if text is None:
            return None
        content = bound_content(text)
    if type(is_error) is not bool or type(artifacts) is not tuple:
        return None
    bounded: tuple[Artifact, ...] = ()
    if artifacts and not is_error:
        if len(artifacts) > _MAX_ARTIFACTS:  # refused before any is looked at
            bounded = omitted(REASON_TOO_LARGE)
        elif any(type(a) is not Artifact for a in artifacts):
            return None
        else:
            bounded = bound_artifacts(artifacts)
    return ToolResult._build(content, is_error, bounded)


_SHORT: Final = MAX_CONTENT_BYTES  # ASCII text this long is within the cap


# -- the walk ---------------------------------------------------------------------------------
#
# The walk charges the byte budget with the exact size of its copy's encoding (compact, UTF-8,
# as `encode_json` writes it) as it goes, before anything is copied, so that nothing needs
# encoding to be measured. A container charges its brackets and one byte and a comma per item
# up front (every JSON value is at least one byte); an item then charges what it adds: a number
# the rest of its repr (the encoder's own), `true`/`false`/`null` the rest of their letters, a
# string its quote and one byte per code point. What only the whole text can tell (bytes beyond
# one per code point, escapes) is added once at the end, from the text the walk kept of every
# string and key. A property test holds the total to ``len(encode_json(...))`` for any value.


def _canonical_artifacts(artifacts: tuple[Artifact, ...]) -> tuple[tuple[Artifact, ...], int]:
    """The canonical copies, and the exact size of their encoding (as a list of dicts)."""
    budget = MAX_ARTIFACT_BYTES - 1 - len(artifacts)  # brackets and commas
    texts: list[str] = []
    out = []
    for artifact in artifacts:
        kind = artifact.type
        if type(kind) is not ArtifactType:
            raise _UNENCODABLE
        label = read_str(artifact.label, MAX_ARTIFACT_BYTES + 1)  # more cannot fit either
        if label is None:
            raise _UNENCODABLE
        # the data's first byte is charged here, as a container's items are
        budget -= _ARTIFACT_OBJECT + len(kind.value) + len(label) + 1
        # Before the label is copied. (At exactly 0 the data's closing brace still refuses it:
        # `< 1` would be the same check.)
        if budget < 0:  # pragma: no mutate
            raise _TOO_LARGE
        valid = coerce_utf8(label)
        budget += len(label) - len(valid)  # a rejoined surrogate pair is one code point
        label = valid
        if not issubclass(type(artifact.data), dict):  # an artifact's data is a JSON object
            raise _UNENCODABLE
        texts.append(label)
        data, budget = _walk(artifact.data, 3, budget, texts)
        out.append(Artifact(kind, label, data))
    budget -= _text_excess(texts)
    if budget < 0:
        raise _TOO_LARGE
    return tuple(out), MAX_ARTIFACT_BYTES - budget


def _text_excess(texts: list[str]) -> int:
    """What the encoding of ``texts`` (valid UTF-8 strings) takes beyond one byte per code
    point: the further bytes of multi-byte characters and the escapes the encoder writes,
    ``\\"`` and ``\\\\``, two bytes for five control characters and ``\\u00XX`` for the others."""
    text = "".join(texts)  # pragma: no mutate (any ASCII separator adds no excess)
    raw = text.encode()
    excess = len(raw) - len(text)
    for quoted in _QUOTED:
        if quoted in raw:  # a memchr: far cheaper than counting text that has none
            excess += raw.count(quoted)
    controls = len(raw) - len(raw.translate(None, _CONTROLS))
    if controls:
        short = sum(map(raw.count, _SHORT_ESCAPES))
        excess += short + 5 * (controls - short)
    return excess


_QUOTED: Final = (b'"', b"\\")
_CONTROLS: Final = bytes(range(0x20))
_SHORT_ESCAPES: Final = (b"\b", b"\t", b"\n", b"\f", b"\r")


def _walk(root: object, depth: int, budget: int, texts: list[str]) -> tuple[Any, int]:
    """Copy ``root`` (at nesting level ``depth``) into plain JSON values, iteratively.

    Returns the copy and what is left of the byte budget; the text of its strings and keys goes
    to ``texts``. Raises ``_Refused``.
    """
    holder: list[Any] = []
    keep = texts.append
    # A frame is (items still to copy, the container they go into, its level, is it a dict).
    stack: list[_Frame] = [(iter((root,)), holder, depth - 1, False)]
    while stack:
        items, into, level, is_dict = stack[-1]
        for item in items:
            if is_dict:
                raw_key, value = item
                if type(raw_key) is str and raw_key.isascii():  # what read_key would return
                    budget -= len(raw_key)
                    if budget < 0:
                        raise _TOO_LARGE
                    if raw_key in into:
                        raise _UNENCODABLE
                    key = raw_key
                else:
                    key, budget = read_key(raw_key, into, budget)
                keep(key)
            else:
                value = item
            t = type(value)
            child: _Frame | None = None
            if t is str:
                budget -= len(value) + 1
                if budget < 0:
                    raise _TOO_LARGE
                copied: Any = coerce_utf8(value)
                if copied is not value:  # a rejoined surrogate pair is one code point
                    budget += len(value) - len(copied)
                keep(copied)
            elif t is int:
                if not INT_MIN <= value <= INT_MAX:
                    raise _UNENCODABLE
                copied = value
                budget -= len(int.__repr__(value)) - 1
            elif t is float:
                if not math.isfinite(value):
                    raise _UNENCODABLE
                copied = value
                budget -= len(float.__repr__(value)) - 1
            elif t is bool or value is None:
                budget -= 4 if value is False else 3  # false, true, null
                copied = value
            elif t is list:
                if level >= MAX_ARTIFACT_DEPTH:
                    raise _UNENCODABLE
                if 2 * len(value) > budget:  # refuse before copying anything
                    raise _TOO_LARGE
                inner = level + 1
                copied, budget, rest = _copy_sequence(list(value), inner, budget, texts)
                if rest is not None:
                    child = (rest, copied, inner, False)
            elif t is dict:
                if level >= MAX_ARTIFACT_DEPTH:
                    raise _UNENCODABLE
                budget -= _dict_charge(len(value))
                if budget < 0:
                    raise _TOO_LARGE
                copied = {}
                child = (iter(list(value.items())), copied, level + 1, True)
            else:
                copied, budget, child = _walk_other(value, t, level, budget, texts)
            if budget < 0:
                raise _TOO_LARGE
            if is_dict:
                into[key] = copied
            else:
                into.append(copied)
            if child is not None:
                stack.append(child)
                break
        else:
            stack.pop()
    return holder[0], budget


_Frame = tuple[Iterator[Any], Any, int, bool]


def _copy_sequence(
    items: list[Any], level: int, budget: int, texts: list[str]
) -> tuple[list[Any], int, Iterator[Any] | None]:
    """Copy a list (already a shallow copy) at ``level``: flat lists of strings and lists of
    string lists (table rows) in one go, anything else by the walk.

    Returns the copy, the budget left, and the items still to walk (``None`` when done).
    """
    budget -= 2 * len(items) if items else 1  # `0,` per item, or `]` when empty
    if budget < 0:
        raise _TOO_LARGE
    first = type(items[0]) if items else None
    # The one type of all the items, if they have one (without the fast paths it chooses, the
    # walk makes the same copy):
    one = first if all_of(map(type, items), first) else None  # pragma: no mutate
    if one is str:
        strings, budget = _copy_strings(items, budget, texts)
        return strings, budget, None
    # Rows of strings (a table), unless the first row already says otherwise: then a long list
    # goes by columns without first copying every row to look at its cells.
    if one is list and level < MAX_ARTIFACT_DEPTH and all_of(map(type, items[0]), str):
        lengths = list(map(len, items))
        cells_total = sum(lengths)
        rows_charge = 2 * cells_total + lengths.count(0)  # as _copy_sequence charges each row
        budget -= rows_charge
        if budget < 0:
            raise _TOO_LARGE
        rows = list(map(list.copy, items))
        cells: list[Any] = reduce(operator.iadd, rows, [])
        if all_of(map(type, cells), str):  # pragma: no mutate (as above)
            strings, budget = _copy_strings(cells, budget, texts)
            if strings is not cells:  # some cell needed coercion: rebuild the rows
                it = iter(strings)
                rows = [[next(it) for _ in row] for row in rows]
            return rows, budget, None
        budget += rows_charge  # the walk charges the rows itself
    if len(items) >= _LONG_LIST:
        # A long list of anything else (rows of numbers, records …): read by columns, where
        # the Python work is per column rather than per value.
        copied, budget = _walk_columns(items, level, budget, texts, _walk)
        return copied, budget, None
    return [], budget, iter(items)


#: The shortest list that is read by columns: below it, the fixed cost of a column (a few
#: microseconds) is more than what reading the values together saves.
_LONG_LIST: Final = 32


def _copy_strings(items: list[str], budget: int, texts: list[str]) -> tuple[list[str], int]:
    """Copy a list of exact strings: each adds its quote, comma and characters (charged before
    anything is joined); their joined text goes to ``texts``."""
    size = sum(map(len, items))
    budget -= size + len(items)
    if budget < 0:
        raise _TOO_LARGE
    joined = "".join(items)  # pragma: no mutate (as in _text_excess)
    if not joined.isascii():
        try:
            joined.encode()
        except UnicodeEncodeError:
            items = [coerce_utf8(s) for s in items]
            budget += size - sum(map(len, items))  # a rejoined surrogate pair is one code point
            joined = "".join(items)  # pragma: no mutate (as in _text_excess)
    texts.append(joined)
    return items, budget


def _walk_other(
    value: Any, t: type, level: int, budget: int, texts: list[str]
) -> tuple[Any, int, _Frame | None]:
    """Read a tuple (as a list), or a subclass of a JSON type through its base type's slots;
    refuse everything else.

    Enums, and every type that is not a subclass of ``str``, ``int``, ``float``, ``dict``,
    ``list`` or ``tuple`` (bytes, sets, datetimes, dataclasses …), are refused. Charges what
    the walk charges for the base type.
    """
    if issubclass(t, enum.Enum):
        raise _UNENCODABLE
    if issubclass(t, str):
        size = str.__len__(value)
        budget -= size + 1
        if budget < 0:  # before anything is copied
            raise _TOO_LARGE
        text = coerce_utf8(str.__getitem__(value, slice(0, size)))
        texts.append(text)
        return text, budget + size - len(text), None
    if issubclass(t, int):
        if int.bit_length(value) > 64:  # refused before a huge one is copied
            raise _UNENCODABLE
        number = int.__index__(value)
        if not INT_MIN <= number <= INT_MAX:
            raise _UNENCODABLE
        return number, budget - len(int.__repr__(number)) + 1, None
    if issubclass(t, float):
        real = float.__float__(value)
        if not math.isfinite(real):
            raise _UNENCODABLE
        return real, budget - len(float.__repr__(real)) + 1, None
    if not issubclass(t, (dict, list, tuple)) or level >= MAX_ARTIFACT_DEPTH:
        raise _UNENCODABLE
    if issubclass(t, dict):
        budget -= _dict_charge(dict.__len__(value))
        if budget < 0:
            raise _TOO_LARGE
        mapping: dict[str, Any] = {}
        pairs: list[tuple[Any, Any]] = list(dict.items(value))
        return mapping, budget, (iter(pairs), mapping, level + 1, True)
    base: Any = list if issubclass(t, list) else tuple
    if 2 * base.__len__(value) > budget:
        raise _TOO_LARGE
    items = list(base.__iter__(value))
    inner = level + 1
    copied, budget, rest = _copy_sequence(items, inner, budget, texts)
    return copied, budget, None if rest is None else (rest, copied, inner, False)
