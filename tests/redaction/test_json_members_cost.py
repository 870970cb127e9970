"""Reading JSON text for its credentials (ADR 0035) costs time linear in the input, however the
input is built.

Three kinds of evidence, none a wall-clock deadline:

- *Structure*: the reader's regexes have no unbounded quantifier inside another
  (``tests/redaction/test_linear_time.py`` holds them to the catalogue's rule).
- *Work counted*: every scanner the reader calls (its token regex, ``json``'s string scanner,
  the escape and closing-quote regexes, the layers it reads) is wrapped and counts the
  characters it goes over. For inputs built to make a careless reader quadratic, ten times the
  input must cost at most eleven times the work, and the work is bounded by a constant times
  the input (one read per JSON string depth).
- *Memory counted*: the peak of what the reader allocates (``tracemalloc``) is at most 64
  bytes per character of the input, and ten times the input at most fifteen times as much
  (lists grow in steps: a peak can hold a list and its next size at once).
- *CPU time* (``process_time``) of the whole redactor on the input and on ten times as much
  stays within ADR 0014's 30x (linear is about 10x, quadratic about 100x).
"""

from __future__ import annotations

import json
import re
import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from nr_llm_core import _json_members as reader
from nr_llm_core.redaction import _is_credential_member, _member_mask, mask_secrets

from ._support import nest


class _Work:
    """Characters gone over by the reader's scanners, and calls made (each counts one)."""

    def __init__(self) -> None:
        self.total = 0

    def add(self, chars: int) -> None:
        self.total += 1 + max(chars, 0)


class _CountedRegex:
    def __init__(self, regex: re.Pattern[str], work: _Work) -> None:
        self.regex, self.work = regex, work

    def match(self, text: str, pos: int = 0) -> re.Match[str] | None:
        m = self.regex.match(text, pos)
        self.work.add((m.end() if m else pos) - pos)
        return m

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        m = self.regex.search(text, pos)
        self.work.add((m.end() if m else len(text)) - pos)
        return m

    def finditer(self, text: str, pos: int = 0, endpos: int = -1) -> Iterator[re.Match[str]]:
        endpos = len(text) if endpos < 0 else endpos
        self.work.add(endpos - pos)
        for m in self.regex.finditer(text, pos, endpos):
            self.work.add(0)
            yield m


class _CountedDecoder:
    def __init__(self, decoder: json.JSONDecoder, work: _Work) -> None:
        self.decoder, self.work = decoder, work

    def raw_decode(self, text: str, idx: int = 0) -> tuple[Any, int]:
        try:
            value, end = self.decoder.raw_decode(text, idx)
        except json.JSONDecodeError as exc:
            # An unterminated string was read to the end; any other failure (an invalid
            # escape) stops the scanner where the error is.
            unterminated = exc.msg.startswith("Unterminated")
            self.work.add((len(text) if unterminated else exc.pos + 6) - idx)
            raise
        self.work.add(end - idx)
        return value, end

    def decode(self, text: str) -> Any:
        self.work.add(len(text))
        return self.decoder.decode(text)


@pytest.fixture
def work(monkeypatch: pytest.MonkeyPatch) -> _Work:
    counted = _Work()
    for name in (
        "_TOKEN",
        "_STRING_ESCAPE",
        "_CLOSING_QUOTE",
        "_JSON_START",
        "_WHOLE_STRING",
        "_PLAIN_STRING",
    ):
        monkeypatch.setattr(reader, name, _CountedRegex(getattr(reader, name), counted))
    monkeypatch.setattr(reader, "_DECODER", _CountedDecoder(reader._DECODER, counted))
    scalars = reader._scalars

    def counted_scalars(text: str, *judges: Any) -> list[Any]:
        counted.add(len(text))  # the layer itself, and the way back built for it
        return scalars(text, *judges)

    monkeypatch.setattr(reader, "_scalars", counted_scalars)
    return counted


