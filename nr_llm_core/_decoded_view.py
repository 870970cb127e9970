"""Escaped text as its reader would see it, each character traced back to what it came from.

The redactor's shapes match text as a person or a program would read it; stored text is often
escaped instead: a JSON string inside a JSON string (``\\"``, ``\\\\\\"`` …), ``\\u0041KIA…``, a
URL-encoded query, HTML-escaped JSON. :class:`DecodedView` is such text with its escapes decoded
(ADR 0034):

- a run of backslashes before ``"``, ``'`` or ``/``: that character (JSON strings nested to any
  depth, JavaScript's ``\\'``, PHP's ``\\/``);
- a run of backslashes before ``n``, ``r`` or ``t``: a line feed, carriage return or tab;
- a run of backslashes before ``u`` and four hex digits: that character (surrogates stay);
- ``%`` and the two hex digits of a printable ASCII character (URL encoding);
- ``&quot;``, ``&apos;``, ``&amp;``, ``&lt;``, ``&gt;`` and numeric references (HTML; any
  number of leading zeros).

Decoding repeats on its own result up to :data:`MAX_LAYERS` times (``%2522`` → ``%22`` →
``"``). Each character of the view knows the span of the source it stands for.
:meth:`DecodedView.replace` puts text over parts of the view;
:meth:`DecodedView.source_with_replacements` writes each replacement
over the source span its characters came from and keeps every other source character as it
was written, escapes included, so a masked JSON string is still the same JSON string.

Linear in the input: one scan per layer with a regex whose backslash branch starts only at the
left edge of a run (a negative lookbehind, then a possessive run), and array slices.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Sequence
from typing import Final, final

__all__ = ["MAX_LAYERS", "DecodedView"]

#: How many times decoding is applied to its own result.
MAX_LAYERS: Final = 3

_ESCAPE: Final = re.compile(
    r"(?<!\\)\\++(?:(?P<char>[\"'/])|(?P<control>[nrt])|u(?P<code>[0-9A-Fa-f]{4}))"
    r"|%(?P<percent>[0-9A-Fa-f]{2})"
    # Leading zeros are read as HTML reads them (any number), possessively: one scan.
    r"|&(?:(?P<named>quot|apos|amp|lt|gt)|#0*+(?P<decimal>[0-9]{1,7})"
    r"|#[xX]0*+(?P<hex>[0-9A-Fa-f]{1,6}));"
)
# URL and HTML encoding only, and a form's "+" for a space: JSON written so keeps its own
# escapes, and is read as JSON (ADR 0043).
_WEB_ESCAPE: Final = re.compile(
    r"\+|%(?P<percent>[0-9A-Fa-f]{2})"
    r"|&(?:(?P<named>quot|apos|amp|lt|gt)|#0*+(?P<decimal>[0-9]{1,7})"
    r"|#[xX]0*+(?P<hex>[0-9A-Fa-f]{1,6}));"
)
_CONTROLS: Final = {"n": "\n", "r": "\r", "t": "\t"}
_NAMED: Final = {"quot": '"', "apos": "'", "amp": "&", "lt": "<", "gt": ">"}


def _character(code: int) -> str | None:
    # A character a reference may stand for: no NUL, no surrogate (the view would hold half a
    # pair, and a replacement could carry it into stored text), nothing beyond Unicode.
    if code == 0 or 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
        return None
    return chr(code)


def _decoded(m: re.Match[str]) -> str | None:
    """What the escape ``m`` stands for, or ``None`` when it is left as written."""
    group = m.lastgroup
    value = m.group(group) if group else ""
    if group == "char":
        return value
    if group == "control":
        return _CONTROLS[value]
    if group == "code" or group == "hex":
        return _character(int(value, 16))
    if group == "decimal":
        return _character(int(value))
    if group == "named":
        return _NAMED[value]
    code = int(value, 16)  # percent: printable ASCII only, as gitleaks decodes it
    return chr(code) if 0x20 <= code <= 0x7E else None


def _decode_once(text: str, backslashes: bool = True) -> tuple[str, array[int]] | None:
    """``text`` with its escapes decoded, and where each of its characters starts in ``text``
    (one entry more: ``len(text)``); ``None`` when nothing decodes. Without ``backslashes``,
    only URL and HTML encoding are decoded, and a ``+`` is a space (a form's encoding)."""
    parts: list[str] = []
    starts: array[int] = array("q")
    pos = 0
    for m in (_ESCAPE if backslashes else _WEB_ESCAPE).finditer(text):
        char = " " if m.group() == "+" else _decoded(m)
        if char is None:
            continue
        start, end = m.span()
        parts += (text[pos:start], char)
        starts.extend(range(pos, start))
        starts.append(start)
        pos = end
    if not parts:
        return None
    parts.append(text[pos:])
    starts.extend(range(pos, len(text) + 1))
    return "".join(parts), starts


@final
class DecodedView:
    """``source`` with its escapes decoded (``text``), and the way back (module docstring).

    Build one with :meth:`of`. Characters that :meth:`replace` put into the view stand
    together for the source span of what they replaced (a *group*): a later replacement that
    touches a group takes in the whole group.
    """

    __slots__ = ("_groups", "_starts", "source", "text")

    def __init__(self, source: str, text: str, starts: array[int]) -> None:
        #: The text as stored.
        self.source = source
        #: The text as read: escapes decoded, replacements applied.
        self.text = text
        # Where each view character starts in the source (one entry more: the source's
        # length). A character stands for source[starts[i]:starts[i + 1]]; the characters of
        # a group all start where the group's span starts, so all but its last stand for
        # nothing and the last for the whole span.
        self._starts = starts
        self._groups: list[tuple[int, int, str]] = []

    @classmethod
    def of(cls, source: str, *, backslashes: bool = True) -> DecodedView | None:
        """The decoded view of ``source``, or ``None`` when nothing in it decodes. Without
        ``backslashes``, only URL and HTML encoding are decoded (and a form's ``+``): the view
        in which URL- or HTML-encoded JSON is read as JSON (ADR 0043)."""
        decoded = _decode_once(source, backslashes)
        if decoded is None:
            return None
        text, starts = decoded
        for _ in range(MAX_LAYERS - 1):
            again = _decode_once(text, backslashes)
            if again is None:
                break
            text, inner = again
            starts = array("q", map(starts.__getitem__, inner))
        return cls(source, text, starts)

    def __repr__(self) -> str:
        return f"DecodedView({len(self.source)} -> {len(self.text)} characters)"

    def _widen(self, start: int, end: int) -> tuple[int, int]:
        # Out to whole groups: a character that stands for nothing is inside a group, and so
        # is the character after it.
        starts = self._starts
        while start > 0 and starts[start - 1] == starts[start]:
            start -= 1
        while end < len(self.text) and starts[end - 1] == starts[end]:
            end += 1
        return start, end

    def replace(self, regions: Sequence[tuple[int, int, str]]) -> None:
        """Replace ``text[start:end]`` with ``replacement`` for each region, given in order,
        not overlapping, each ``start < end`` with a non-empty replacement (``ValueError``
        otherwise). Regions that touch one group become one replacement."""
        text, starts = self.text, self._starts
        windows: list[tuple[int, int, str]] = []
        pieces: list[str] = []
        low = high = last = 0
        for start, end, replacement in regions:
            if not (last <= start < end <= len(text)) or not replacement:
                raise ValueError("regions must be ordered, disjoint, non-empty replacements")
            wide_start, wide_end = self._widen(start, end)
            if pieces and wide_start < high:
                pieces += (text[last:start], replacement)
                high = max(high, wide_end)
            else:
                if pieces:
                    windows.append((low, high, "".join(pieces) + text[last:high]))
                low, high = wide_start, wide_end
                pieces = [text[low:start], replacement]
            last = end
        if pieces:
            windows.append((low, high, "".join(pieces) + text[last:high]))
        parts: list[str] = []
        new_starts: array[int] = array("q")
        pos = 0
        for low, high, replacement in windows:
            parts += (text[pos:low], replacement)
            new_starts.extend(starts[pos:low])
            span_start = starts[low]
            new_starts.extend(array("q", [span_start]) * len(replacement))
            self._groups.append((span_start, starts[high], replacement))
            pos = high
        parts.append(text[pos:])
        new_starts.extend(starts[pos:])
        self.text = "".join(parts)
        self._starts = new_starts

    def source_with_replacements(self) -> str:
        """The source with each replacement over the source span it stands for; every other
        character as it was written."""
        groups = self._groups
        # Widest first where two start together, the later first where two spans are equal:
        # a group taken into a later one lies inside its span and is skipped.
        order = sorted(range(len(groups)), key=lambda i: (groups[i][0], -groups[i][1], -i))
        parts: list[str] = []
        pos = 0
        for i in order:
            start, end, replacement = groups[i]
            if start < pos:
                continue
            parts += (self.source[pos:start], replacement)
            pos = end
        parts.append(self.source[pos:])
        return "".join(parts)
