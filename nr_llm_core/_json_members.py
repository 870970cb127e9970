"""Secrets under credential names in JSON text, masked whole where they were written.

The redactor's shapes read a value up to its closing quote, and in text that is not JSON an
escaped quote has to end it (``print(\\"token=EOF\\")``). In JSON text a string's end is known
exactly: ``{"password": "hunter2\\"TAIL"}`` holds one value, ``hunter2"TAIL``. :func:`mask_members`
reads text as JSON wherever it is JSON and puts a mask over the whole of every string and number
under a credential name that a judge chooses (ADR 0035, and its red team):

- *Where JSON is read*: from every place JSON may start (``{``, ``[``, or a quote no
  backslash escapes), as far as it reads as JSON, and from the next such place after where
  that reading stopped. So a document after other text (``curl -i``'s headers, a log line's
  prefix, a byte order mark), JSON Lines with other lines between them, a document cut by a
  cap (a string cut before its closing quote runs to the end of the text), and the rest of a
  document after a token that is not JSON (``True``, a comment, a trailing comma) are read.
  A string read at the top that a colon follows is a member's name without its object (a
  ``grep`` line of a pretty-printed file). ``NaN`` and ``Infinity`` are read as Python's
  ``json`` writes them; raw control characters in strings as it reads them with
  ``strict=False``.
- *Under a credential name*: a member's value, and every string and number inside an array
  or object that is one (``{"set-cookie": ["sid=…"]}``), is judged under that name.
- *Nested*: a string (a value or a name) that holds JSON is read the same way, to
  :data:`MAX_STRING_DEPTH` strings deep (tool-call arguments, a response body in a log record).
- *The mask*: a string's content is replaced, its quotes stay; a number becomes the mask as a
  JSON string. Every other character is kept as written, so the text is the same JSON at every
  depth. A string cut before its closing quote is masked to the end of the text.

Linear: a reading that stops goes on from where it stopped (or after the string it could not
read), never from where it started, so each layer is read once; one layer per JSON string depth
(each is the content of strings of the layer above, so a layer is never longer than the text),
with regexes whose runs are possessive and never nested, ``json``'s own string scanner, and
array maps for the way back.
"""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Callable
from typing import Final, NamedTuple

__all__ = ["MAX_STRING_DEPTH", "MemberJudge", "NameJudge", "mask_members", "member_regions"]

#: How many JSON strings deep JSON text is read (a quote 8 strings deep has 255 backslashes).
MAX_STRING_DEPTH: Final = 8

#: ``is_name(name)``: whether ``name`` (a member's name, decoded) is a credential name, whose
#: value's strings and numbers (the value itself, or every one inside an array or object) are
#: judged by a :data:`MemberJudge`.
NameJudge = Callable[[str], bool]
#: ``judge(name, value, quoted, credential)``: the mask that replaces ``value`` whole, or
#: ``None`` to keep it. ``value`` is a string's content decoded, under the credential name
#: ``name``; or, when not ``quoted``, a number as written, under ``name``: the credential name
#: it is under (``credential`` true: ``is_name`` was asked once for it, and a judge need not
#: read a name again for every value under it), else its member's name, else ``None`` (a
#: number the catalogue would mask where it stands, a card number, must be masked here, as a
#: JSON string). A mask needs no escape in a JSON string.
MemberJudge = Callable[[str | None, str, bool, bool], str | None]

# One token after optional whitespace: punctuation, the opening quote of a string, a number or
# a literal (``NaN`` and the infinities as Python's ``json`` writes them). Every run is
# possessive and none sits inside another.
_TOKEN: Final = re.compile(
    r"[ \t\n\r]*+(?:(?P<punct>[{}\[\]:,])|(?P<string>\")"
    r"|(?P<number>-?+(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?+(?:[eE][+-]?+[0-9]++)?+)"
    r"|(?P<literal>true|false|null|NaN|-?Infinity))"
)
# Where JSON may start: an object, an array, or a string (a quote no backslash escapes).
_JSON_START: Final = re.compile(r"(?<!\\)[{\[\"]")
# One escape of a JSON string, a surrogate pair as one (json decodes it to one character).
_STRING_ESCAPE: Final = re.compile(
    r"\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|u[0-9a-fA-F]{4}"
    r"|[\"\\/bfnrt])"
)
# A quote that ends a string: no backslash before it, or an even run (possessive, and tried
# only where the run starts, so a run is read once).
_CLOSING_QUOTE: Final = re.compile(r"(?<!\\)(?:\\\\)*+\"")
# A whole JSON string as ``json`` reads it with ``strict=False`` (raw control characters too):
# matched before it is decoded, so a malformed one is never handed to ``json``, whose error
# counts the line breaks from the text's start to where it failed (for its line number): one
# such error per unclosed quote made reading quadratic.
_PLAIN_STRING: Final = re.compile(r'"[^"\\]*+"')  # one without escapes is its own content
_WHOLE_STRING: Final = re.compile(r'"(?:[^"\\]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*+"')
_DECODER: Final = json.JSONDecoder(strict=False)

