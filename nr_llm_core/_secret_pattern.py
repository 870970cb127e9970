"""One shape of the secret catalogue: its regex, its replacement, its examples and its regions."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import final

from nr_llm_core import _masks as masks
from nr_llm_core import _value_judges as judges
from nr_llm_core._quoted_values import QuoteReader

__all__ = ["PhraseJudge", "QuotedJudge", "Region", "SecretPattern"]


#: A change a shape makes to a text: ``(start, end, replacement)``.
Region = tuple[int, int, str]


#: ``judge(match, value)``: whether ``value``, the whole of a quoted value that ``match`` found
#: (its quotes aside), is a secret to mask.
QuotedJudge = Callable[[re.Match[str], str], bool]
#: ``judge(match, phrase)``: whether ``phrase``, the rest of the line from the start of the
#: unquoted value ``match`` found (its group ``secret``), is a secret to mask whole.
PhraseJudge = Callable[[re.Match[str], str], bool]


@final
class SecretPattern:
    """One secret shape: a ``kind`` (the mask's label), a compiled regex and its replacement.

    ``source`` names the rule the shape follows; ``positive`` and ``negative`` are its examples
    (see :mod:`nr_llm_core.secret_shapes`). ``spans``, when given, finds the spans to mask in a
    whole string itself (private-key blocks are found by searching for their BEGIN and END
    lines, not with one regex); ``regex`` then documents where a block starts. ``quoted``,
    when given, judges a value that starts with a quote (the regex's group ``open``), read to
    its real end by :class:`~nr_llm_core._quoted_values.QuoteReader` (ADR 0040): a secret is
    masked whole, its closing quote kept; a quote that a space follows opens a value only as
    :func:`~nr_llm_core._value_judges.opens_value` says (ADR 0043). ``phrase``, when given,
    judges an unquoted value at the start of a line (its name unquoted, after ``=`` or ``:``)
    read to the end of that line (ADR 0043); a phrase it keeps is judged as one word by
    ``replace``.
    """

    __slots__ = (
        "_mask", "_phrase", "_quoted", "_spans", "kind", "negative", "positive", "regex", "replace",
        "source",
    )  # fmt: skip

    def __init__(
        self,
        kind: str,
        pattern: str,
        replace: masks.Replacer | None = None,
        *,
        source: str,
        positive: tuple[str, ...],
        negative: tuple[str, ...],
        spans: Callable[[str], list[tuple[int, int]]] | None = None,
        quoted: QuotedJudge | None = None,
        phrase: PhraseJudge | None = None,
    ) -> None:
        if not source or not positive or not negative:
            raise ValueError(f"secret shape {kind!r} needs a source and both kinds of example")
        self.kind = kind
        self.regex = re.compile(pattern)
        self.source = source
        self.positive = positive
        self.negative = negative
        masked = masks.mask(kind)
        self.replace: masks.Replacer = replace or (lambda _m: masked)
        self._mask = masked
        self._spans = spans
        self._quoted = quoted
        self._phrase = phrase

    def __repr__(self) -> str:
        return f"SecretPattern({self.kind!r})"

    def sub(self, text: str) -> str:
        """``text`` with every match of this shape masked."""
        if self._spans is None and self._quoted is None:
            return self.regex.sub(self.replace, text)
        parts: list[str] = []
        pos = 0
        for start, end, replacement in self.regions(text):
            parts += (text[pos:start], replacement)
            pos = end
        parts.append(text[pos:])
        return "".join(parts)

    def regions(self, text: str) -> list[Region]:
        """What :meth:`sub` changes in ``text``: each changed match, in order, cut to the
        characters that change (what a replacement keeps of its match stays outside, so the
        redactor can put the mask over exactly the secret's characters)."""
        if self._spans is not None:
            return [(start, end, self._mask) for start, end in self._spans(text)]
        if self._quoted is not None:
            return self._quoted_regions(text, self._quoted)
        found: list[Region] = []
        for m in self.regex.finditer(text):
            old = m.group()
            new = self.replace(m)
            if new != old:
                found.append(_changed(m.start(), old, new))
        return found

    def _quoted_regions(self, text: str, judge: QuotedJudge) -> list[Region]:
        # As re.sub goes, but a quoted value is read to its real end, a phrase to its line's
        # end, and the search goes on after it (each value is read once: linear).
        found: list[Region] = []
        reader = QuoteReader(text)
        pos = 0
        while (m := self.regex.search(text, pos)) is not None:
            pos = m.end()
            opening = m.start("open")
            if m.groupdict().get("block") is not None:
                region = self._block_region(m, reader, judge)
                if region is not None:
                    found.append(region)
                    pos = max(pos, region[1])
                continue
            if opening < 0:
                region = self._phrase_region(m, reader)
                if region is not None:
                    found.append(region)
                    pos = max(pos, region[1])
                    continue
                old = m.group()
                new = self.replace(m)
                if new != old:
                    found.append(_changed(m.start(), old, new))
                continue
            end, closed = reader.value_end(opening)
            high = end - 1 if closed else end
            value = text[opening + 1 : high]
            if not judges.opens_value(value, closed):
                continue  # the quote ends a string in code: the text after it is no value
            if high > opening + 1 and judge(m, value):
                found.append((opening + 1, high, self._mask))
            pos = max(pos, end)
        return found

    def _block_region(
        self, m: re.Match[str], reader: QuoteReader, judge: QuotedJudge
    ) -> Region | None:
        # YAML's block scalar after a credential name (password: |): its value is the lines
        # indented more than the name's line, masked whole as a quoted value is judged.
        low, high = reader.block_span(m.start(), m.end("block"))
        if high <= low or not judge(m, m.string[low:high]):
            return None
        return low, high, self._mask

    def _phrase_region(self, m: re.Match[str], reader: QuoteReader) -> Region | None:
        # An unquoted value after a name that starts its line, read to the line's end: masked
        # whole when the phrase judge says so (ADR 0043).
        if self._phrase is None or m.groupdict().get("secret") is None:
            return None
        groups = m.groupdict()
        if groups.get("query") is not None or groups.get("quote") is not None:
            return None
        text = m.string
        name_end = m.end("name")
        if text.startswith(('"', "'"), name_end):
            return None  # a quoted name ("password": …) is no config line's
        start = m.start("secret")
        if reader.in_connection_string(m.start(), name_end):
            # A connection string's element (Server=db;Password=two words;…): its value runs
            # to the next ";". Masked whole when its first word is a secret, or when it is
            # words with no code in it (a word alone is judged as one, as before).
            end = reader.element_end(start)
            if end <= m.end("secret"):
                return None
            kept = self.replace(m) == m.group()
            if kept and not judges.connection_value(text[start:end], words=True):
                return None
            return start, end, self._mask
        if not reader.starts_a_line(m.start()):
            return None
        end = reader.phrase_end(start)
        if end <= m.end("secret") or not self._phrase(m, text[start:end]):
            return None
        return start, end, self._mask


def _changed(at: int, old: str, new: str) -> Region:
    # The common head and tail of the match and its replacement are kept; at least one
    # character of each remains, so the region and its replacement are never empty.
    limit = min(len(old), len(new)) - 1
    head = 0
    while head < limit and old[head] == new[head]:
        head += 1
    limit -= head
    tail = 0
    while tail < limit and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    return at + head, at + len(old) - tail, new[head : len(new) - tail]
