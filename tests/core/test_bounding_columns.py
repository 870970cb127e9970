"""The walk by columns (long lists), pinned where its shortcuts could differ from the walk
value by value: exact counts, refusals within the budget, what it hands to the other walk."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any, ClassVar

import pytest

from nr_llm_core import MAX_ARTIFACT_BYTES, bounding
from nr_llm_core.bounding import INT_MAX, INT_MIN
from nr_llm_core.encoding import encode_json

from .forge import forged_artifact
from .test_bounding_artifacts import (
    TOO_LARGE,
    UNENCODABLE,
    SubDict,
    SubList,
    SubStr,
    SubTuple,
    bounded,
)

PAIR = "\ud83d\ude00"  # a surrogate pair split in two code points: one character once coerced
LONG = 40  # more than bounding._LONG_LIST: read by columns


def count(data: dict[str, Any], label: str = "label") -> tuple[int, int]:
    """The walk's count of an artifact with ``data``, and the bytes the encoder writes for its
    copy."""
    (artifact,), size = bounding._canonical_artifacts((forged_artifact(data, label=label),))
    return size, len(encode_json([artifact.to_dict()]))


SPLIT_PAIRS = {
    "value": lambda: {"k": PAIR},
    "key": lambda: {PAIR: 0},
    "str subclass value": lambda: {"k": SubStr(PAIR)},
    "str subclass key": lambda: {"k": SubDict({SubStr(PAIR): 0})},
    "strings of a short list": lambda: {"k": [PAIR, "a"]},
    "string rows": lambda: {"k": [[PAIR, "a"]] * 3},
    "a column of strings": lambda: {"k": [PAIR] * LONG},
    "strings in a mixed column": lambda: {"k": [PAIR, 1] * LONG},
    "keys of a long list's dicts": lambda: {"k": [{PAIR: 1}] * LONG},
    "keys of records": lambda: {"k": [{PAIR: 1, "b": 2}] * LONG},
    "keys of dict subclasses in a long list": lambda: {"k": [SubDict({PAIR: 1})] * LONG},
}


@pytest.mark.parametrize("make", SPLIT_PAIRS.values(), ids=SPLIT_PAIRS.keys())
def test_a_rejoined_surrogate_pair_is_counted_as_the_one_character_it_becomes(make: Any) -> None:
    """A high and a low surrogate in a row are coerced into the one character they encode (4
    bytes): the count must be the encoder's, not one more per pair (which would refuse an
    artifact of exactly 50,000 bytes)."""
    size, written = count(make())
    assert size == written


def test_a_rejoined_surrogate_pair_in_the_label_is_counted_once() -> None:
    size, written = count({}, label=PAIR)
    assert size == written


def test_an_artifact_of_exactly_50000_bytes_with_split_pairs_is_kept() -> None:
    data = {"k": [PAIR] * LONG, PAIR: [{PAIR: PAIR}] * LONG}
    joined = {"k": ["😀"] * LONG, "😀": [{"😀": "😀"}] * LONG}  # as coerced
    bare = len(encode_json([forged_artifact(joined, label="").to_dict()]))
    exact = forged_artifact(data, label="p" * (MAX_ARTIFACT_BYTES - bare))
    kept = bounded(exact)
    assert len(encode_json(kept)) == MAX_ARTIFACT_BYTES
    over = forged_artifact(data, label="p" * (MAX_ARTIFACT_BYTES - bare + 1))
    assert bounded(over) == TOO_LARGE


# -- ints measured by the lengths of the smallest and the largest ---------------------------------

INT_COLUMNS = {
    "digits": list(range(10)) * 4,
    "negative digits": list(range(-9, 0)) * 5,
    "two signs of one length": [-1, 10, 5, -5, 99] * 8,  # not all of one length
    "zero and minus one": [0, -1] * 20,
    "one to two digits": list(range(5, 45)),
    "the bounds": [INT_MAX, INT_MIN] * 20,
    "near the top": [INT_MAX - i for i in range(40)],
    "near the bottom": [INT_MIN + i for i in range(40)],
    "one value": [7] * 40,
}


@pytest.mark.parametrize("column", INT_COLUMNS.values(), ids=INT_COLUMNS.keys())
def test_a_column_of_ints_is_counted_as_the_encoder_writes_it(column: list[int]) -> None:
    size, written = count({"rows": [[n, n] for n in column], "flat": column})
    assert size == written


# -- records -------------------------------------------------------------------------------------


def fresh(name: str) -> str:
    """An equal string that is another object."""
    copy = "".join(list(name))
    assert copy == name and copy is not name
    return copy


def test_records_with_equal_keys_that_are_other_objects_are_copied_alike() -> None:
    same = [{"alpha": i, "beta": [i, 2.5]} for i in range(LONG)]
    other = [{fresh("alpha"): i, fresh("beta"): [i, 2.5]} for i in range(LONG)]
    reordered = [{"beta": [i, 2.5], "alpha": i} for i in range(LONG)]
    for rows in (same, other, reordered):
        (artifact,), size = bounding._canonical_artifacts((forged_artifact({"r": rows}),))
        assert artifact.data["r"] == rows
        assert [list(r) for r in artifact.data["r"]] == [list(r) for r in rows]  # key order
        assert size == len(encode_json([artifact.to_dict()]))


def test_records_with_a_key_of_another_type_give_the_marker() -> None:
    rows: list[dict[Any, int]] = [{"a": 1, "b": 2} for _ in range(LONG)]
    rows[-1] = {"a": 1, 2: 2}
    assert bounded(forged_artifact({"r": rows})) == UNENCODABLE


# -- refused within the budget -------------------------------------------------------------------


def peak_while(refuse: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        assert refuse() == TOO_LARGE
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_huge_key_of_the_first_record_is_refused_without_a_copy() -> None:
    huge = "k" * (1 << 28)
    rows = [{huge: 0, "b": 1}] + [{"a": 0, "b": 1}] * LONG
    assert peak_while(lambda: bounded(forged_artifact({"r": rows}))) < 200_000


@pytest.mark.parametrize("kind", [SubList, SubTuple, tuple])
def test_shared_subclass_lists_in_a_long_list_are_refused_within_the_budget(kind: type) -> None:
    # Each is 40,000 bytes, within the budget alone: they must be charged one after the other.
    inner = kind([0] * 20_000)
    assert peak_while(lambda: bounded(forged_artifact({"r": [inner] * 1_000}))) < 2_000_000


def test_shared_dict_subclasses_in_a_long_list_are_refused_within_the_budget() -> None:
    inner = SubDict({str(i): 0 for i in range(8_000)})
    assert peak_while(lambda: bounded(forged_artifact({"r": [inner] * 1_000}))) < 3_000_000


def test_a_long_list_is_read_by_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """The properties comparing the two walks are not vacuous: a long list of numbers and
    records goes by columns, a short one value by value."""
    calls: list[int] = []
    real = bounding._walk_columns

    def spy(items: list[Any], *args: Any) -> Any:
        calls.append(len(items))
        return real(items, *args)

    monkeypatch.setattr(bounding, "_walk_columns", spy)
    bounded(forged_artifact({"long": [{"a": 1.5}] * LONG, "short": [1, 2]}))
    assert calls == [LONG]


# -- classes are told apart by identity only ------------------------------------------------------


class Meta(type):
    """A metaclass whose classes answer ``==`` and ``hash()`` with plugin code."""

    ran: ClassVar[list[str]] = []

    def __hash__(cls) -> int:
        Meta.ran.append("hash")
        return hash(str)

    def __eq__(cls, other: object) -> bool:
        Meta.ran.append("eq")
        return other is str


class Odd(metaclass=Meta):
    pass


class OddStr(str, metaclass=type("StrMeta", (Meta,), {})):
    pass


ODD_PLACES = {
    "a short list": lambda: [Odd()],
    "a long list of them": lambda: [Odd()] * LONG,
    "a long mixed list": lambda: [1, Odd()] * LONG,
    "strings and one": lambda: ["a"] * LONG + [Odd()],
    "rows of strings and one": lambda: [["a", "b"]] * LONG + [["a", Odd()]],
    "rows": lambda: [[1, Odd()]] * LONG,
    "records": lambda: [{"a": Odd()}] * LONG,
    "a str subclass among strings": lambda: ["a"] * LONG + [OddStr("b")],
    "str subclass keys": lambda: [{OddStr("k"): 1}] * LONG,
    "str subclass keys of records": lambda: [{"k": 1}] * LONG + [{OddStr("k"): 1}],
}


@pytest.mark.parametrize("make", ODD_PLACES.values(), ids=ODD_PLACES.keys())
def test_a_class_whose_metaclass_defines_eq_and_hash_never_runs_them(make: Any) -> None:
    """Telling the types of values apart must not compare or hash the classes: a plugin's
    metaclass can define both, and they would run in the host's bounding."""
    value = make()
    Meta.ran.clear()
    out = bounded(forged_artifact({"d": value}))
    assert Meta.ran == []
    if any(type(v) is Odd for v in value):
        assert out == UNENCODABLE
