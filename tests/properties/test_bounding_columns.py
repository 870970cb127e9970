"""The walk by columns against the walk value by value: the same copy, the same exact count,
the same refusal, for long lists of every shape its shortcuts read (ADR 0027).

The value-by-value walk is the reference: every long list is read again with
``bounding._LONG_LIST`` out of reach, so that nothing goes by columns."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nr_llm_core import MAX_ARTIFACT_BYTES, bounding
from nr_llm_core.bounding import INT_MAX, INT_MIN, REASON_TOO_LARGE
from nr_llm_core.encoding import encode_json

from ..core.forge import forged_artifact
from .test_bounding_properties import (
    HostileDict,
    HostileFloat,
    HostileInt,
    HostileList,
    HostileStr,
    HostileTuple,
    escaped_text,
    measured,
    measured_leaves,
)

Outcome = tuple[Any, int] | str


def outcome(rows: Any, *, columns: bool, label: str = "", cap: int = MAX_ARTIFACT_BYTES) -> Outcome:
    """The copy of ``{"rows": rows}`` and its count, or the refusal's reason, with a byte
    budget of ``cap``."""
    artifact = forged_artifact({"rows": rows}, label=label)
    with pytest.MonkeyPatch.context() as patch:
        if not columns:
            patch.setattr(bounding, "_LONG_LIST", sys.maxsize)
        patch.setattr(bounding, "MAX_ARTIFACT_BYTES", cap)
        try:
            (copy,), size = bounding._canonical_artifacts((artifact,))
        except bounding._Refused as refused:
            return refused.reason
    return copy.data["rows"], size


def plain(value: Any) -> bool:
    """Whether ``value`` is made of exact JSON types only (what a copy must be)."""
    stack = [value]
    while stack:
        node = stack.pop()
        t = type(node)
        if t is list:
            stack.extend(node)
        elif t is dict:
            if any(type(k) is not str for k in node):
                return False
            stack.extend(node.values())
        elif t not in (str, int, float, bool, type(None)):
            return False
    return True


#: A budget nothing generated here exceeds: a refusal can only be for an unencodable value.
AMPLE = 10**9


def assert_same(rows: Any) -> None:
    """Both walks give the same outcome; a kept copy is plain and counted as encoded."""
    by_columns = outcome(rows, columns=True, cap=AMPLE)
    one_by_one = outcome(rows, columns=False, cap=AMPLE)
    if isinstance(one_by_one, str):
        assert by_columns == one_by_one
        return
    assert not isinstance(by_columns, str), by_columns
    (copy, size), (reference, reference_size) = by_columns, one_by_one
    assert copy == reference
    written = encode_json([{"type": "text", "label": "", "data": {"rows": copy}}])
    assert written == encode_json([{"type": "text", "label": "", "data": {"rows": reference}}])
    assert size == reference_size == len(written)
    assert plain(copy)


# -- columns: each position of a row draws its cells from one kind -------------------------------

pair = st.just("\ud83d\ude00")  # a split surrogate pair: one character once coerced
text = st.one_of(escaped_text, pair)
hostile = st.one_of(
    escaped_text.map(HostileStr),
    st.integers(INT_MIN, INT_MAX).map(HostileInt),
    st.floats(allow_nan=False, allow_infinity=False).map(HostileFloat),
    st.lists(measured_leaves, max_size=3).map(HostileList),
    st.lists(measured_leaves, max_size=3).map(HostileTuple),
    st.dictionaries(escaped_text.map(HostileStr), measured_leaves, max_size=2).map(HostileDict),
)
KINDS: dict[str, st.SearchStrategy[Any]] = {
    "digits": st.integers(0, 9),
    "negative digits": st.integers(-9, -1),
    "one length, two signs": st.sampled_from([-1, 10, 5, -5, 99]),
    "small ints": st.integers(-1000, 1000),
    "64-bit ints": st.integers(INT_MIN, INT_MAX),
    "edges": st.sampled_from([INT_MAX, INT_MAX - 1, INT_MIN, INT_MIN + 1, 10**18, -(10**18)]),
    "beyond 64 bits": st.sampled_from([INT_MAX + 1, INT_MIN - 1, 2**70]),
    "floats": st.floats(allow_nan=False, allow_infinity=False),
    "any float": st.floats(),
    "bools and null": st.sampled_from([True, False, None]),
    "int or null": st.one_of(st.none(), st.integers(-(10**6), 10**6)),
    "numbers": st.one_of(st.integers(INT_MIN, INT_MAX), st.floats(allow_nan=False), st.booleans()),
    "text": text,
    "text or number": st.one_of(text, st.integers(), st.none()),
    "hostile": hostile,
    "anything": measured,
    "triples": st.lists(st.one_of(st.integers(0, 9), st.floats(0, 10)), min_size=3, max_size=3),
    "tuples": st.tuples(st.integers(0, 99), text),
    "lists": st.lists(measured_leaves, max_size=3),
    "records": st.fixed_dictionaries({"rank": st.integers(0, 60), "ok": st.booleans()}),
    "dicts": st.dictionaries(text, measured_leaves, max_size=3),
    "deep": st.recursive(st.integers(0, 3), lambda inner: st.lists(inner, min_size=1, max_size=2)),
}
kinds = st.sampled_from(sorted(KINDS))


def rows_of(width: int, make: Any) -> st.SearchStrategy[list[Any]]:
    return st.lists(kinds, min_size=width, max_size=width).flatmap(
        lambda chosen: st.lists(
            st.tuples(*[KINDS[k] for k in chosen]).map(make), min_size=32, max_size=40
        )
    )


tables = st.integers(1, 5).flatmap(lambda width: rows_of(width, list))
tuple_tables = st.integers(1, 3).flatmap(lambda width: rows_of(width, tuple))
subclass_tables = st.integers(1, 3).flatmap(lambda width: rows_of(width, HostileList))


def fresh(name: str) -> str:
    """An equal string that is another object (for names of two characters or more)."""
    return "".join(list(name))


names = st.lists(
    st.one_of(st.sampled_from(["id", "price", "name", 'q"', "é!", "\ud83d\ude00"]), escaped_text),
    min_size=1,
    max_size=4,
    unique=True,
)


def records_of(names: list[str]) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Dicts with these keys, mostly the very same key objects; some rows with equal keys that
    are other objects, in another order, one key fewer, or a key of another kind."""

    def build(values: tuple[Any, ...], how: str) -> dict[Any, Any]:
        keys: list[Any] = list(names)
        if how == "fresh":
            keys = [fresh(k) for k in keys]
        elif how == "subclass":
            keys = [HostileStr(k) for k in keys]
        record = dict(zip(keys, values, strict=True))
        if how == "reversed":
            record = dict(reversed(record.items()))
        elif how == "fewer":
            record.pop(keys[-1])
        elif how == "subclass dict":
            record = HostileDict(record)
        return record

    how = st.sampled_from(
        ["same"] * 12 + ["fresh", "subclass", "reversed", "fewer", "subclass dict"]
    )
    cells = st.lists(kinds, min_size=len(names), max_size=len(names))
    return cells.flatmap(
        lambda chosen: st.lists(
            st.builds(build, st.tuples(*[KINDS[k] for k in chosen]), how),
            min_size=32,
            max_size=40,
        )
    )


