"""The decoded view the redactor reads encoded text through (nr_llm_core/_decoded_view.py):
what it decodes and leaves alone, how replacements find their way back to the characters
they came from, and that it costs time linear in its input however the input is built."""

from __future__ import annotations

import json
import time
from re import _constants as sre  # the parsed form of a pattern: the only way to read its shape
from re import _parser as sre_parse

import pytest

from nr_llm_core._decoded_view import _ESCAPE, MAX_LAYERS, DecodedView
from nr_llm_core.redaction import mask_secrets, redact_text


def view(text: str) -> DecodedView:
    made = DecodedView.of(text)
    assert made is not None, text
    return made


@pytest.mark.parametrize(
    ("source", "decoded"),
    [
        ('{\\"a\\": 1}', '{"a": 1}'),
        ('\\\\\\"x\\\\\\"', '"x"'),  # JSON in JSON in JSON: a run of three, then the quote
        ("\\" * 31 + '"', '"'),  # six levels deep
        ("it\\'s", "it's"),
        ("https:\\/\\/example.com\\/a", "https://example.com/a"),
        ("a\\nb\\tc\\rd", "a\nb\tc\rd"),
        ("\\u0041KIA", "AKIA"),
        ("\\\\\\\\u0041", "A"),
        ("\\u00e9t\\u00E9", "été"),
        ("a%3Db%22c%2Fd", 'a=b"c/d'),
        ("&quot;x&quot; &amp; &lt;&gt; &apos;&#39;&#x41;", "\"x\" & <> ''A"),
        ("%2522", '"'),  # URL-encoded twice: two layers
        ("&amp;quot;", '"'),
    ],
)
def test_what_is_decoded(source: str, decoded: str) -> None:
    assert view(source).text == decoded


@pytest.mark.parametrize(
    "source",
    [
        "plain text, 100% sure",
        "C:\\Users\\ann",  # a backslash before an ordinary letter stays
        "\\" * 1000,  # a run with nothing after it
        "%0A%00%7F%FF",  # not printable ASCII
        "\\ud83d\\ude00",  # surrogate halves
        "&#0; &#x110000; &nbsp; &quot",  # NUL, beyond Unicode, a name not decoded, no ";"
        "\\u12G4 %G1 %4",
    ],
)
def test_what_is_left_as_written(source: str) -> None:
    assert DecodedView.of(source) is None


def test_layers_stop_at_the_limit() -> None:
    """``%25`` decodes to ``%``: four times URL-encoded, three layers leave one ``%22``."""
    source = '"'
    for _ in range(MAX_LAYERS + 1):
        source = source.replace("%", "%25").replace('"', "%22")
    assert view(source).text == "%22"


def test_a_replacement_covers_the_characters_it_came_from() -> None:
    made = view("k=\\u0041\\u0042C;rest\\n")
    assert made.text == "k=ABC;rest\n"
    made.replace([(2, 5, "[M]")])
    assert made.text == "k=[M];rest\n"
    assert made.source_with_replacements() == "k=[M];rest\\n"


def test_a_later_replacement_takes_in_the_group_it_touches() -> None:
    """A second pattern whose match starts inside the first one's mask replaces the whole
    mask: the stored text gets one replacement over the union of both source spans."""
    made = view("a=\\u0031\\u0032 b=\\u0033 c")
    assert made.text == "a=12 b=3 c"
    made.replace([(2, 4, "[X]")])
    assert made.text == "a=[X] b=3 c"
    made.replace([(3, 9, "Y")])  # from inside [X] through "3"
    assert made.text == "a=[Y c"
    assert made.source_with_replacements() == "a=[Y c"


def test_two_regions_inside_one_group_become_one_replacement() -> None:
    made = view("x\\u0041\\u0042y")
    made.replace([(1, 3, "[LONGMASK]")])
    made.replace([(2, 3, "1"), (5, 6, "2")])
    assert made.text == "x[1ON2MASK]y"
    assert made.source_with_replacements() == "x[1ON2MASK]y"