# A name/value pair's members: the one that holds the credential's name, the one its value.
_PAIR_NAMES: Final = frozenset({"name", "key", "Name", "Key"})
_PAIR_VALUES: Final = frozenset({"value", "Value"})

# The reader's states: what the next token may be.
_VALUE, _FIRST_ITEM, _FIRST_KEY, _KEY, _COLON, _AFTER = range(6)
_CLOSES: Final = {"{": "}", "[": "]"}


class _Scalar(NamedTuple):
    """A string or a number as read: one to mask, or a string that may hold JSON."""

    mask: str | None  # what replaces it whole, if anything
    under: str | None  # the credential name it is under, if any (JSON in it is under it too)
    low: int  # where its content starts (a string's after its quote)
    high: int  # where it ends (before a string's closing quote; the text's end when cut)
    value: str  # the content decoded (a number as written)
    read: int  # where the decoded content ends: ``high`` but in a cut string
    quoted: bool


def _complete_part(text: str, low: int) -> int:
    """Where the complete part of a string's content from ``low`` ends: at its first
    backslash that starts no escape (an escape cut short), or at the end of ``text``."""
    pos = low
    while (backslash := text.find("\\", pos)) >= 0:
        m = _STRING_ESCAPE.match(text, backslash)
        if m is None:
            return backslash
        pos = m.end()
    return len(text)


def _string(text: str, start: int) -> _Scalar | int:
    """The string whose quote is at ``start``: decoded; cut by the end of ``text`` (a cap),
    decoded as far as it is complete. When it is malformed (an invalid escape), where it
    ends: reading goes on after it."""
    plain = _PLAIN_STRING.match(text, start)
    if plain is not None:
        end = plain.end()
        return _Scalar(None, None, start + 1, end - 1, text[start + 1 : end - 1], end - 1, True)
    whole = _WHOLE_STRING.match(text, start)
    if whole is None:
        closing = _CLOSING_QUOTE.search(text, start + 1)
        if closing is not None:
            return closing.end()  # closed, so not cut: an invalid escape
        read = _complete_part(text, start + 1)
        value = _DECODER.decode('"' + text[start + 1 : read] + '"')
        return _Scalar(None, None, start + 1, len(text), value, read, quoted=True)
    value, end = _DECODER.raw_decode(text, start)  # well formed: json reads it as matched
    return _Scalar(None, None, start + 1, end - 1, value, end - 1, quoted=True)


def _scalars(
    text: str, is_name: NameJudge, judge: MemberJudge, under: str | None = None
) -> list[_Scalar]:
    """The strings and numbers of the JSON in ``text`` that ``judge`` masks, and the strings
    that may hold JSON, in order: read from each place JSON may start, on from where the
    reading before stopped (module docstring). ``text`` is under the credential name
    ``under``, if any (it is the content of a string under that name)."""
    found: list[_Scalar] = []
    pos = 0
    while (start := _JSON_START.search(text, pos)) is not None:
        pos = _read(text, start.start(), is_name, judge, found, under)
    return found