records = names.flatmap(records_of)
mixed = st.lists(st.one_of(*KINDS.values()), min_size=32, max_size=40)
long_lists = st.one_of(tables, tuple_tables, subclass_tables, records, mixed)


@settings(
    max_examples=max(400, settings.default.max_examples),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(long_lists)
def test_the_column_walk_copies_counts_and_refuses_as_the_walk_value_by_value(rows: Any) -> None:
    # Tables (lists, tuples, list subclasses), records (identical keys, equal keys, other
    # orders, missing keys, subclass keys and dicts), and mixed columns, with every kind of
    # cell: ints whose column is of one length (counted without writing them out), of two
    # signs, at and beyond the 64-bit bounds, floats with NaN and infinities, split surrogate
    # pairs, subclasses read through their bases. With an ample budget, a refusal is always
    # for the same reason: the value cannot be encoded.
    assert_same(rows)


@settings(
    max_examples=max(200, settings.default.max_examples),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(long_lists, st.integers(1, 10**6))
def test_at_the_cap_both_walks_keep_exactly_what_fits(rows: Any, over: int) -> None:
    # The label pads the artifact to exactly 50,000 encoded bytes: kept. One byte more, or
    # any number more (the refusal then falls anywhere in the walk), is refused as too large,
    # by both walks.
    result = outcome(rows, columns=True)
    if isinstance(result, str):
        return  # not encodable, or too large already: the property above covers it
    room = MAX_ARTIFACT_BYTES - result[1]
    for columns in (True, False):
        exact = outcome(rows, columns=columns, label="p" * room)
        assert not isinstance(exact, str)
        assert exact[1] == MAX_ARTIFACT_BYTES
        for extra in (1, 1 + over % (result[1] + 1)):
            assert outcome(rows, columns=columns, label="p" * (room + extra)) == REASON_TOO_LARGE
