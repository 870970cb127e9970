"""The catalogue runs in linear time: checked on the regexes' structure and on 1 MB inputs.

Two kinds of evidence, neither a wall-clock deadline. The structure: every regex is parsed and
held to the rule of nr_llm_core/redaction.py (no unbounded quantifier inside another; a pattern
with an unbounded run starts with a negative lookbehind covering the class it may start in).
The behaviour: for every shape, inputs built from its first example (the example repeated, the
part before the secret repeated, that part with half the secret repeated, half the secret
repeated as one long run) are masked at 100 KB and at 1 MB, and the CPU time at 1 MB must stay
within three times the tenfold of the time at 100 KB: a linear shape takes about 10x, a
quadratic one about 100x (a shape without its lookbehind measured 150x on 10 KB → 100 KB).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from re import _constants as sre  # the parsed form of a pattern: the only way to read its shape
from re import _parser as sre_parse
from typing import Any

import pytest

from nr_llm_core import _json_members as json_members
from nr_llm_core import _masks, _secret_checks, _value_judges
from nr_llm_core.redaction import SECRET_PATTERNS

# Every regex the redactor runs: the catalogue's, and every one of the modules whose checks read
# a matched value (found, not listed: a regex added to them is checked without a line here).
REGEXES = [pytest.param(s.regex, id=f"{i:02d}-{s.kind}") for i, s in enumerate(SECRET_PATTERNS)]
_FOUND: dict[int, Any] = {}
for _module in (_masks, _secret_checks, _value_judges):
    for _name, _value in sorted(vars(_module).items()):
        if isinstance(_value, re.Pattern) and id(_value) not in _FOUND:  # one imported: once
            _short = _module.__name__.rpartition(".")[2]
            _FOUND[id(_value)] = pytest.param(_value, id=f"{_short}.{_name}")
REGEXES += list(_FOUND.values())
# The reader of JSON text (ADR 0035): its tokens, escapes and the search for a closing quote.
REGEXES += [
    pytest.param(getattr(json_members, name), id=name)
    for name in ("_TOKEN", "_JSON_START", "_STRING_ESCAPE", "_CLOSING_QUOTE")
]

ROOT = Path(__file__).resolve().parents[2]
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)


def _children(op: Any, av: Any) -> list[Any]:
    if op is sre.SUBPATTERN:
        return [av[3]]
    if op is sre.BRANCH:
        return list(av[1])
    if op in (sre.ASSERT, sre.ASSERT_NOT):
        return [av[1]]
    if op in _REPEATS:
        return [av[2]]
    if op is sre.ATOMIC_GROUP:
        return [av]
    if op is sre.GROUPREF_EXISTS:
        return [p for p in av[1:] if p is not None]
    return []


def _repeats(parsed: Any) -> Iterator[tuple[int, Any]]:
    """Every repeat in ``parsed``: (its upper bound, its body)."""
    for op, av in parsed:
        if op in _REPEATS:
            yield av[1], av[2]
        for child in _children(op, av):
            yield from _repeats(child)


def _unbounded(parsed: Any) -> bool:
    return any(high == sre.MAXREPEAT for high, _ in _repeats(parsed))


@pytest.mark.parametrize("regex", REGEXES)
def test_no_unbounded_quantifier_sits_inside_another_quantifier(regex: re.Pattern[str]) -> None:
    for high, body in _repeats(sre_parse.parse(regex.pattern)):
        inner = [h for h, _ in _repeats(body)]
        if high == sre.MAXREPEAT:
            assert not inner, f"{regex.pattern!r}: an unbounded repeat of a repeat"
        elif high > 1:  # an optional group ("?") is not a repetition
            assert sre.MAXREPEAT not in inner, f"{regex.pattern!r}: a repeat of an unbounded run"


def _first_class(parsed: Any) -> tuple[list[Any], bool] | None:
    """The character class a match may start in (with its ignore-case flag), if it is one."""
    ignorecase = False
    while parsed:
        op, av = parsed[0]
        if op is sre.SUBPATTERN:
            ignorecase = ignorecase or bool(av[1] & sre.SRE_FLAG_IGNORECASE)
            parsed = av[3]
        elif op in _REPEATS and av[0] > 0:
            parsed = av[2]
        elif op is sre.IN:
            return av, ignorecase
        else:
            return None
    return None


def _in_class(items: list[Any], ch: str) -> bool:
    code = ord(ch)
    hit = False
    negate = False
    for op, av in items:
        if op is sre.NEGATE:
            negate = True
        elif op is sre.LITERAL:
            hit = hit or code == av
        elif op is sre.RANGE:
            hit = hit or av[0] <= code <= av[1]
        elif op is sre.CATEGORY:
            hit = hit or re.fullmatch(_CATEGORIES[av], ch) is not None
        else:  # pragma: no cover - a class form the catalogue does not use
            raise AssertionError(f"class item {op} not understood")
    return hit != negate


_CATEGORIES = {
    sre.CATEGORY_DIGIT: r"\d",
    sre.CATEGORY_NOT_DIGIT: r"\D",
    sre.CATEGORY_SPACE: r"\s",
    sre.CATEGORY_NOT_SPACE: r"\S",
    sre.CATEGORY_WORD: r"\w",
    sre.CATEGORY_NOT_WORD: r"\W",
}
_SAMPLE = [chr(c) for c in range(0x20, 0x7F)] + ["\t", "\n", "é", "€", "\u200b", "\U0001f600"]


@pytest.mark.parametrize("regex", REGEXES[: len(SECRET_PATTERNS)])
def test_a_pattern_with_an_unbounded_run_starts_only_at_the_edge_of_one(
    regex: re.Pattern[str],
) -> None:
    parsed = sre_parse.parse(regex.pattern)
    if not _unbounded(parsed):
        return  # every attempt does bounded work
    op, av = parsed[0]
    assert op is sre.ASSERT_NOT and av[0] == -1, f"{regex.pattern!r} needs a lookbehind anchor"
    lookbehind = _first_class(av[1])
    start = _first_class(list(parsed)[1:])
    if start is None:
        return  # starts with a literal: the lookbehind keeps it off runs of its own body
    assert lookbehind is not None
    items, ignorecase = start
    for ch in _SAMPLE:
        variants = {ch, ch.lower(), ch.upper()} if ignorecase else {ch}
        if any(_in_class(items, v) for v in variants):
            assert _in_class(lookbehind[0], ch), f"{regex.pattern!r}: may start after {ch!r}"


# -- behaviour ------------------------------------------------------------------------------------

# Runs in a child process so that a pattern that does hang turns into a failed test (timeout),
# not a hung suite. It prints, per shape, the CPU time (process_time: not the wall clock) spent
# masking its inputs at 100 KB and at 1 MB, the faster of two runs each.
_MEASURE = textwrap.dedent(
    """
    import json, sys, time
    from nr_llm_core.redaction import SECRET_PATTERNS, mask_secrets
    from tests.redaction.examples import secrets, unmarked

    def units(shape):
        text, secret = unmarked(shape.positive[0]), secrets(shape.positive[0])[0]
        before, head = text[: text.index(secret)], secret[: max(1, len(secret) // 2)]
        # The example; its start cut in the secret; what precedes the secret; the secret's
        # first half, one long run with no end (where a shape without its lookbehind rescans).
        return [u for u in (text, before + head, before, head) if u]

    def grow(unit, n):
        return (unit * (n // len(unit) + 1))[:n]

    def cpu(fn, text):
        best = float("inf")
        for _ in range(2):
            start = time.process_time()
            fn(text)
            best = min(best, time.process_time() - start)
        return best

    out = {}
    for i, shape in enumerate(SECRET_PATTERNS):
        small = large = 0.0
        for unit in dict.fromkeys(units(shape)):
            small += cpu(shape.sub, grow(unit, 100_000))
            large += cpu(shape.sub, grow(unit, 1_000_000))
        mask_secrets(grow(units(shape)[0], 100_000))  # the whole catalogue, to its fixed point
        out[f"{i:02d}-{shape.kind}"] = [small, large]
    print(json.dumps(out))
    """
)


@pytest.fixture(scope="module")
def cpu_times() -> dict[str, list[float]]:
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    times: dict[str, list[float]] = json.loads(done.stdout)
    return times


# 10x the input costs about 10x for a linear shape and about 100x for a quadratic one.
MAX_RATIO = 30


@pytest.mark.parametrize("shape_id", [f"{i:02d}-{s.kind}" for i, s in enumerate(SECRET_PATTERNS)])
def test_ten_times_the_input_costs_about_ten_times_the_cpu(
    cpu_times: dict[str, list[float]], shape_id: str
) -> None:
    small, large = cpu_times[shape_id]
    assert large <= MAX_RATIO * max(small, 1e-4), (shape_id, small, large)