def _read(
    text: str,
    pos: int,
    is_name: NameJudge,
    judge: MemberJudge,
    found: list[_Scalar],
    under_all: str | None,
) -> int:
    """Read JSON values from ``pos`` (where JSON may start) into ``found``, up to the first
    token that does not fit; return where that token starts (always past ``pos``), where a
    malformed string ends, or the end of ``text``. Only what matters is kept: what ``judge``
    masks, and strings that may hold JSON. Everything read is under ``under_all``, if given."""
    closers: list[str] = []  # the open containers' closing punctuation
    # The credential names strings and numbers are under: each with how many containers were
    # open when the container that is its value opened (one entry per name, not per bracket).
    names: list[tuple[int, str]] = [] if under_all is None else [(-1, under_all)]
    state = _VALUE
    name: str | None = None  # the member whose value comes next
    top: str | None = None  # a string just read at the top: a name, if a colon follows
    # A name/value pair's credential name (Kubernetes' env: {"name": "DB_PASSWORD", "value":
    # …}): how many containers were open in its object, and the name its value member is under.
    pair: tuple[int, str] | None = None
    while (m := _TOKEN.match(text, pos)) is not None:
        kind = m.lastgroup or ""
        start, lexeme = m.start(kind), m.group(kind)
        key, top, pos = top, None, m.end()
        if kind == "punct" and lexeme in ":,]}":
            if lexeme == ":" and (state == _COLON or key is not None):
                if key is not None:  # a member without its object (a grep line, a cut head)
                    closers.append("}")
                    name = key
                state = _VALUE
            elif lexeme == "," and state == _AFTER:
                state, name = (_KEY if closers[-1] == "}" else _VALUE), None
            elif lexeme in "]}" and state in (_FIRST_KEY, _FIRST_ITEM, _AFTER):
                if closers[-1] != lexeme:
                    return start
                closers.pop()
                if names and names[-1][0] == len(closers):
                    names.pop()
                state = _AFTER if closers else _VALUE
            else:
                return start
            continue
        naming = state in (_FIRST_KEY, _KEY)
        if not naming and state not in (_VALUE, _FIRST_ITEM):
            return start
        if naming and kind != "string":
            return start
        under = None
        if not naming:
            under = (
                name if name is not None and is_name(name) else (names[-1][1] if names else None)
            )
            if (
                under is None
                and pair is not None
                and pair[0] == len(closers)
                and name in _PAIR_VALUES
            ):
                under = pair[1]  # {"name": "DB_PASSWORD", "value": …}
        if kind == "string":
            read = _string(text, start)
            if isinstance(read, int):
                return read
            if not naming and name in _PAIR_NAMES and under is None and is_name(read.value):
                pair = (len(closers), read.value)
            if under is not None:
                read = read._replace(mask=judge(under, read.value, True, True), under=under)
            if read.mask is not None or _JSON_START.search(read.value):
                found.append(read)  # a name too, for JSON in it (never masked)
            pos = read.high + 1
            if pos > len(text):  # cut: the string runs to the end
                return len(text)
            if naming:
                name, state = read.value, _COLON
                continue
            top = None if closers else read.value
        elif lexeme in "{[":
            if under is not None and not (names and names[-1][1] == under):
                names.append((len(closers), under))
            closers.append(_CLOSES[lexeme])
            if pair is not None and pair[0] >= len(closers):
                pair = None  # another object: its own name member decides
            state, name = (_FIRST_KEY if lexeme == "{" else _FIRST_ITEM), None
            continue
        elif kind == "number":
            if under is None:
                mask = judge(name, lexeme, False, False)
            else:
                mask = judge(under, lexeme, False, True)
            if mask is not None:
                found.append(_Scalar(mask, under, start, pos, lexeme, pos, quoted=False))
        state, name = (_AFTER if closers else _VALUE), None
    return pos


def _content_starts(text: str, scalar: _Scalar) -> array[int]:
    """Where each character of a string's decoded content starts in ``text``, and one entry
    more: where the content ends."""
    starts: array[int] = array("q")
    pos = scalar.low
    for m in _STRING_ESCAPE.finditer(text, scalar.low, scalar.read):
        starts.extend(range(pos, m.start()))
        starts.append(m.start())
        pos = m.end()
    starts.extend(range(pos, scalar.read))
    starts.append(scalar.high)
    return starts


def _quote_at(depth: int) -> str:
    """A quote as written inside ``depth`` JSON strings."""
    quote = '"'
    for _ in range(depth):
        quote = json.dumps(quote)[1:-1]
    return quote


def mask_members(text: str, is_name: NameJudge, judge: MemberJudge) -> str:
    """``text`` with every string and number under a credential name (``is_name``) replaced
    by the mask ``judge`` gives it, if any (module docstring); ``text`` itself when it holds
    none."""
    regions = member_regions(text, is_name, judge)
    if not regions:
        return text
    parts: list[str] = []
    pos = 0
    for low, high, replacement in regions:
        parts += (text[pos:low], replacement)
        pos = high
    parts.append(text[pos:])
    return "".join(parts)


def member_regions(text: str, is_name: NameJudge, judge: MemberJudge) -> list[tuple[int, int, str]]:
    """What :func:`mask_members` replaces in ``text``: ``(start, end, mask)`` for each string's
    content and number it masks, in order, disjoint, none empty."""
    regions: list[tuple[int, int, str]] = []
    if _JSON_START.search(text) is None:
        return regions
    # Each layer: JSON text, where each of its characters starts in ``text`` (None at the top:
    # where it is), how many JSON strings deep it is, and what was read in it.
    layers: list[tuple[str, array[int] | None, int, list[_Scalar]]] = [
        (text, None, 0, _scalars(text, is_name, judge))
    ]
    while layers:
        layer, starts, depth, scalars = layers.pop()
        for scalar in scalars:
            low, high, value = scalar.low, scalar.high, scalar.value
            mask = scalar.mask
            if mask is not None:
                replacement = mask
                if not scalar.quoted:
                    quote = _quote_at(depth)
                    replacement = quote + mask + quote
                if high > low:
                    if starts is not None:
                        low, high = starts[low], starts[high]
                    regions.append((low, high, replacement))
            elif scalar.quoted and depth < MAX_STRING_DEPTH and _JSON_START.search(value):
                nested = _scalars(value, is_name, judge, scalar.under)
                if not nested:
                    continue  # nothing read (a mask's bracket): no way back to build
                inner = _content_starts(layer, scalar)
                if len(inner) != len(value) + 1:  # the way back must hold every character
                    raise ValueError("a JSON string was read inconsistently")
                if starts is not None:
                    inner = array("q", map(starts.__getitem__, inner))
                layers.append((value, inner, depth + 1, nested))
    regions.sort()
    return regions
