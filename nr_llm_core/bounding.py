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
"""

from __future__ import annotations

import enum
import json
import math
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import reduce
from itertools import chain, compress, repeat
from typing import Any, Final

import attrs

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

MAX_CONTENT_BYTES: Final = 50_000
MAX_ARTIFACT_BYTES: Final = 50_000
MAX_ARTIFACT_DEPTH: Final = 64

TRUNCATION_MARKER: Final = "\n…[tool result truncated at 50000 bytes]"
_CONTENT_CUT: Final = MAX_CONTENT_BYTES - len(TRUNCATION_MARKER.encode("utf-8"))  # 49,958

ARTIFACTS_OMITTED_LABEL: Final = "Artifacts omitted"
REASON_UNENCODABLE: Final = "could not be encoded"
REASON_TOO_LARGE: Final = "exceeded 50000 bytes"

#: Integers every sink can hold exactly: SQLite's INTEGER and any 64-bit JSON reader.
INT_MIN: Final = -(2**63)
INT_MAX: Final = 2**63 - 1

# `{"type":"…","label":"…","data":…}` without its three values, and the smallest artifact.
_ARTIFACT_OBJECT: Final = len('{"type":"","label":"","data":}')
_ARTIFACT_MIN: Final = _ARTIFACT_OBJECT + len("text") + len("{}")
#: The most artifacts a list within the limit can hold: each takes a comma, the list `[]`.
_MAX_ARTIFACTS: Final = (MAX_ARTIFACT_BYTES - 1) // (_ARTIFACT_MIN + 1)  # 1,351
_UTF16: Final = "utf-16-le"


class _Refused(Exception):
    reason: str = REASON_UNENCODABLE


# Raised as classes, so that every refusal is a fresh instance. A shared instance would keep
# each raise's traceback (Python chains a re-raised instance's tracebacks), and with it every
# refused value the walk's frames held: a leak of the hostile data itself.
class _TOO_LARGE(_Refused):  # named as the constant it replaces
    reason = REASON_TOO_LARGE


class _UNENCODABLE(_Refused):  # named as the constant it replaces
    reason = REASON_UNENCODABLE


def coerce_utf8(text: str) -> str:
    """Return ``text`` (an exact ``str``) as valid UTF-8 text.

    Lone surrogates become U+FFFD; a high surrogate followed by a low one (a pair split into two
    code units) is rejoined into the one character it encodes.
    """
    if text.isascii():
        return text
    try:
        text.encode()
    except UnicodeEncodeError:
        # UTF-16 is the encoding surrogates belong to: writing code units verbatim and reading
        # them back pairs what pairs and replaces what is alone. (Codec names are not
        # case-sensitive: mutation testing's upper-cased names are the same codec.)
        return text.encode(_UTF16, "surrogatepass").decode(_UTF16, "replace")  # pragma: no mutate
    return text


def read_str(value: object, limit: int | None = None) -> str | None:
    """The real characters of a ``str`` (or a ``str`` subclass, read through ``str`` itself),
    the first ``limit`` of them when a limit is given.

    Returns ``None`` for anything else, enums included. No method of ``value`` runs, and of a
    subclass at most ``limit`` characters are ever copied (``str.__str__`` of a subclass
    would copy it whole: a gigabyte before any size check).
    """
    if type(value) is str:
        return value if limit is None or len(value) <= limit else value[:limit]
    t = type(value)
    if not issubclass(t, str) or issubclass(t, enum.Enum):
        return None
    size = str.__len__(value)  # type: ignore[arg-type]
    if limit is not None and size > limit:
        size = limit
    # An exact str, of a whole subclass too (CPython copies it rather than return the object).
    return str.__getitem__(value, slice(0, size))  # type: ignore[index]


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
        label = coerce_utf8(label)
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
                key = read_str(raw_key, MAX_ARTIFACT_BYTES + 1)
                if key is None:
                    raise _UNENCODABLE
                budget -= len(key)
                if budget < 0:
                    raise _TOO_LARGE
                key = coerce_utf8(key)
                if key in into:
                    raise _UNENCODABLE
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


def _dict_charge(n: int) -> int:
    """What a dict of ``n`` entries adds up front: `"":0,` per entry, or `}` when empty."""
    return 5 * n if n else 1


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
    kinds = set(map(type, items))  # pragma: no mutate (without it, the walk does the same)
    if kinds == {str}:
        strings, budget = _copy_strings(items, budget, texts)
        return strings, budget, None
    # Rows of strings (a table), unless the first row already says otherwise: then a long list
    # goes by levels without first copying every row to look at its cells.
    if kinds == {list} and level < MAX_ARTIFACT_DEPTH and set(map(type, items[0])) <= {str}:
        lengths = list(map(len, items))
        cells_total = sum(lengths)
        rows_charge = 2 * cells_total + lengths.count(0)  # as _copy_sequence charges each row
        budget -= rows_charge
        if budget < 0:
            raise _TOO_LARGE
        rows = list(map(list.copy, items))
        cells: list[Any] = reduce(operator.iadd, rows, [])
        if list(map(type, cells)).count(str) == len(cells):  # pragma: no mutate (as above)
            strings, budget = _copy_strings(cells, budget, texts)
            if strings is not cells:  # some cell needed coercion: rebuild the rows
                it = iter(strings)
                rows = [[next(it) for _ in row] for row in rows]
            return rows, budget, None
        budget += rows_charge  # the walk charges the rows itself
    if len(items) >= _LONG_LIST:
        # A long list of anything else (rows of numbers, records …): read by levels, where
        # the Python work is per level and per column rather than per value. The walk by
        # levels charges the list itself again.
        budget += 2 * len(items)
        copied, budget = _walk_levels(items, level, budget, texts)
        return copied, budget, None
    return [], budget, iter(items)


#: The shortest list that is read by levels: below it, the fixed cost of a level (a few
#: microseconds) is more than what reading the values together saves.
_LONG_LIST: Final = 32


def _copy_strings(items: list[str], budget: int, texts: list[str]) -> tuple[list[str], int]:
    """Copy a list of exact strings: each adds its quote, comma and characters (charged before
    anything is joined); their joined text goes to ``texts``."""
    budget -= sum(map(len, items)) + len(items)
    if budget < 0:
        raise _TOO_LARGE
    joined = "".join(items)  # pragma: no mutate (as in _text_excess)
    if not joined.isascii():
        try:
            joined.encode()
        except UnicodeEncodeError:
            items = [coerce_utf8(s) for s in items]
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
        return text, budget, None
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


# -- the walk by levels, for long lists ---------------------------------------------------------


def _walk_levels(root: object, depth: int, budget: int, texts: list[str]) -> tuple[Any, int]:
    """Copy ``root`` (a container at nesting level ``depth``) into plain JSON values, as
    :func:`_walk` does.

    Returns the copy and what is left of the byte budget; the text of its strings and keys goes
    to ``texts``. Raises ``_Refused``. The walk goes level by level: every container of a level
    is charged before any is copied, and the values they hold are then read together, in a few
    passes in C over all of them (their types, the strings' lengths, the numbers' range and
    size), so that the Python work is per level and per nested container, not per scalar.
    """
    holder: list[Any] = [None]
    level = _Level([root], [holder], [0])
    while level.nodes:
        if depth > MAX_ARTIFACT_DEPTH:
            raise _UNENCODABLE
        level, budget = _copy_level(level, budget, texts)
        depth += 1
    return holder[0], budget


@attrs.define
class _Level:
    """Containers of one nesting level, and where each one's copy goes
    (``parents[i][keys[i]]``)."""

    nodes: list[Any] = attrs.field(factory=list)
    parents: list[Any] = attrs.field(factory=list)
    keys: list[Any] = attrs.field(factory=list)

    def add(self, node: Any, parent: Any, key: Any) -> None:
        self.nodes.append(node)
        self.parents.append(parent)
        self.keys.append(key)


@attrs.define
class _Copies:
    """The copies of one level's containers, and where each goes: ``lists``; ``dicts`` whose
    keys are all exact, valid strings (``keys``: all their keys, in order); ``odd`` dicts,
    filled entry by entry from ``pairs`` (a dict subclass, or keys to read one by one)."""

    lists: list[list[Any]] = attrs.field(factory=list)
    list_at: _Level = attrs.field(factory=_Level)
    dicts: list[dict[str, Any]] = attrs.field(factory=list)
    dict_at: _Level = attrs.field(factory=_Level)
    keys: list[str] = attrs.field(factory=list)
    odd: list[dict[str, Any]] = attrs.field(factory=list)
    odd_at: _Level = attrs.field(factory=_Level)
    pairs: list[list[tuple[Any, Any]]] = attrs.field(factory=list)

    def place(self) -> None:
        """Put every copy in its parent's copy (setitem over three lists, in C)."""
        any(map(operator.setitem, self.list_at.parents, self.list_at.keys, self.lists))
        any(map(operator.setitem, self.dict_at.parents, self.dict_at.keys, self.dicts))
        any(map(operator.setitem, self.odd_at.parents, self.odd_at.keys, self.odd))

    def values(self) -> list[Any]:
        """The values the copies hold: the lists' items, the dicts' values, the odd dicts'."""
        values: list[Any] = reduce(operator.iadd, self.lists, [])
        values += chain.from_iterable(map(dict.values, self.dicts))
        values += chain.from_iterable(map(dict.values, self.odd))
        return values

    def owners(self) -> tuple[Iterator[Any], Iterator[Any]]:
        """The parent copy and the key of each value of :meth:`values`, in its order (built
        in C: each copy repeated once per value it holds; a list's indexes, a dict's keys)."""
        list_lengths = list(map(len, self.lists))
        parents = chain(
            chain.from_iterable(map(repeat, self.lists, list_lengths)),
            chain.from_iterable(map(repeat, self.dicts, map(len, self.dicts))),
            chain.from_iterable(map(repeat, self.odd, map(len, self.odd))),
        )
        keys = chain(
            chain.from_iterable(map(range, list_lengths)),
            self.keys,
            chain.from_iterable(self.odd),
        )
        return parents, keys


