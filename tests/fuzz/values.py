"""Byte-driven builders of hostile values, shared by the Hypothesis tests and the atheris runs.

A builder reads a byte string as a stream of choices, so a coverage-guided fuzzer that mutates
bytes steers the shape of the value, and Hypothesis shrinks a failure to a short byte string.
Each builder returns the value and, alongside it, what the host must make of it: the expected
plain-JSON copy, or ``INVALID`` when the walk has to refuse it.
"""

from __future__ import annotations

import datetime
import decimal
import enum
import uuid
from typing import Any, Final

from nr_llm_core.bounding import INT_MAX, INT_MIN, MAX_ARTIFACT_DEPTH, coerce_utf8

__all__ = ["INVALID", "OVERRIDES_RAN", "Reader", "build_json", "build_walk_value"]

INVALID: Final = object()

#: Set when a method a plugin overrides was called: the walk must read base types only.
OVERRIDES_RAN: list[str] = []

# Characters chosen for what they do to UTF-8, JSON and terminals, not for variety.
_ALPHABET: Final = (
    "a",
    "Z",
    "0",
    "1",
    " ",
    '"',
    "\\",
    "/",
    "\n",
    "\x00",
    "\x1b",
    "\x85",
    "\u202e",
    "\u200b",
    "é",
    "€",
    "\U0001f600",
    "\ud83d",  # a high surrogate alone
    "\ude00",  # a low surrogate alone
    "\ud800",
    "\ufffd",
    "</script>",
)


