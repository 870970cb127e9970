"""Reading quoted values to their real end (ADR 0040) costs work linear in the input.

Counted, not timed: every search and match the quote reader makes
(:class:`nr_llm_core._quoted_values.QuoteReader`) and every search of the shapes that call it
count the characters they go over. For inputs built to make a careless reader quadratic (many
quotes side by side, quotes never closed, each value read to the end of a long line and kept,
huge values), ten times the input must cost at most eleven times the work, and the work is
bounded by a constant times the input. The reader's regexes are held to the catalogue's
structural rule (no unbounded repeat inside another) here too. The whole redactor is counted
the same way (ADR 0043): every regex it runs counts what it goes over, and ten times the input
must cost at most eleven times the work (it replaced a CPU-time ratio of 30x, which a
quadratic reader could pass on small inputs).
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from collections.abc import Callable
from re import _constants as sre  # the parsed form of a pattern: the only way to read its shape
from re import _parser as sre_parse
from typing import Any

import pytest

from nr_llm_core import _json_members, _secret_pattern
from nr_llm_core import _quoted_values as reader
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
    # A quoted value never closed, a backslash at each line's end (the red team's: 1 MB took
    # 24 s), with either quote, after "=" too, and with JSON's escaped line breaks.
    "backslash-line-ends": lambda n: 'password: "a\\\n' * (n // 15),
    "backslash-line-ends-single": lambda n: "password: 'a\\\n" * (n // 15),
    "backslash-line-ends-assigned": lambda n: 'password="\\\n' * (n // 12),
    "backslash-line-ends-in-a-json-string": lambda n: (
        '["' + 'password: \\"a\\\\\\n' * (n // 17) + '"]'
    ),
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


class _CountingRegex:
    """A compiled regex whose every call counts the characters it may go over: from where a
    search or match starts to where it ends (to the end of the text when nothing is found),
    the whole text for the calls that scan it all."""

    def __init__(self, regex: re.Pattern[str], work: _Work) -> None:
        self.regex, self.work = regex, work

    def __hash__(self) -> int:  # a key of the reader's tables still finds its entry
        return hash(self.regex)

    def __eq__(self, other: object) -> bool:
        return other is self or other is self.regex

    def search(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        m = self.regex.search(text, pos, endpos)
        self.work.add((m.end() if m else min(endpos, len(text))) - pos)
        return m

    def match(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        m = self.regex.match(text, pos, endpos)
        self.work.add((m.end() if m else pos) - pos)
        return m

    def fullmatch(self, text: str, *args: int) -> re.Match[str] | None:
        self.work.add(len(text))
        return self.regex.fullmatch(text, *args)

    def __getattr__(self, name: str) -> Any:
        call = getattr(self.regex, name)
        if name not in ("finditer", "findall", "sub", "subn", "split"):
            return call

        def whole(*args: Any, **kwargs: Any) -> Any:
            text = args[1] if name in ("sub", "subn") else args[0]
            self.work.add(len(text))
            return call(*args, **kwargs)

        return whole


_REDACTOR_MODULES = (
    "nr_llm_core.redaction",
    "nr_llm_core._secret_checks",
    "nr_llm_core._value_judges",
    "nr_llm_core._masks",
    "nr_llm_core._secret_pattern",
    "nr_llm_core._quoted_values",
    "nr_llm_core._named_value_shapes",
    "nr_llm_core._token_shapes",
    "nr_llm_core._json_members",
    "nr_llm_core._decoded_view",
)


@pytest.fixture
def every_regex(monkeypatch: pytest.MonkeyPatch) -> _Work:
    """Every regex the redactor runs, counted: the catalogue's shapes and each module's own
    (those held in tables too)."""
    counted = _Work()
    for shape in SECRET_PATTERNS:
        monkeypatch.setattr(shape, "regex", _CountingRegex(shape.regex, counted))
    for name in _REDACTOR_MODULES:
        module = importlib.import_module(name)
        for attr, value in list(vars(module).items()):
            if isinstance(value, re.Pattern):
                monkeypatch.setattr(module, attr, _CountingRegex(value, counted))
            elif isinstance(value, dict) and any(isinstance(v, re.Pattern) for v in value.values()):
                for key, regex in list(value.items()):
                    monkeypatch.setitem(value, key, _CountingRegex(regex, counted))
    monkeypatch.setattr(
        _json_members, "_DECODER", _CountingDecoder(_json_members._DECODER, counted)
    )
    return counted


class _CountingDecoder:
    """The JSON reader's decoder, counted as a regex is: what a decode goes over; and when it
    fails, what its error costs to build (``json`` counts the line breaks from the text's
    start to where it failed, for the error's line number)."""

    def __init__(self, decoder: json.JSONDecoder, work: _Work) -> None:
        self.decoder, self.work = decoder, work

    def raw_decode(self, text: str, idx: int = 0) -> tuple[Any, int]:
        try:
            value, end = self.decoder.raw_decode(text, idx)
        except json.JSONDecodeError as e:
            self.work.add(e.pos - idx + e.pos)
            raise
        self.work.add(end - idx)
        return value, end

    def decode(self, text: str) -> Any:
        try:
            value = self.decoder.decode(text)
        except json.JSONDecodeError as e:
            self.work.add(2 * e.pos)
            raise
        self.work.add(len(text))
        return value


# The inputs above, and those of ADR 0043's forms: quoted values that start with a space (code
# whose quote ends a string, read on to find no closing quote), values over lines never
# closed, phrases, command lines, encoded JSON.
WHOLE_INPUTS: dict[str, Callable[[int], str]] = {
    **INPUTS,
    "spaced-quotes": lambda n: 'x = "token: " + t\n' * (n // 18),
    "spaced-unclosed": lambda n: 'password: " a\n' * (n // 14),
    "lines-never-closed": lambda n: 'password: "a\n' + "b\n" * (n // 2),
    "many-lines-never-closed": lambda n: 'password: "a\n' * (n // 14),
    "single-lines-never-closed": lambda n: "PASSWORD='a\n" * (n // 13),
    "phrases": lambda n: "password = two words here\n" * (n // 26),
    "a-long-phrase": lambda n: "password = " + "word " * (n // 5),
    "flags": lambda n: "tool --password s3cret-1 --token=abc " * (n // 38),
    "mysql-lines": lambda n: "mysql -u root -ps3cret " * (n // 23),
    "mysql-without-flag": lambda n: "mysql " + "-u " * (n // 3),
    "url-json": lambda n: "%7B%22password%22%3A%22a%5C%22b%20c%22%7D+" * (n // 42),
    # ADR 0046's forms: block scalars (one after another, one long, never indented), connection
    # string elements never closed, SQL literals, XML, .netrc, curl, name/value pairs.
    "block-scalars": lambda n: "password: |\n" * (n // 12),
    "a-long-block": lambda n: "password: |\n" + "  a b\n" * (n // 6),
    "indented-blocks": lambda n: "  password: |\n  x\n" * (n // 18),
    "connection-elements": lambda n: ";Password=a b" * (n // 13),
    "sql-literals": lambda n: "PASSWORD 'a" * (n // 11),
    "xml-elements": lambda n: "<password>" * (n // 10),
    "netrc-lines": lambda n: "machine a login b password " * (n // 27),
    "curl-users": lambda n: "curl -u a:" * (n // 10),
    "name-value-pairs": lambda n: (
        "[" + '{"name": "DB_PASSWORD", "value": "x"}, ' * (n // 40) + "0]"
    ),
}


@pytest.mark.parametrize("name", sorted(WHOLE_INPUTS))
def test_the_whole_redactor_does_linear_work(name: str, every_regex: _Work) -> None:
    """Counted, not timed: the characters every regex of the whole redactor may go over (each
    search from its start to its end, each scan of a whole text), for ten times the input, at
    most eleven times the work. A reader that starts again where it started (quadratic) does
    about a hundred times the work there: the bound fails it with a wide margin."""
    build = WHOLE_INPUTS[name]
    costs = []
    for n in (5_000, 50_000):
        text = build(n)
        every_regex.total = 0
        mask_secrets(text)
        costs.append((len(text), every_regex.total))
    (small_len, small), (large_len, large) = costs
    assert small > small_len, costs  # the counting sees the work
    assert large <= 11 * small * large_len / (10 * small_len) + 1_000, costs


def test_the_quoted_shapes_are_the_ones_counted() -> None:
    assert {s.kind for s in QUOTED_SHAPES} == {"credential-value"}
    assert len(QUOTED_SHAPES) == 5  # names, -p'…', flags, known clients' -p (ADR 0043), SQL
    assert _secret_pattern.QuoteReader is reader.QuoteReader