#: The exact types of the values a level reads in bulk; every other value is read on its own.
_SCALAR_TYPES: Final = frozenset({str, int, float, bool, type(None)})
_CONTAINER_TYPES: Final = frozenset({list, dict})
_BULK_TYPES: Final = _SCALAR_TYPES | _CONTAINER_TYPES
#: Measures flat lists of exact ints, floats, bools and None (never anything else): the size of
#: a number is the length of what the encoder writes for it, and a NaN or an infinity is what
#: it refuses.
_NUMBERS: Final = json.JSONEncoder(allow_nan=False, check_circular=False, separators=(",", ":"))
_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)


def _not_measured(value: object) -> Any:
    raise TypeError  # pragma: no cover (only exact numbers, bools and None are measured)


if _c_make_encoder is not None:
    # The same C encoder, called without JSONEncoder.encode's per-call set-up (a level reads
    # a few columns of numbers each; no containers: nothing to guard against recursion).
    _measure = _c_make_encoder(
        None,
        _not_measured,
        json.encoder.encode_basestring_ascii,
        None,
        ":",
        ",",
        False,
        False,
        False,
    )

    def _written(numbers: Sequence[Any]) -> int:
        """How many characters the encoder writes for the list ``numbers``."""
        return sum(map(len, _measure(numbers, 0)))

