"""The limits of bounding and the readers its two walks share (no plugin code runs in them)."""

from __future__ import annotations

import enum
import operator
from itertools import repeat
from typing import Any, Final

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
    "all_of",
    "coerce_utf8",
    "read_key",
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


def read_key(raw_key: object, into: dict[str, Any], budget: int) -> tuple[str, int]:
    """A dict key as both walks read it: the real characters of a ``str`` (or a subclass, read
    through ``str``), charged one byte per code point before they are copied, then coerced to
    UTF-8 (a rejoined surrogate pair is one code point: the other is given back).

    Returns the key and the budget left. Refuses a key that is not a string and one that
    collides with a key already in ``into`` once coerced.
    """
    key = read_str(raw_key, MAX_ARTIFACT_BYTES + 1)  # more cannot fit either
    if key is None:
        raise _UNENCODABLE
    budget -= len(key)
    if budget < 0:
        raise _TOO_LARGE
    valid = coerce_utf8(key)
    if valid in into:
        raise _UNENCODABLE
    return valid, budget + len(key) - len(valid)


def all_of(types: Any, kind: object) -> bool:
    """Whether every class of ``types`` (an iterable) is ``kind`` itself.

    Classes are told apart by identity only, never compared with ``==`` or put in a set: a
    plugin's metaclass can define ``__eq__`` and ``__hash__``, and bounding runs no plugin code.
    """
    return all(map(operator.is_, types, repeat(kind)))


def _dict_charge(n: int) -> int:
    """What a dict of ``n`` entries adds up front: `"":0,` per entry, or `}` when empty."""
    return 5 * n if n else 1
