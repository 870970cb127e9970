"""Where a value written after a credential name ends, its quotes read as YAML, shell and .env.

The catalogue's ``credential-value`` shape finds a credential name and its ``=`` or ``:``; a
value that starts with a quote is read here, to its real end (ADR 0040), wherever the text is
not JSON (JSON text is read as JSON first: ADR 0035):

- *A double-quoted part* ends at the first ``"`` that no backslash escapes (YAML, shell,
  .env, Python and JSON all write ``\\"`` inside one); a backslash before a line break
  continues the line, as YAML and the shell read it.
- *A single-quoted part* ends on its line, written (a line break) or escaped as a JSON string
  escapes it (``\\n``): a raw ``'`` is common inside a JSON string, and the next line of
  that string may start with another name. It is read twice: as the shell and YAML write it
  (no escapes: ``'it''s'`` is two parts side by side, the way YAML doubles a quote), and as
  Python, JavaScript and python-dotenv write it (``\\'`` inside). The value ends where the
  later of the two readings ends, so neither format's secret is cut short.
- *Parts side by side* make one value, as the shell joins them: ``'a'"'"'b'``, ``'a'\\''b'``,
  ``"abc"def``. A quote after a closing quote starts another part unless what follows it ends a
  string (``,``, ``:``, ``]``, ``}``, ``)``, a space, a line break): ``{"env": "PW='x'"}`` ends
  the value before the JSON string's own closing quote.
- *Over lines*: a part that is not closed on its line goes on over the next lines to its
  closing quote, as YAML, the shell and ``.env`` files read a quoted value (ADR 0043), unless
  a quote of the other kind that ends a string comes first (the end of the string the value is
  in: ``["PW='cut", "next"]``); the value ends there (no part side by side after it).
- *An unclosed quote* (a value cut by a cap, a quote never closed) runs to the end of its first
  line, or to a quote of the other kind that ends a string, whichever comes first.
- *A phrase* (ADR 0043): an unquoted value at the start of an INI, ``.env``, properties or
  YAML line runs to the end of that line (:meth:`QuoteReader.phrase_end`), before a comment
  (`` #``, `` ;``) or a quote.

Linear: each part is one regex search (a possessive run of backslash pairs after a negative
lookbehind, as :mod:`nr_llm_core._json_members` finds a closing quote), and the caller goes on
after the value. A search that goes past where the value ends (to the end of a line, or over
lines to a closing quote that is not there) is remembered per regex: a later search from a
position inside what it went over gives the same answer without reading it again.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["QuoteReader"]

# The closing quote of a part (or the line break that ends an unclosed one), per reading.
_DOUBLE_END: Final = re.compile(r'(?<!\\)(?:\\\\)*+["\r\n]')
# A single-quoted part also ends at a line break escaped as JSON writes it (a backslash run
# before n or r): a raw ' is common inside a JSON string, where the next line starts there.
_SINGLE_END: Final = re.compile(r"['\r\n]|(?<!\\)\\++[nr]")
_SINGLE_END_ESCAPED: Final = re.compile(r"(?<!\\)(?:(?:\\\\)*+['\r\n]|\\++[nr])")


def _ends_a_string(other: str) -> str:
    # A quote of the other kind that ends a string (one before , : ] } or ) or at the end of a
    # line), a backslash run before it outside.
    return rf"(?<!\\)\\*+{other}(?=[,:\]}})]|[\r\n]|\Z)"


# A part not closed on its line, read on over lines (ADR 0043): its closing quote, or the end of
# the string it is in, whichever comes first. Per reading: the shell's ' has no escapes.
_OVER_LINES: Final = {
    _DOUBLE_END: re.compile(r'(?<!\\)(?:\\\\)*+"|' + _ends_a_string("'")),
    _SINGLE_END: re.compile("'|" + _ends_a_string('"')),
    _SINGLE_END_ESCAPED: re.compile(r"(?<!\\)(?:\\\\)*+'|" + _ends_a_string('"')),
}
# Characters a value goes on with after a closing quote, outside quotes: none of the
# punctuation that ends a value in code, a query or JSON; a backslash only as the shell's \'.
_BARE: Final = re.compile(r"(?:[^\s\"'`\\,;:<>=&#|(){}\[\]]|\\')++")
# What ends an unclosed part early: the line's end (as written, or as a JSON string escapes
# it: a backslash run before n or r), or a quote of the other kind that ends a string (one
# before , : ] } or ) or at the end of a line). A backslash run before either stays outside.
_UNCLOSED_END: Final = {
    quote: re.compile(rf"(?<!\\)\\*+(?:{other}(?=[,:\]}})]|[\r\n]|\Z)|[nr](?<=\\[nr]))|[\r\n]")
    for quote, other in (('"', "'"), ("'", '"'))
}
# After a closing quote, a quote followed by one of these ends a string, and is no new part:
# JSON's punctuation, a space, a line break (as written, or escaped), an escaped quote.
_ENDS_A_STRING: Final = re.compile(r'[,:\]})\s]|\\++[nrt"]|\Z')
# Where a phrase ends: a comment after a space, a quote or backtick (a backslash run before it
# stays outside), a line break, written or escaped. Each run is tried only where it starts.
_PHRASE_END: Final = re.compile(r"(?<![ \t])[ \t]++[#;]|(?<!\\)\\*+[\"'`]|[\r\n]|(?<!\\)\\++[nrt]")
# Where a connection string's element ends (Server=db;Password=two words;Database=app): its
# ";", a quote (the end of the string it is in), a line break, written or escaped.
# A backslash run before a quote stays outside (it escapes the quote of a JSON string).
_ELEMENT_END: Final = re.compile(r"[;\r\n]|(?<!\\)\\*+[\"'`]|(?<!\\)\\++[nrt]")
# What a connection string's element starts after: a ";" (spaces around it).
_ELEMENT_LEAD: Final = re.compile(r";[ \t]*+\Z")
# The line break after a block scalar's indicator, and those between its lines: written, or
# escaped as a JSON string escapes it (the decoded view reads a JSON string's as written).
_LINE_BREAK: Final = re.compile(r"\r?\n|\\r?\\n")
# A block's line also ends at a quote that ends the string the block is in (before , ] } or at
# the text's end), no backslash before it in a JSON string's escaped lines.
_WRITTEN_BREAK: Final = re.compile(r'\r?\n|"(?=[,\]}]|\Z)')
_ESCAPED_BREAK: Final = re.compile(r'\\r?\\n|(?<!\\)"(?=[,\]}]|\Z)')
# What may stand between a line's start and a name that starts it: indentation, then shell's
# export, a YAML list's dash or INI's comment-free nothing. Read backwards, this far at most.
_LINE_LEAD_MAX: Final = 80
_LINE_WORDS: Final = ("export", "-", "set")


class QuoteReader:
    """Reads the quoted values and phrases of one text (module docstring)."""

    __slots__ = ("_last", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        # Per regex, the last search: from where, and what it found.
        self._last: dict[re.Pattern[str], tuple[int, re.Match[str] | None]] = {}

    def value_end(self, start: int) -> tuple[int, bool]:
        """Where the value whose opening quote is at ``start`` ends (the index after it), and
        whether it ends with a closing quote (which is not part of the secret)."""
        shell = self._reading(start, _SINGLE_END)
        python = self._reading(start, _SINGLE_END_ESCAPED)
        return max(shell, python)

    def starts_a_line(self, pos: int) -> bool:
        """Whether only indentation (and ``export``, ``set`` or a YAML list's ``-``) stands
        between ``pos`` and the start of its line or of the string it is in (a quote)."""
        text = self.text
        low = max(0, pos - _LINE_LEAD_MAX)
        lead = text[low:pos]
        cut = max(lead.rfind("\n"), lead.rfind("\r"))
        if cut < 0:
            if low > 0:
                return False  # too far from the line's start for indentation
            head = lead
        else:
            head = lead[cut + 1 :]
        for quote in "\"'":
            opened = head.rfind(quote)
            if opened >= 0:
                head = head[opened + 1 :]  # the start of a string the line is in
        words = head.split()
        return all(word in _LINE_WORDS for word in words)

    def block_span(self, name: int, indicator_end: int) -> tuple[int, int]:
        """Where the content of a YAML block scalar starts and ends: the lines after the one
        its indicator (ending at ``indicator_end``) is on, while they are blank or indented
        more than the line of ``name``; trailing blank lines left out. Its lines' breaks are
        written (``\n``) or escaped as a JSON string escapes them (``\\n``)."""
        text = self.text
        first = _LINE_BREAK.search(text, indicator_end)
        if first is None:
            return indicator_end, indicator_end
        breaks = _ESCAPED_BREAK if "\\" in first.group() else _WRITTEN_BREAK
        # The name's line's indentation, looked for this far back at most (as starts_a_line).
        low = max(0, name - _LINE_LEAD_MAX)
        written, escaped = text.rfind("\n", low, name), text.rfind("\\n", low, name)
        line_start = max(written + 1, escaped + 2 if escaped >= 0 else -1)
        if line_start == 0 and low > 0:
            line_start = name  # too far from the line's start: no indentation seen
        lead = text[line_start:name]
        indent = len(lead) - len(lead.lstrip(" \t-"))
        low = high = pos = first.end()
        while pos < len(text):
            nxt = breaks.search(text, pos)
            end = len(text) if nxt is None else nxt.start()
            if nxt is not None and nxt.group()[-1] == '"':
                nxt = None  # the end of the string the block is in
            line = text[pos:end]
            stripped = line.lstrip(" \t")
            if stripped and len(line) - len(stripped) <= indent:
                break
            if stripped:
                if high == low:
                    low = pos + len(line) - len(stripped)
                high = end
            if nxt is None:
                break
            pos = nxt.end()
        return low, high

    def in_connection_string(self, pos: int, name_end: int) -> bool:
        """Whether the name at ``pos`` (ending at ``name_end``) is an element of a ``;``
        separated connection string: a ``;`` before it and ``=`` right after it."""
        text = self.text
        if not text.startswith("=", name_end):
            return False
        return _ELEMENT_LEAD.search(text, max(0, pos - 8), pos) is not None

    def element_end(self, start: int) -> int:
        """Where a connection string's element value that starts at ``start`` ends: before
        its ``;``, a quote or the line's end, trailing spaces left out."""
        m = self._search(_ELEMENT_END, start)
        end = len(self.text) if m is None else m.start()
        while end > start and self.text[end - 1] in " \t":
            end -= 1
        return end

    def phrase_end(self, start: int) -> int:
        """Where a phrase that starts at ``start`` ends: before a comment, a quote or the
        line's end, trailing spaces left out."""
        m = self._search(_PHRASE_END, start)
        end = len(self.text) if m is None else m.start()
        while end > start and self.text[end - 1] in " \t":
            end -= 1
        return end

    def _closing(self, regex: re.Pattern[str], pos: int) -> tuple[int, str]:
        """The closing quote or line end ``regex`` finds from ``pos``: where it ends and its
        last character ("" at the end of the text)."""
        m = self._search(regex, pos)
        if m is None:
            return len(self.text), ""
        return m.end(), m.group()[-1]

    def _search(self, regex: re.Pattern[str], pos: int) -> re.Match[str] | None:
        # A match starts where it starts whatever the search's start (lookbehinds read the
        # text before it): a search from inside what the last one went over finds the same.
        last = self._last.get(regex)
        if last is not None:
            since, m = last
            if since <= pos and (m is None or pos <= m.start()):
                return m
        m = self.regex_search(regex, pos)
        self._last[regex] = (pos, m)
        return m

    def regex_search(self, regex: re.Pattern[str], pos: int) -> re.Match[str] | None:
        """``regex.search(text, pos)``: every search goes through here (the tests count it)."""
        return regex.search(self.text, pos)

    def _reading(self, start: int, single: re.Pattern[str]) -> tuple[int, bool]:
        text = self.text
        pos, closed = start, False
        while pos < len(text):
            quote = text[pos]
            if quote in "\"'":
                if pos > start and _ENDS_A_STRING.match(text, pos + 1):
                    break  # a quote that ends a string, not the start of another part
                on_line = _DOUBLE_END if quote == '"' else single
                end, found = self._closing(on_line, pos + 1)
                if found == quote:
                    pos, closed = end, True
                    continue
                end, found = self._closing(_OVER_LINES[on_line], pos + 1)
                if found != quote:
                    return self._unclosed_end(pos + 1, quote), False
                # Over lines, the value ends at its closing quote: what follows it may be the
                # next line's name and value (a quote found there may open that value).
                return end, True
            bare = _BARE.match(text, pos)  # never past the part of the text it reads
            if bare is None:
                break
            pos, closed = bare.end(), False
        return pos, closed

    def _unclosed_end(self, pos: int, quote: str) -> int:
        m = self._search(_UNCLOSED_END[quote], pos)
        return len(self.text) if m is None else m.start()