else:  # pragma: no cover (CPython without its C accelerator)

    def _written(numbers: Sequence[Any]) -> int:
        """How many characters the encoder writes for the list ``numbers``."""
        return len(_NUMBERS.encode(numbers))


def _copy_level(level: _Level, budget: int, texts: list[str]) -> tuple[_Level, int]:
    """Charge and copy the containers of ``level``; charge and check the scalars they hold;
    return the containers they hold (the next level) and the budget left."""
    copies = _Copies()
    budget = _copy_containers(level, copies, budget, texts)
    copies.place()
    nested = _Level()
    rest = _Copies(odd=copies.odd)
    lists = copies.lists
    lengths = list(map(len, lists))
    if _is_table(lists, lengths):
        # Rows of one length: read column by column (slices of their items, in C), each
        # column usually of one type.
        width = lengths[0]
        items = list(chain.from_iterable(lists))
        for index in range(width):
            column = items[index::width]
            budget = _read_values(column, _column(lists, index), nested, budget, texts)
    else:
        rest.lists = lists
    dicts = copies.dicts
    lengths = list(map(len, dicts))
    width = lengths[0] if dicts else 0
    if _is_table(dicts, lengths) and copies.keys == copies.keys[:width] * len(dicts):
        # Records with the same keys in the same order: read key by key.
        items = list(chain.from_iterable(map(dict.values, dicts)))
        for index, key in enumerate(copies.keys[:width]):
            column = items[index::width]
            budget = _read_values(column, _column(dicts, key), nested, budget, texts)
    else:
        rest.dicts, rest.keys = dicts, copies.keys
    if rest.lists or rest.dicts or rest.odd:
        budget = _read_values(rest.values(), rest.owners, nested, budget, texts)
    return _read_others(nested, budget, texts)