# Inputs of about n characters, each built to make one part of a careless reader quadratic.
INPUTS: dict[str, Callable[[int], str]] = {
    # One huge password full of escaped quotes (masked whole: one region over all of it).
    "a-long-value-of-quotes": lambda n: '{"password": "' + 'a\\"' * (n // 3) + '"}',
    # Many members, each with a quote in its password: many regions.
    "many-members": lambda n: "[" + '{"password": "a\\"b"}, ' * (n // 22) + "{}]",
    # JSON Lines of the same.
    "json-lines": lambda n: '{"token": "a\\"b1234"}\n' * (n // 23),
    # A document nested as a JSON string to the reading's depth, and four deeper.
    "nested-to-the-limit": lambda n: nest(
        json.dumps({"k": "x" * n, "password": 'a"b'}), reader.MAX_STRING_DEPTH
    ),
    "nested-beyond-the-limit": lambda n: nest(
        json.dumps({"k": "x" * n, "password": 'a"b'}), reader.MAX_STRING_DEPTH + 4
    ),
    # Deep containers, never closed.
    "open-brackets": lambda n: "[" * n,
    # A string of brackets: read again as JSON text one level down.
    "a-string-of-brackets": lambda n: '"' + "[" * n + '"',
    # Many strings that start like JSON and fail at once.
    "strings-that-fail-early": lambda n: "[" + '"[x", ' * (n // 6) + '""]',
    # Strings that are JSON strings of quotes: every character an escape, read one level down.
    "escaped-quotes-read-again": lambda n: '["' + "\\u0022" * (n // 6) + '"]',
    # A value cut by a cap inside a run of backslashes (no closing quote to find).
    "cut-in-a-backslash-run": lambda n: '{"password": "' + "\\" * n,
    # A value cut inside a JSON string that holds the document.
    "cut-in-a-nested-string": lambda n: '{"k": "{\\"password\\": \\"' + 'a\\\\\\"' * (n // 5),
    # One huge name.
    "a-long-name": lambda n: '{"' + "x" * n + 'password": 12345678}',
    # Escaped surrogate pairs (twelve characters that read as one) in a string read again.
    "surrogate-pairs": lambda n: '["[\\"' + "\\ud83d\\ude00" * (n // 12) + '\\"]"]',
    # Reading from every place JSON may start (the red team of ADR 0035). Starts that fail at
    # once, and after a run of white space:
    "starts-that-fail-at-once": lambda n: "{x[y" * (n // 4),
    "white-space-before-each-failure": lambda n: ("{" + " " * 98 + "x") * (n // 100),
    # Strings with an invalid escape, each closed by the quote that opens the next:
    "strings-with-invalid-escapes": lambda n: '{"a": "\\q' * (n // 9),
    # One invalid escape and no closing quote, before many places JSON may start:
    "an-invalid-escape-never-closed": lambda n: '"\\q' + "{[" * (n // 2),
    # One invalid escape closed only at the end, with many starts in between:
    "an-invalid-escape-closed-at-the-end": lambda n: '["\\q' + '{"a": [' * (n // 7) + '"',
    # Members without their object, and names followed by names:
    "members-without-objects": lambda n: '"password": "a\\"b",\n' * (n // 20),
    "names-in-a-row": lambda n: '"a": ' * (n // 5),
    # Quotes in a row (empty strings), and quotes a backslash escapes (no start at all):
    "quotes": lambda n: '"' * n,
    "escaped-quotes": lambda n: '\\"' * (n // 2),
    # JSON after other text in strings, read one level down:
    "json-after-text-in-strings": lambda n: json.dumps(['x {"token": "a\\"b"} ' * (n // 30)]),
    # A huge credential name over many strings, and over many numbers, in its array (each
    # judged under that name):
    "a-huge-name-over-many-strings": lambda n: (
        '{"' + "x" * (n // 2) + 'password": [' + '"ab", ' * (n // 12) + '"ab"]}'
    ),
    "a-huge-name-over-many-numbers": lambda n: (
        '{"' + "x" * (n // 2) + 'password": [' + "1234, " * (n // 12) + "1]}"
    ),
    # A container under a credential name, deep and wide:
    "under-a-credential-name": lambda n: '{"token": ' + "[" * (n // 4) + '"a\\"b", ' * (n // 16),
}


def _work(work: _Work, text: str) -> int:
    # The judges go over what they are given (a name's normal form, the value's checks): that
    # is counted too; a name the reader says is a credential name is not read again.
    def is_name(name: str) -> bool:
        work.add(len(name))
        return _is_credential_member(name)

    def judge(name: str | None, value: str, quoted: bool, credential: bool) -> str | None:
        work.add(len(value) + (0 if credential or name is None else len(name)))
        return _member_mask(name, value, quoted, credential)

    before = work.total
    reader.mask_members(text, is_name, judge)
    return work.total - before


@pytest.mark.parametrize("name", list(INPUTS))
def test_ten_times_the_input_is_at_most_eleven_times_the_work(work: _Work, name: str) -> None:
    build = INPUTS[name]
    small, large = build(20_000), build(200_000)
    small_work, large_work = _work(work, small), _work(work, large)
    assert large_work <= 11 * small_work, (small_work, large_work)
    # One read per JSON string depth, each a few passes over its layer.
    assert large_work <= 4 * (reader.MAX_STRING_DEPTH + 1) * len(large), (large_work, len(large))


@pytest.mark.parametrize("name", ["a-long-value-of-quotes", "many-members", "open-brackets"])
def test_the_work_is_a_few_passes_over_the_input(work: _Work, name: str) -> None:
    """Where nothing is nested, the reader goes over the input a few times, not once per
    member or per depth."""
    text = INPUTS[name](200_000)
    assert _work(work, text) <= 4 * len(text)


def _peak(text: str) -> int:
    tracemalloc.start()
    try:
        reader.mask_members(text, _is_credential_member, _member_mask)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("name", list(INPUTS))
def test_the_memory_is_linear_in_the_input(name: str) -> None:
    """The reader keeps only what matters (strings under a credential name or holding JSON,
    one entry per credential name rather than per open bracket): a megabyte of open brackets
    or of empty strings holds no more than a few bytes per character."""
    small, large = INPUTS[name](10_000), INPUTS[name](100_000)
    small_peak, large_peak = _peak(small), _peak(large)
    assert large_peak <= 64 * len(large), (large_peak, len(large))
    assert large_peak <= 15 * max(small_peak, 32 * 1024), (small_peak, large_peak)


def _cpu(text: str, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        mask_secrets(text)
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.parametrize(
    "name",
    [
        "a-long-value-of-quotes",
        "many-members",
        "nested-to-the-limit",
        "a-string-of-brackets",
        "cut-in-a-backslash-run",
        "surrogate-pairs",
        "a-huge-name-over-many-strings",
        "a-huge-name-over-many-numbers",
    ],
)
def test_ten_times_the_input_costs_about_ten_times_the_cpu(name: str) -> None:
    """The whole redactor (JSON members, the catalogue as written and as read): CPU time
    (``process_time``, not the wall clock) of the input and of ten times as much; 30 is the
    bound ADR 0014 set. The small input is timed twice (the faster counts)."""
    build = INPUTS[name]
    small, large = _cpu(build(20_000), 2), _cpu(build(200_000), 1)
    assert large <= 30 * max(small, 1e-3), (small, large)
