"""Reading quoted values to their real end (ADR 0040) costs work linear in the input.

Counted, not timed: every search and match the quote reader makes
(:class:`nr_llm_core._quoted_values.QuoteReader`) and every search of the shapes that call it
count the characters they go over. For inputs built to make a careless reader quadratic (many
quotes side by side, quotes never closed, each value read to the end of a long line and kept,
huge values), ten times the input must cost at most eleven times the work, and the work is
bounded by a constant times the input. The reader's regexes are held to the catalogue's
structural rule (no unbounded repeat inside another) here too; the CPU time of the whole
redactor stays within ADR 0014's 30x.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from re import _constants as sre  # the parsed form of a pattern: the only way to read its shape
from re import _parser as sre_parse
from typing import Any

import pytest

from nr_llm_core import _quoted_values as reader
from nr_llm_core import _secret_pattern
from nr_llm_core.redaction import SECRET_PATTERNS, mask_secrets

from .test_linear_time import _repeats


class _Work:
    def __init__(self) -> None:
        self.total = 0

    def add(self, chars: int) -> None:
        self.total += 1 + max(chars, 0)


class _CountedPattern:
    """A shape's regex whose searches count what they go over."""

    def __init__(self, regex: re.Pattern[str], work: _Work) -> None:
        self.regex, self.work = regex, work

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        m = self.regex.search(text, pos)
        self.work.add((m.end() if m else len(text)) - pos)
        return m

    def __getattr__(self, name: str) -> Any:
        return getattr(self.regex, name)


@pytest.fixture
def work(monkeypatch: pytest.MonkeyPatch) -> _Work:
    counted = _Work()
    search = reader.QuoteReader.regex_search

    def counted_search(self: Any, regex: re.Pattern[str], pos: int) -> re.Match[str] | None:
        m = search(self, regex, pos)
        counted.add((m.end() if m else len(self.text)) - pos)
        return m

    monkeypatch.setattr(reader.QuoteReader, "regex_search", counted_search)

    class CountedBare:
        def match(self, text: str, pos: int) -> re.Match[str] | None:
            m = bare.match(text, pos)
            counted.add((m.end() if m else pos) - pos)
            return m

    bare = reader._BARE
    monkeypatch.setattr(reader, "_BARE", CountedBare())
    return counted


QUOTED_SHAPES = [s for s in SECRET_PATTERNS if s._quoted is not None]


def _regions(text: str, work: _Work) -> None:
    for shape in QUOTED_SHAPES:
        regex = shape.regex
        shape.regex = _CountedPattern(regex, work)  # type: ignore[assignment]
        try:
            shape.regions(text)
        finally:
            shape.regex = regex


INPUTS: dict[str, Callable[[int], str]] = {
    # Parts side by side, thousands of them: one value.
    "many-parts": lambda n: "PASSWORD='a'" + "\"'\"'b'" * (n // 7),
    # YAML's doubled quote, thousands of times.
    "doubled-quotes": lambda n: "password: '" + "x''" * (n // 3) + "'",
    # One huge value, and one never closed.
    "a-huge-value": lambda n: 'password: "' + "x" * n + '"',
    "never-closed": lambda n: 'password: "' + 'x\\"' * (n // 3),
    # Values kept whole (templates), each with a part whose closing quote is looked for to
    # the end of the line: the search must not be repeated for every value on that line.
    "unclosed-parts-to-the-line-end": lambda n: 'token: "{"\'x", ' * (n // 14),
    "unclosed-double-parts": lambda n: "token: '{'\"x', " * (n // 14),
    "kept-values": lambda n: 'token: "{\\" password: "{\\" ' * (n // 27),
    # Many names, each value unclosed and ending at the quote of a JSON string.
    "unclosed-in-json-strings": lambda n: "[" + '"PASSWORD=\'a", ' * (n // 16) + '""]',
    # Escaped line breaks, as a JSON string writes them, after unclosed single quotes.
    "escaped-line-breaks": lambda n: "PASSWORD='a\\n" * (n // 13),
    # A quote after every closing quote that ends a string.
    "closing-quotes": lambda n: "password: 'a'" + "', " * (n // 3),
    # Backslash runs before quotes.
    "backslash-runs": lambda n: 'password: "' + "\\" * n + '"',
    "mysql-flags": lambda n: "mysql -p'" + "a'\\''" * (n // 6),
}


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_ten_times_the_input_is_at_most_eleven_times_the_work(name: str, work: _Work) -> None:
    build = INPUTS[name]
    costs = []
    for n in (20_000, 200_000):
        text = build(n)
        work.total = 0
        _regions(text, work)
        costs.append((len(text), work.total))
    (small_len, small), (large_len, large) = costs
    assert large <= 11 * small * large_len / (10 * small_len) + 100, costs
    assert large <= 12 * large_len, costs  # a constant times the input


def test_the_reader_regexes_have_no_repeat_inside_an_unbounded_one() -> None:
    regexes = [
        reader._DOUBLE_END,
        reader._SINGLE_END,
        reader._SINGLE_END_ESCAPED,
        reader._BARE,
        reader._ENDS_A_STRING,
        *reader._UNCLOSED_END.values(),
    ]
    for regex in regexes:
        for high, body in _repeats(sre_parse.parse(regex.pattern)):
            inner = [h for h, _ in _repeats(body)]
            if high == sre.MAXREPEAT:
                assert not inner, regex.pattern


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_the_whole_redactor_stays_linear_in_cpu_time(name: str) -> None:
    """Not a deadline: the ratio of two CPU times (``process_time``), as ADR 0014 measures."""
    build = INPUTS[name]

    def cpu(text: str) -> float:
        best = float("inf")
        for _ in range(2):
            start = time.process_time()
            mask_secrets(text)
            best = min(best, time.process_time() - start)
        return best

    small, large = cpu(build(20_000)), cpu(build(200_000))
    assert large <= 30 * max(small, 0.002), (small, large)


def test_the_quoted_shapes_are_the_ones_counted() -> None:
    assert {s.kind for s in QUOTED_SHAPES} == {"credential-value"}
    assert len(QUOTED_SHAPES) == 2
    assert _secret_pattern.QuoteReader is reader.QuoteReader