#: The fewest containers of one shape that a level reads column by column.
_MIN_ROWS: Final = 16


def _is_table(containers: list[Any], lengths: list[int]) -> bool:
    """Whether ``containers`` (of one kind) are rows of one length, at least as many rows as
    columns: then a column's Python work is shared by enough values."""
    return (
        len(containers) >= _MIN_ROWS
        and 0 < lengths[0] <= len(containers)
        and lengths.count(lengths[0]) == len(lengths)
    )


_Owners = Callable[[], tuple[Iterable[Any], Iterable[Any]]]


def _column(parents: list[Any], key: Any) -> _Owners:
    """The owners of a column: every parent, each at ``key``."""
    return lambda: (parents, repeat(key, len(parents)))


def _masked(owners: _Owners, mask: list[bool]) -> _Owners:
    """The owners of the values ``mask`` selects."""

    def selected() -> tuple[Iterable[Any], Iterable[Any]]:
        parents, keys = owners()
        return compress(parents, mask), compress(keys, mask)

    return selected


def _read_values(
    values: Sequence[Any], owners: _Owners, nested: _Level, budget: int, texts: list[str]
) -> int:
    """Charge and check the exact scalars among ``values`` (each held by its parent copy at its
    key, as ``owners`` tells); every other value goes to ``nested``, the next level."""
    types = list(map(type, values))
    # One type (a column of a table, usually): counted, faster than a set of them all.
    kinds = {types[0]} if types and types.count(types[0]) == len(types) else set(types)
    if kinds <= _SCALAR_TYPES:
        return _charge_scalars(values, kinds, owners, budget, texts)
    parents, keys = owners()
    if len(kinds) == 1:  # one type, not a scalar one: all of them go on
        nested.nodes += values
        nested.parents += parents
        nested.keys += keys
        return budget
    nested_mask = list(map(operator.not_, map(_SCALAR_TYPES.__contains__, types)))
    nested.nodes += compress(values, nested_mask)
    nested.parents += compress(parents, nested_mask)
    nested.keys += compress(keys, nested_mask)
    kinds &= _SCALAR_TYPES
    if not kinds:
        return budget
    scalar_mask = list(map(operator.not_, nested_mask))
    scalars = list(compress(values, scalar_mask))
    return _charge_scalars(scalars, kinds, _masked(owners, scalar_mask), budget, texts)


def _copy_containers(level: _Level, copies: _Copies, budget: int, texts: list[str]) -> int:
    """Charge and copy each container of ``level`` into ``copies``; dict keys are charged and
    their text goes to ``texts``."""
    nodes = level.nodes
    types = list(map(type, nodes))
    kinds = set(types)
    lists: list[list[Any]] = []
    dicts: list[dict[Any, Any]] = []
    if kinds == {list}:
        lists, copies.list_at = nodes, level
    elif kinds == {dict}:
        dicts, copies.dict_at = nodes, level
    elif kinds == _CONTAINER_TYPES:  # rows holding both: split in C
        is_list = list(map(operator.is_, types, repeat(list)))
        is_dict = list(map(operator.not_, is_list))
        lists = list(compress(nodes, is_list))
        dicts = list(compress(nodes, is_dict))
        for at, mask in ((copies.list_at, is_list), (copies.dict_at, is_dict)):
            at.parents = list(compress(level.parents, mask))
            at.keys = list(compress(level.keys, mask))
    else:
        budget = _odd_nodes(level, copies, dicts, budget)
    if lists:
        # Refused before anything is copied; charged on the copies (another thread could
        # change a list in between: what is charged is what was copied).
        _charge_lists(lists, budget)
        copies.lists = list(map(list.copy, lists))
        budget = _charge_lists(copies.lists, budget)
    if dicts:
        budget = _plain_dicts(dicts, copies, budget, texts)
    for copy, pairs in zip(copies.odd, copies.pairs, strict=True):
        budget = _odd_dict(copy, pairs, budget, texts)
    return budget