class Reader:
    """Choices read from a byte string; past its end every choice is 0."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            return 0
        self.pos += 1
        return self.data[self.pos - 1]

    def below(self, n: int) -> int:
        return self.byte() % n

    def text(self, extra: tuple[str, ...] = ()) -> str:
        alphabet = _ALPHABET + extra
        return "".join(alphabet[self.below(len(alphabet))] for _ in range(self.below(12)))


class EvilStr(str):
    def __str__(self) -> str:
        OVERRIDES_RAN.append("str.__str__")
        return "EVIL"

    def __len__(self) -> int:
        OVERRIDES_RAN.append("str.__len__")
        return 0

    def __eq__(self, other: object) -> bool:
        OVERRIDES_RAN.append("str.__eq__")
        return True

    __hash__ = str.__hash__


class EvilInt(int):
    def __index__(self) -> int:
        OVERRIDES_RAN.append("int.__index__")
        return 0

    def __int__(self) -> int:
        OVERRIDES_RAN.append("int.__int__")
        return 0


class EvilDict(dict):  # type: ignore[type-arg]
    def items(self) -> Any:
        OVERRIDES_RAN.append("dict.items")
        return iter([("evil", "evil")])

    def keys(self) -> Any:
        OVERRIDES_RAN.append("dict.keys")
        return iter(["evil"])

    def __iter__(self) -> Any:
        OVERRIDES_RAN.append("dict.__iter__")
        return iter(["evil"])

    def __len__(self) -> int:
        OVERRIDES_RAN.append("dict.__len__")
        return 0


class EvilList(list):  # type: ignore[type-arg]
    def __iter__(self) -> Any:
        OVERRIDES_RAN.append("list.__iter__")
        return iter(["evil"])

    def __len__(self) -> int:
        OVERRIDES_RAN.append("list.__len__")
        return 0


class Colour(enum.Enum):
    RED = "red"


class LooksLikeDict:
    @property  # type: ignore[misc]
    def __class__(self) -> type:
        OVERRIDES_RAN.append("__class__")
        return dict


def _refused_value(r: Reader) -> object:
    return [
        b"bytes",
        bytearray(b"x"),
        memoryview(b"x"),
        {1, 2},
        frozenset(),
        datetime.datetime(2024, 1, 1),
        uuid.UUID(int=1),
        decimal.Decimal("1.5"),
        Colour.RED,
        object(),
        LooksLikeDict(),
        float("nan"),
        float("inf"),
        -float("inf"),
        INT_MAX + 1,
        INT_MIN - 1,
        10**5000,
    ][r.below(17)]


def build_walk_value(r: Reader, level: int) -> tuple[Any, Any]:
    """A value at nesting ``level`` (data is level 3) and its expected walk output."""
    kind = r.below(20)
    if kind < 4:
        s = r.text()
        return s, coerce_utf8(s)
    if kind == 4:
        s = r.text()
        return EvilStr(s), coerce_utf8(s)
    if kind == 5:
        n = [0, 1, -1, INT_MAX, INT_MIN, 2**53 + 1, r.byte()][r.below(7)]
        return n, n
    if kind == 6:
        n = r.byte()
        return EvilInt(n), n
    if kind == 7:
        f = [0.0, -0.0, 1e-5, 1e16, 12.0, 1.5, 2.2250738585072014e-308][r.below(7)]
        return f, f
    if kind == 8:
        v = [True, False, None][r.below(3)]
        return v, v
    if kind == 9:
        return _refused_value(r), INVALID
    if kind == 10:
        # A big string: crosses the byte budget now and then.
        s = "x" * (r.byte() * 400)
        return s, s
    if kind == 11:
        wraps = r.byte() // 2 + 30  # around the depth limit
        value: Any = []
        for _ in range(wraps):
            value = [value]
        # wraps + 1 lists: the outermost at ``level``, the empty innermost at level + wraps.
        return value, INVALID if level + wraps > MAX_ARTIFACT_DEPTH else _plain_nest(wraps)
    if kind == 12:
        cycle: list[Any] = []
        cycle.append(cycle)
        return cycle, INVALID
    if kind < 16:
        return _container(r, level, kind)
    return _mapping(r, level, kind)


def _plain_nest(wraps: int) -> Any:
    value: Any = []
    for _ in range(wraps):
        value = [value]
    return value


def _container(r: Reader, level: int, kind: int) -> tuple[Any, Any]:
    items, expected = [], []
    for _ in range(r.below(6)):
        item, exp = build_walk_value(r, level + 1)
        items.append(item)
        expected.append(exp)
    ok = level <= MAX_ARTIFACT_DEPTH and all(e is not INVALID for e in expected)
    value: Any = tuple(items) if kind == 13 else EvilList(items) if kind == 14 else items
    return value, expected if ok else INVALID


def _mapping(r: Reader, level: int, kind: int) -> tuple[Any, Any]:
    raw: dict[Any, Any] = {}
    expected: dict[str, Any] = {}
    ok = level <= MAX_ARTIFACT_DEPTH
    for _ in range(r.below(5)):
        choice = r.below(10)
        key: Any = [1, None, True, (1,)][r.below(4)] if choice == 0 else r.text()
        if choice == 1:
            key = EvilStr(key)
        item, exp = build_walk_value(r, level + 1)
        if type(key) is not str and not isinstance(key, str):
            ok = False
        elif key in raw:
            continue  # a real dict cannot hold it twice either
        else:
            plain = coerce_utf8(str.__str__(key))
            if plain in expected:
                ok = False  # two keys that are one after coercion: no duplicate-key JSON
            expected[plain] = exp
        if exp is INVALID:
            ok = False
        raw[key] = item
    value = EvilDict(raw) if kind == 16 else raw
    return value, expected if ok else INVALID


# -- JSON-like values for the redactor ----------------------------------------------------------

#: Fragments that push the redactor's patterns: key names, prefixes, separators.
SECRET_FRAGMENTS: Final = (
    "password",
    "X-Api-Key",
    "refreshToken",
    "token=",
    "Bearer ",
    "sk-",
    "AKIA",
    "eyJ",
    ".",
    "-",
    "_",
    "@",
    "://",
    ":",
    "4111111111111111",
    "-----BEGIN PRIVATE KEY-----",
    "-----END PRIVATE KEY-----",
    "… [truncated]",
    "[REDACTED:email]",
    # the shapes of ADR 0014: headers, assignments, key blocks, prefixes
    "Cookie: ",
    "a=b; ",
    "Authorization: Token ",
    "PGPASSWORD=",
    "sig=",
    "AccountKey=",
    "<SecretAccessKey>",
    "-----BEGIN PGP PRIVATE KEY BLOCK-----",
    "PuTTY-User-Key-File-3: ",
    "Private-MAC: ",
    "xoxe.xoxp-1-",
    "hf_",
    "glpat-",
    '"',
    "$",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
)


def _fragments(r: Reader) -> str:
    # What the redactor is handed has been through bounding: valid UTF-8.
    return coerce_utf8(r.text(SECRET_FRAGMENTS))


def build_json(r: Reader, depth: int = 0) -> Any:
    """A JSON-like value (dicts with str keys, lists, strings, numbers) up to depth 12, every
    string valid UTF-8 (as every string the redactor is handed has been bounded)."""
    kind = r.below(10)
    if kind < 4 or depth >= 12:
        return _fragments(r) * (1 + r.below(3))
    if kind == 4:
        return [0, 1, 4111111111111111, 10**18, -7, r.byte()][r.below(6)]
    if kind == 5:
        return [None, True, 1.5][r.below(3)]
    if kind == 6:
        return "x" * (r.byte() * 20) + _fragments(r)
    if kind < 8:
        return [build_json(r, depth + 1) for _ in range(r.below(5))]
    return {_fragments(r): build_json(r, depth + 1) for _ in range(r.below(5))}
