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
- *An unclosed quote* (a value cut by a cap, or a multi-line value) runs to the end of its
  line, or to a quote of the other kind that ends a string (``["PW='cut", "next"]``), whichever
  comes first.

Linear: each part is one regex search (a possessive run of backslash pairs after a negative
lookbehind, as :mod:`nr_llm_core._json_members` finds a closing quote), and the caller goes on
after the value. A search that finds no closing quote goes to the end of its line, past where
the value ends; it is never repeated over that line: an opening quote is never escaped, so
another value opening with that quote there would have closed the first.
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


class QuoteReader:
    """Reads the quoted values of one text (module docstring)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def value_end(self, start: int) -> tuple[int, bool]:
        """Where the value whose opening quote is at ``start`` ends (the index after it), and
        whether it ends with a closing quote (which is not part of the secret)."""
        shell = self._reading(start, _SINGLE_END)
        python = self._reading(start, _SINGLE_END_ESCAPED)
        return max(shell, python)

    def _closing(self, regex: re.Pattern[str], pos: int) -> tuple[int, str]:
        """The closing quote or line end ``regex`` finds from ``pos``: where it ends and its
        last character ("" at the end of the text)."""
        m = self.regex_search(regex, pos)
        if m is None:
            return len(self.text), ""
        return m.end(), m.group()[-1]

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
                end, found = self._closing(_DOUBLE_END if quote == '"' else single, pos + 1)
                if found != quote:
                    return self._unclosed_end(pos + 1, quote), False
                pos, closed = end, True
                continue
            bare = _BARE.match(text, pos)  # never past the part of the text it reads
            if bare is None:
                break
            pos, closed = bare.end(), False
        return pos, closed

    def _unclosed_end(self, pos: int, quote: str) -> int:
        m = self.regex_search(_UNCLOSED_END[quote], pos)
        return len(self.text) if m is None else m.start()