def _odd_nodes(level: _Level, copies: _Copies, dicts: list[dict[Any, Any]], budget: int) -> int:
    """Sort a level holding tuples or subclasses, one container at a time: exact lists are
    charged and copied, exact dicts go to ``dicts``; a dict subclass is charged and its
    entries read through ``dict``; a tuple, or a list or tuple subclass, has its items read
    through its base type once its length is charged."""
    for node, parent, key in zip(level.nodes, level.parents, level.keys, strict=True):
        t = type(node)
        if t is dict:
            dicts.append(node)
            copies.dict_at.add(node, parent, key)
            continue
        if issubclass(t, dict):
            budget -= _dict_charge(dict.__len__(node))
            if budget < 0:
                raise _TOO_LARGE
            copies.odd.append({})
            copies.pairs.append(list(dict.items(node)))
            copies.odd_at.add(node, parent, key)
            continue
        base: Any = list if issubclass(t, list) else tuple
        if 2 * base.__len__(node) > budget:  # refused before anything is read
            raise _TOO_LARGE
        items = list(base.__iter__(node))
        budget = _charge_lists([items], budget)
        copies.lists.append(items)
        copies.list_at.add(node, parent, key)
    return budget


def _charge_lists(lists: list[list[Any]], budget: int) -> int:
    """Charge lists before they are copied: `0,` per item, or `]` when empty."""
    lengths = list(map(len, lists))
    budget -= 2 * sum(lengths) + lengths.count(0)
    if budget < 0:
        raise _TOO_LARGE
    return budget


def _charge_dicts(dicts: list[dict[Any, Any]], budget: int) -> int:
    """Charge dicts: `"":0,` per entry, or `}` when empty (their keys' text is charged on its
    own)."""
    lengths = list(map(len, dicts))
    budget -= 5 * sum(lengths) + lengths.count(0)
    if budget < 0:
        raise _TOO_LARGE
    return budget


def _plain_dicts(
    dicts: list[dict[Any, Any]], copies: _Copies, budget: int, texts: list[str]
) -> int:
    """Charge exact dicts and their keys, and copy them. When their keys are all exact strings
    and valid UTF-8 (none can then collide with another once coerced), the dicts are copied
    whole; otherwise they are read entry by entry, as ``odd`` dicts."""
    _charge_dicts(dicts, budget)  # refused before anything is copied
    copied = list(map(dict.copy, dicts))
    budget = _charge_dicts(copied, budget)  # charged on the copies, as lists are
    keys = list(chain.from_iterable(copied))
    if set(map(type, keys)) <= {str}:
        chars = sum(map(len, keys))
        if budget < chars:
            raise _TOO_LARGE
        joined = "".join(keys)  # pragma: no mutate (as in _text_excess)
        if joined.isascii() or _valid_utf8(joined):
            texts.append(joined)
            copies.dicts = copied
            copies.keys = keys
            return budget - chars
    at = copies.dict_at
    for node, parent, key in zip(copied, at.parents, at.keys, strict=True):
        copies.odd.append({})
        copies.pairs.append(list(node.items()))
        copies.odd_at.add(node, parent, key)
    copies.dict_at = _Level()
    return budget


def _valid_utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _odd_dict(
    copy: dict[str, Any], pairs: list[tuple[Any, Any]], budget: int, texts: list[str]
) -> int:
    """Fill ``copy`` (its entries already charged) with ``pairs``, whose keys are read through
    ``str`` and coerced one by one: a key that is not a string, or that collides with another
    once coerced, refuses the whole list. The values are read with the level's."""
    for raw_key, value in pairs:
        key = read_str(raw_key, MAX_ARTIFACT_BYTES + 1)
        if key is None:
            raise _UNENCODABLE
        budget -= len(key)
        if budget < 0:
            raise _TOO_LARGE
        key = coerce_utf8(key)
        if key in copy:
            raise _UNENCODABLE
        texts.append(key)
        copy[key] = value
    return budget