@pytest.mark.parametrize(
    "regions",
    [[(3, 2, "x")], [(0, 0, "x")], [(0, 1, "")], [(2, 3, "x"), (1, 2, "y")], [(0, 99, "x")]],
)
def test_regions_out_of_order_or_empty_are_refused(regions: list[tuple[int, int, str]]) -> None:
    with pytest.raises(ValueError):
        view("ab\\u0043de").replace(regions)


def test_the_stored_json_stays_the_same_json() -> None:
    """A masked secret deep in nested JSON: every level still parses, and only the secret's
    characters changed."""
    inner = {"user": "ann", "password": "Tr0ub4dor&3xyz", "note": 'say "hi"\n'}
    text = json.dumps(json.dumps(json.dumps(inner)))
    out = redact_text(text)
    decoded = json.loads(json.loads(json.loads(out)))
    assert decoded == {**inner, "password": "[REDACTED:credential-value]"}


# -- linear time --------------------------------------------------------------------------------


def test_the_escape_pattern_has_no_nested_run_and_starts_at_the_edge_of_a_run() -> None:
    """The structure that keeps it linear: nothing unbounded but the run of backslashes,
    which is possessive and starts only where the previous character is not a backslash."""
    parsed = sre_parse.parse(_ESCAPE.pattern)
    (op, (_, branches)) = parsed[0]
    assert op is sre.BRANCH and len(parsed) == 1
    unbounded = []
    for branch in branches:
        for item_op, av in branch:
            repeat = item_op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)
            if repeat and av[1] == sre.MAXREPEAT:
                unbounded.append((branch, item_op))
    assert len(unbounded) == 1
    branch, repeat = unbounded[0]
    assert repeat is sre.POSSESSIVE_REPEAT
    assert branch[0][0] is sre.ASSERT_NOT and branch[0][1][0] == -1  # a lookbehind first
    assert list(branch[0][1][1]) == [(sre.LITERAL, ord("\\"))]


# Inputs built to make a careless decoder or mapping quadratic: one long run of backslashes
# with nothing after it, JSON quotes nested deep and repeated, every character an escape,
# escapes that decode into new escapes for the next layer, and secrets in each (so that
# replacements and the way back are exercised too). Sizes: (small, ten times as much).
UNITS = [
    pytest.param("\\", 100_000, id="backslashes-1MB"),
    pytest.param("\\" * 7 + '"', 30_000, id="json-quotes-level-3"),
    pytest.param("\\u0041", 30_000, id="unicode-escapes"),
    pytest.param("%2525", 30_000, id="percent-layers"),
    pytest.param(
        '\\\\\\"password\\\\\\": \\\\\\"hunter2hunter\\\\\\", ', 20_000, id="json-3-passwords"
    ),
    pytest.param("%22password%22%3A%22hunter2hunter%22%2C", 20_000, id="percent-passwords"),
    pytest.param("\\u0041KIAIOSFODNN7EXAMPLE ", 20_000, id="escaped-aws-keys"),
]


def _cpu(text: str, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        mask_secrets(text)
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.parametrize(("unit", "size"), UNITS)
def test_ten_times_the_input_costs_about_ten_times_the_cpu(unit: str, size: int) -> None:
    """CPU time (``process_time``, not the wall clock) of the input and of ten times as much:
    a linear cost grows about tenfold, a quadratic one about a hundredfold; 30 is the bound
    ADR 0014 set. The small input is timed twice (the faster counts): noise weighs most there."""

    def grow(n: int) -> str:
        return (unit * (n // len(unit) + 1))[:n]

    small, large = _cpu(grow(size), 2), _cpu(grow(10 * size), 1)
    assert large <= 30 * max(small, 1e-3), (small, large)


def test_a_megabyte_of_backslashes_then_a_quote_is_one_escape() -> None:
    """The run is read once: the view holds one character for it."""
    made = view("\\" * 1_000_000 + '"')
    assert made.text == '"'