def _charge_scalars(
    values: Sequence[Any], kinds: set[type], owners: _Owners, budget: int, texts: list[str]
) -> int:
    """Charge and check exact strings, ints, floats, bools and nulls (``kinds``: which of them
    are there; ``owners``: where each is held): strings their quote and one byte per code point
    (their text goes to ``texts``; one that is not valid UTF-8 is replaced in its parent's copy
    by its coerced copy), the others the rest of what the encoder writes for them (64-bit ints
    and finite floats only)."""
    others = values
    if str in kinds:
        is_str = None if len(kinds) == 1 else list(map(str.__instancecheck__, values))
        strings = values if is_str is None else list(compress(values, is_str))
        budget -= sum(map(len, strings)) + len(strings)
        if budget < 0:
            raise _TOO_LARGE
        joined = "".join(strings)  # pragma: no mutate (as in _text_excess)
        if not (joined.isascii() or _valid_utf8(joined)):
            joined = _coerce_in_place(
                strings, owners if is_str is None else _masked(owners, is_str)
            )
        texts.append(joined)
        if is_str is None:
            return budget
        others = list(compress(values, map(operator.not_, is_str)))
    if kinds <= _WORDS:  # true, false, null: the letters after the first
        # (only bools and None here: ``count(False)`` finds exactly the falses)
        return _charge(budget - 3 * len(others) - others.count(False))
    if int in kinds:
        ints = others if len(kinds) == 1 else [v for v in others if type(v) is int]
        if min(ints) < INT_MIN or max(ints) > INT_MAX:  # before any is written out
            raise _UNENCODABLE
    try:
        written = _written(others)
    except ValueError:  # a NaN or an infinity
        raise _UNENCODABLE from None
    # What the values add, less the byte each has charged: the brackets, the commas, and one
    # byte per value come off.
    return _charge(budget - (written - 1 - 2 * len(others)))


_WORDS: Final = frozenset({bool, type(None)})


def _charge(budget: int) -> int:
    """``budget``, unless it is spent."""
    if budget < 0:
        raise _TOO_LARGE
    return budget


def _coerce_in_place(strings: Sequence[str], owners: _Owners) -> str:
    """Replace each string that is not valid UTF-8 by its coerced copy, in its parent (as
    ``owners`` tells); the joined text of them all."""
    parents, keys = owners()
    coerced = []
    for text, parent, key in zip(strings, parents, keys, strict=False):
        valid = coerce_utf8(text)
        if valid is not text:
            parent[key] = valid
        coerced.append(valid)
    return "".join(coerced)  # pragma: no mutate (as in _text_excess)


def _read_others(nested: _Level, budget: int, texts: list[str]) -> tuple[_Level, int]:
    """Of the values that are not exact scalars: exact lists and dicts go to the next level as
    they are; a subclass of str, int or float is read through its base type's slots (charged
    as the base type is) and put in its parent's copy; tuples and subclasses of list, tuple
    and dict go to the next level too, which reads them through their base; enums and every
    other type refuse the list."""
    if set(map(type, nested.nodes)) <= _CONTAINER_TYPES:
        return nested, budget
    after = _Level()
    for value, parent, key in zip(nested.nodes, nested.parents, nested.keys, strict=True):
        t = type(value)
        if t is list or t is dict:
            after.add(value, parent, key)
        elif issubclass(t, enum.Enum):
            raise _UNENCODABLE
        elif issubclass(t, str):
            size = str.__len__(value)
            budget -= size + 1
            if budget < 0:  # before anything is copied (as _walk_other)
                raise _TOO_LARGE
            text = coerce_utf8(str.__getitem__(value, slice(0, size)))
            texts.append(text)
            parent[key] = text
        elif issubclass(t, int):
            if int.bit_length(value) > 64:  # refused before a huge one is copied
                raise _UNENCODABLE
            number = int.__index__(value)
            if not INT_MIN <= number <= INT_MAX:
                raise _UNENCODABLE
            budget -= len(int.__repr__(number)) - 1
            parent[key] = number
        elif issubclass(t, float):
            real = float.__float__(value)
            if not math.isfinite(real):
                raise _UNENCODABLE
            budget -= len(float.__repr__(real)) - 1
            parent[key] = real
        elif issubclass(t, (dict, list, tuple)):
            after.add(value, parent, key)
        else:
            raise _UNENCODABLE
    if budget < 0:
        raise _TOO_LARGE
    return after, budget
