"""The artifact walk: every row of ADVERSARIAL.md about artifacts, pinned."""

from __future__ import annotations

import collections
import dataclasses
import datetime
import decimal
import enum
import math
import tracemalloc
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from nr_llm_core import MAX_ARTIFACT_BYTES, MAX_ARTIFACT_DEPTH, Artifact, ArtifactType, ToolResult
from nr_llm_core.bounding import (
    ARTIFACTS_OMITTED_LABEL,
    INT_MAX,
    INT_MIN,
    REASON_TOO_LARGE,
    REASON_UNENCODABLE,
    bound_artifacts,
    bound_result,
)
from nr_llm_core.encoding import encode_json

from .forge import forged_artifact, forged_result

UNENCODABLE = [
    {"type": "text", "label": ARTIFACTS_OMITTED_LABEL, "data": {"text": REASON_UNENCODABLE}}
]
TOO_LARGE = [{"type": "text", "label": ARTIFACTS_OMITTED_LABEL, "data": {"text": REASON_TOO_LARGE}}]


def bounded(*artifacts: Artifact, content: str = "ok") -> list[dict[str, Any]]:
    result = bound_result(forged_result(content, artifacts=tuple(artifacts)))
    assert result is not None, "expected a valid result"
    assert result.content == content
    return [a.to_dict() for a in result.artifacts]


def walk(data: Any) -> Any:
    """Bound an artifact carrying ``data`` under key "d": its canonical copy, or the marker."""
    out = bounded(forged_artifact({"d": data}))
    return out if out in (UNENCODABLE, TOO_LARGE) else out[0]["data"]["d"]


class Boom(AssertionError):
    pass


# -- numbers ------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, [1.0, math.nan], {"x": math.inf}])
def test_non_finite_floats_give_the_marker(value: Any) -> None:
    assert walk(value) == UNENCODABLE


@pytest.mark.parametrize("value", [-0.0, 1e-5, 1e16, 12.0, 0.1])
def test_finite_floats_are_kept(value: float) -> None:
    out = walk(value)
    assert out == value and type(out) is float
    assert math.copysign(1, out) == math.copysign(1, value)


@pytest.mark.parametrize(
    "value",
    [INT_MAX + 1, INT_MIN - 1, 10**5000, -(10**5000)],
    ids=["max+1", "min-1", "huge", "-huge"],
)
def test_ints_beyond_the_range_give_the_marker(value: int) -> None:
    assert walk(value) == UNENCODABLE


@pytest.mark.parametrize("value", [INT_MAX, INT_MIN, 0, -1])
def test_ints_in_range_are_kept(value: int) -> None:
    assert walk(value) == value


def test_true_stays_true_and_1_stays_1() -> None:
    out = walk([True, 1, False, 0, None])
    assert out == [True, 1, False, 0, None]
    assert [type(v) for v in out] == [bool, int, bool, int, type(None)]
    assert encode_json(out) == b"[true,1,false,0,null]"


# -- foreign types ------------------------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    ONE = 1


class Mode(enum.StrEnum):
    FAST = "fast"


@dataclasses.dataclass
class Point:
    x: int


class Watched:
    def __getattribute__(self, name: str) -> Any:
        raise Boom(f"attribute {name} read")


FOREIGN = {
    "bytes": lambda: b"bytes",
    "bytearray": lambda: bytearray(b"x"),
    "memoryview": lambda: memoryview(b"x"),
    "set": lambda: {1, 2},
    "frozenset": lambda: frozenset({1}),
    "datetime": lambda: datetime.datetime(2026, 1, 1),
    "date": lambda: datetime.date(2026, 1, 1),
    "uuid": lambda: uuid.UUID(int=1),
    "decimal": lambda: decimal.Decimal("1.5"),
    "enum": lambda: Color.RED,
    "intenum": lambda: Level.ONE,
    "strenum": lambda: Mode.FAST,
    "dataclass": lambda: Point(1),
    "object": object,
    "watched": Watched,
    "function": lambda: print,
    "complex": lambda: complex(1, 2),
}


@pytest.mark.parametrize("make", FOREIGN.values(), ids=FOREIGN.keys())
def test_foreign_types_give_the_marker_without_running_their_methods(make: Any) -> None:
    assert walk(make()) == UNENCODABLE


class ClaimsDict:
    @property  # type: ignore[misc]
    def __class__(self) -> type:
        raise Boom("__class__ property ran")


def test_an_object_claiming_to_be_a_dict_gives_the_marker() -> None:
    assert walk(ClaimsDict()) == UNENCODABLE


# -- subclasses of JSON types: real data through the base type, no override runs --------------


class EvilDict(dict):  # type: ignore[type-arg]
    def items(self) -> Any:
        raise Boom("items")

    def keys(self) -> Any:
        raise Boom("keys")

    def __iter__(self) -> Any:
        raise Boom("__iter__")

    def __len__(self) -> int:
        raise Boom("__len__")

    def __getitem__(self, key: Any) -> Any:
        raise Boom("__getitem__")

    def __eq__(self, other: object) -> bool:
        raise Boom("__eq__")

    __hash__ = None  # type: ignore[assignment]


class EvilList(list):  # type: ignore[type-arg]
    def __iter__(self) -> Any:
        raise Boom("__iter__")

    def __len__(self) -> int:
        raise Boom("__len__")

    def __getitem__(self, index: Any) -> Any:
        raise Boom("__getitem__")


class EvilTuple(tuple):  # type: ignore[type-arg]
    def __iter__(self) -> Any:
        raise Boom("__iter__")

    def __len__(self) -> int:
        raise Boom("__len__")


class EvilStr(str):
    def __str__(self) -> str:
        raise Boom("__str__")

    def __len__(self) -> int:
        raise Boom("__len__")

    def __eq__(self, other: object) -> bool:
        raise Boom("__eq__")

    def __hash__(self) -> int:
        raise Boom("__hash__")


class EvilInt(int):
    def __index__(self) -> int:
        raise Boom("__index__")

    def __int__(self) -> int:
        raise Boom("__int__")

    def __repr__(self) -> str:
        raise Boom("__repr__")


class EvilFloat(float):
    def __float__(self) -> float:
        raise Boom("__float__")

    def __repr__(self) -> str:
        raise Boom("__repr__")


def test_dict_subclass_is_read_through_dict() -> None:
    out = walk(EvilDict({"a": 1}))
    assert out == {"a": 1} and type(out) is dict


def test_list_and_tuple_subclasses_are_read_through_their_base() -> None:
    assert walk(EvilList(["a", 2])) == ["a", 2]
    assert walk(EvilTuple(("a", 2))) == ["a", 2]
    assert walk(EvilList([EvilList(["deep"])])) == [["deep"]]


def test_str_int_float_subclasses_are_read_through_their_base() -> None:
    out = walk([EvilStr("s"), EvilInt(7), EvilFloat(2.5)])
    assert out == ["s", 7, 2.5]
    assert [type(v) for v in out] == [str, int, float]


class EvilKey(str):
    """Hashes apart from its text, so a dict can hold it beside the plain string."""

    def __str__(self) -> str:
        raise Boom("__str__")

    def __len__(self) -> int:
        raise Boom("__len__")

    def __hash__(self) -> int:
        return 1

    def __eq__(self, other: object) -> bool:
        return other is self


def test_str_subclass_keys_and_labels_are_read_through_str() -> None:
    out = bounded(forged_artifact({EvilKey("key"): "v"}, label=EvilStr("label")))
    assert out == [{"type": "text", "label": "label", "data": {"key": "v"}}]


def test_str_subclass_key_colliding_with_a_plain_key_gives_the_marker() -> None:
    data: dict[str, int] = {"key": 1, EvilKey("key"): 2}
    assert len(data) == 2
    assert walk(data) == UNENCODABLE


def test_tuples_and_namedtuples_become_lists() -> None:
    pair = collections.namedtuple("pair", "a b")
    out = walk((1, ("x", pair(2, "y"))))
    assert out == [1, ["x", [2, "y"]]]
    assert type(out) is list and type(out[1][1]) is list


# -- keys -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", [1, None, True, ("t",), 1.5, b"k"])
def test_non_str_keys_give_the_marker(key: Any) -> None:
    assert walk({key: "v"}) == UNENCODABLE


def test_keys_1_and_str_1_together_give_the_marker() -> None:
    assert walk({1: "a", "1": "b"}) == UNENCODABLE


def test_lone_surrogate_in_a_key_is_coerced() -> None:
    assert walk({"a\ud800": 1}) == {"a\ufffd": 1}


def test_keys_colliding_after_coercion_give_the_marker() -> None:
    high, low, replacement = "a" + chr(0xD800), "a" + chr(0xDFFF), "a\ufffd"
    assert walk({high: 1, low: 2}) == UNENCODABLE
    assert walk({high: 1, replacement: 2}) == UNENCODABLE


def test_strings_are_coerced_everywhere() -> None:
    out = bounded(
        forged_artifact({"t": ["x\ud800", "\ud83d\ude00"]}, label="l\udfff"),
        Artifact.table("rows\ud800", ["c\ud800"], [["v\ud800"]]),
    )
    assert out == [
        {"type": "text", "label": "l\ufffd", "data": {"t": ["x\ufffd", "😀"]}},
        {
            "type": "table",
            "label": "rows\ufffd",
            "data": {"columns": ["c\ufffd"], "rows": [["v\ufffd"]]},
        },
    ]


# -- depth --------------------------------------------------------------------------------------


def data_of_depth(containers: int, innermost: Any, *, as_dict: bool = False) -> Any:
    """``data`` (a dict, level 3) holding ``containers - 1`` more nested containers."""
    value = innermost
    for _ in range(containers - 1):
        value = {"k": value} if as_dict else [value]
    return {"k": value}


# Level 1 is the artifact list, level 2 the artifact object, level 3 ``data``: 62 containers
# in ``data`` reach level 64.
DATA_LEVELS = MAX_ARTIFACT_DEPTH - 2


@pytest.mark.parametrize("as_dict", [False, True], ids=["lists", "dicts"])
def test_depth_64_is_accepted_and_65_refused(as_dict: bool) -> None:
    ok = bounded(forged_artifact(data_of_depth(DATA_LEVELS, "leaf", as_dict=as_dict)))
    assert ok not in (UNENCODABLE, TOO_LARGE)
    too_deep = data_of_depth(DATA_LEVELS + 1, "leaf", as_dict=as_dict)
    assert bounded(forged_artifact(too_deep)) == UNENCODABLE


def test_depth_counts_the_empty_innermost_container() -> None:
    assert bounded(forged_artifact(data_of_depth(DATA_LEVELS - 1, []))) != UNENCODABLE
    assert bounded(forged_artifact(data_of_depth(DATA_LEVELS - 1, {}))) != UNENCODABLE
    assert bounded(forged_artifact(data_of_depth(DATA_LEVELS, []))) == UNENCODABLE
    assert bounded(forged_artifact(data_of_depth(DATA_LEVELS, {}))) == UNENCODABLE


def test_table_rows_at_the_depth_limit() -> None:
    # Rows are a list of lists: two levels, taken by the walk's fast path.
    rows = [["a", "b"]]
    assert bounded(forged_artifact(data_of_depth(DATA_LEVELS - 2, rows))) != UNENCODABLE
    assert bounded(forged_artifact(data_of_depth(DATA_LEVELS - 1, rows))) == UNENCODABLE


@pytest.mark.parametrize("keys", ["each its own", "the same"])
def test_values_of_a_long_list_of_dicts_at_the_depth_limit(keys: str) -> None:
    """A list of 32 dicts or more is read a column at a time (ADR 0027): the dicts' values
    together, or records key by key. The values are one level deeper than their dicts there
    too (mutation testing found the values' level could run backwards unseen). A list, a dict
    and an empty list: three levels."""

    def long_list() -> list[dict[str, Any]]:
        if keys == "the same":
            return [{"k": []} for _ in range(40)]
        return [{f"k{i}": []} for i in range(40)]

    assert bounded(forged_artifact(data_of_depth(DATA_LEVELS - 3, long_list()))) != UNENCODABLE
    assert bounded(forged_artifact(data_of_depth(DATA_LEVELS - 2, long_list()))) == UNENCODABLE


def test_anything_unforeseen_in_the_walk_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    import nr_llm_core.bounding as bounding

    def broken(*args: Any) -> Any:
        raise RuntimeError("a dict resized by another thread")

    monkeypatch.setattr(bounding, "_walk", broken)
    assert bounded(forged_artifact({"k": "v"})) == UNENCODABLE


def test_data_must_be_an_object() -> None:
    assert bounded(forged_artifact(["a list"])) == UNENCODABLE
    assert bounded(forged_artifact("text")) == UNENCODABLE


class _NoEncoder:
    def encode(self, value: Any) -> str:
        raise Boom("bounding called the encoder")


def test_100000_deep_tuples_never_reach_the_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    # Bounding measures its copy without encoding it: the shared encoder is never called,
    # so no deep (or any other) value can reach it from here.
    import nr_llm_core.encoding as encoding

    monkeypatch.setattr(encoding, "_ENCODER", _NoEncoder())
    table = forged_artifact({"columns": ["a"], "rows": [["x"], [1], [None]], "n": 1.5})
    assert bound_artifacts((table,)) == (table,)
    deep: Any = ()
    for _ in range(100_000):
        deep = (deep,)
    assert walk(deep) == UNENCODABLE
    deep_list: Any = []
    for _ in range(100_000):
        deep_list = [deep_list]
    assert walk(deep_list) == UNENCODABLE


def test_a_cycle_gives_the_marker() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    assert walk(cycle) == UNENCODABLE
    loop: dict[str, Any] = {}
    loop["self"] = loop
    assert walk(loop) == UNENCODABLE


# -- size ---------------------------------------------------------------------------------------


def peak_while(refuse: Callable[[], Any]) -> int:
    """The peak of memory traced while ``refuse()`` runs; it must give the too-large marker."""
    tracemalloc.start()
    try:
        assert refuse() == TOO_LARGE
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def peak_bytes(data: Any) -> int:
    return peak_while(lambda: walk(data))


def shared_graph_peak(inner: Any) -> int:
    """Refusing ``inner`` shared by a thousand dicts (dicts between: no row fast path)."""
    return peak_bytes({"x": [{"y": inner}] * 1_000})


def test_huge_inputs_are_refused_before_being_copied() -> None:
    # Complexity, not wall-clock: refusing copies none of the input.
    assert peak_bytes(["x"] * 10_000_000) < 100_000
    assert peak_bytes(dict.fromkeys(map(str, range(1_000_000)), 0)) < 100_000
    assert peak_bytes("x" * (1 << 30)) < 100_000
    assert peak_bytes([["x"] * 10_000_000] * 3) < 100_000


def test_a_shared_reference_blow_up_is_refused_within_the_budget() -> None:
    inner = ["x"] * 1000
    blow_up = [[inner] * 1000] * 1000  # 10^9 leaves through shared references
    assert walk(blow_up) == TOO_LARGE
    small: Any = [1, 2]
    for _ in range(40):  # 2^40 leaves, 40 levels of sharing
        small = [small, small]
    assert walk(small) == TOO_LARGE


def fill_to(size: int) -> Artifact:
    base = forged_artifact({"text": ""})
    overhead = len(encode_json([base.to_dict()]))
    return forged_artifact({"text": "x" * (size - overhead)})


def test_exactly_50000_encoded_bytes_is_kept_and_50001_refused() -> None:
    exact = fill_to(MAX_ARTIFACT_BYTES)
    out = bounded(exact)
    assert len(encode_json(out)) == MAX_ARTIFACT_BYTES
    assert out[0]["data"]["text"] == exact.data["text"]
    assert bounded(fill_to(MAX_ARTIFACT_BYTES + 1)) == TOO_LARGE


def test_the_check_is_on_encoded_bytes_not_characters() -> None:
    # Escapes make the encoding longer than the characters: quotes, backslashes, controls.
    chars = MAX_ARTIFACT_BYTES // 2
    assert bounded(forged_artifact({"t": '"' * chars})) == TOO_LARGE
    assert bounded(forged_artifact({"t": "\x00" * (chars // 3)})) == TOO_LARGE
    # Multi-byte characters count in UTF-8 bytes.
    assert bounded(forged_artifact({"t": "😀" * (MAX_ARTIFACT_BYTES // 4)})) == TOO_LARGE


def test_many_artifacts_are_refused_before_being_read() -> None:
    artifact = Artifact.text("l", "t")
    assert bounded(*([artifact] * 2000)) == TOO_LARGE


# -- the whole list -----------------------------------------------------------------------------


def test_one_valid_and_one_invalid_artifact_give_only_the_marker() -> None:
    good = Artifact.table("ok", ["a"], [["1"]])
    assert bounded(good, forged_artifact({"bad": {1, 2}})) == UNENCODABLE


def test_bad_artifact_type_or_label_gives_the_marker() -> None:
    assert bounded(forged_artifact({}, type="table")) == UNENCODABLE
    assert bounded(forged_artifact({}, label=None)) == UNENCODABLE
    assert bounded(forged_artifact({}, label=b"x")) == UNENCODABLE


def gen() -> Any:
    raise Boom("generator iterated")
    yield Artifact.text("l", "t")  # pragma: no cover


@pytest.mark.parametrize(
    "artifacts",
    [
        {"type": "text"},
        [Artifact.text("l", "t")],
        gen(),
        (Artifact.text("l", "t"), {"type": "text"}),
        ("not an artifact",),
        None,
    ],
    ids=["dict", "list", "generator", "mixed", "str", "none"],
)
def test_artifacts_not_a_tuple_of_artifacts_is_an_invalid_result(artifacts: Any) -> None:
    assert bound_result(forged_result("x", artifacts=artifacts)) is None


def test_an_empty_artifact_list_stays_empty() -> None:
    result = bound_result(ToolResult.text("x"))
    assert result is not None and result.artifacts == ()


def test_an_error_result_carries_no_artifacts() -> None:
    result = bound_result(forged_result("e", is_error=True, artifacts=(Artifact.text("l", "t"),)))
    assert result is not None and result.is_error and result.artifacts == ()


def test_mutating_after_return_changes_nothing_the_host_returned() -> None:
    data: dict[str, Any] = {"rows": [["a"]], "meta": {"k": "v"}}
    artifact = forged_artifact(data)
    result = bound_result(forged_result("x", artifacts=(artifact,)))
    assert result is not None
    data["rows"][0][0] = "changed"
    data["meta"]["k"] = "changed"
    data["new"] = 1
    assert result.artifacts[0].data == {"rows": [["a"]], "meta": {"k": "v"}}


def test_the_bounded_artifacts_are_plain_json_copies() -> None:
    out = bound_result(ToolResult.text("x", Artifact.table("t", ["a"], [["1"]])))
    assert out is not None
    data = out.artifacts[0].data
    assert type(data) is dict and type(data["rows"]) is list and type(data["rows"][0]) is list


class SecretMessage(Exception):
    pass


def test_marker_text_never_holds_plugin_bytes() -> None:
    canary = "CANARY-class-name-9d1"
    evil = type(canary, (), {"__repr__": lambda self: canary, "__str__": lambda self: canary})
    for data in ({"x": evil()}, {canary: evil()}, [evil()] * 3):
        out = bounded(forged_artifact(data, label=canary))
        assert out == UNENCODABLE
        assert canary not in encode_json(out).decode()


def test_marker_reasons_are_the_contract_strings() -> None:
    assert REASON_UNENCODABLE == "could not be encoded"
    assert REASON_TOO_LARGE == "exceeded 50000 bytes"
    assert ARTIFACTS_OMITTED_LABEL == "Artifacts omitted"
    assert ArtifactType.TEXT.value == UNENCODABLE[0]["type"]


# -- the budget never refuses what fits ----------------------------------------------------------
# The walk charges lower bounds of the encoded size as it goes. Each shape below is padded (by
# its label) to exactly 50,000 encoded bytes: it must be kept, and one byte more refused. A
# charge that over-estimates any kind of item refuses the first; one that ignores the real
# bytes keeps the second.

SHAPES = {
    "empty strings": lambda n: {"x": [""] * n},
    "zeros": lambda n: {"x": [0] * n},
    "floats": lambda n: {"x": [0.5] * n},
    "bools and nulls": lambda n: {"x": [True, False, None] * (n // 3)},
    "empty lists": lambda n: {"x": [[]] * n},
    "empty dicts": lambda n: {"x": [{}] * n},
    "rows": lambda n: {"columns": ["a"], "rows": [[""]] * n},
    "wide rows": lambda n: {"columns": ["a", "b"], "rows": [["", "é"]] * (n // 2)},
    "keys": lambda n: {"x": {str(i): 0 for i in range(n // 2)}},
    "cjk keys": lambda n: {"x": {chr(0x4E00 + i): None for i in range(n // 4)}},
    "nested": lambda n: {"x": [{"k": [0]}] * (n // 4)},
    "tuples": lambda n: {"x": tuple((1,) for _ in range(n // 2))},
}


def padded_to(size: int, data: dict[str, Any]) -> Artifact:
    bare = len(encode_json([forged_artifact(data, label="").to_dict()]))
    assert bare <= size, "shape too large for the test"
    return forged_artifact(data, label="p" * (size - bare))


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
def test_every_shape_at_exactly_the_limit_is_kept(shape: Any) -> None:
    assert_kept_at_exactly_the_limit(shape(8_000))


def assert_kept_at_exactly_the_limit(data: dict[str, Any]) -> None:
    exact = bounded(padded_to(MAX_ARTIFACT_BYTES, data))
    assert exact not in (UNENCODABLE, TOO_LARGE)
    assert len(encode_json(exact)) == MAX_ARTIFACT_BYTES
    assert bounded(padded_to(MAX_ARTIFACT_BYTES + 1, data)) == TOO_LARGE


# -- every item is charged as the walk goes ------------------------------------------------------
# Shared references make a small object graph stand for a huge document. Each kind of item must
# be charged when it is visited, so the walk stops within the budget instead of copying (and
# then encoding) the whole expansion.

SHARED = {
    "nulls": lambda: [None] * 20_000,
    "bools": lambda: [True] * 20_000,
    "empty strings": lambda: [""] * 20_000,
    "mixed scalars": lambda: ["", None, 0, 0.5, True] * 4_000,
    "keys": lambda: {f"k{i}": 0 for i in range(5_000)},
    "string rows": lambda: [["", ""]] * 10_000,
    "empty lists": lambda: [[]] * 20_000,
}


@pytest.mark.parametrize("make", SHARED.values(), ids=SHARED.keys())
def test_shared_references_are_refused_within_the_budget(make: Any) -> None:
    assert shared_graph_peak(make()) < 2_000_000  # a budget's worth of copies, never the expansion


@pytest.mark.parametrize("where", ["key", "label", "value"])
def test_a_one_gib_string_anywhere_is_refused_without_a_copy(where: str) -> None:
    huge = "é" * (1 << 29)
    artifact = {
        "key": lambda: forged_artifact({huge: 0}),
        "label": lambda: forged_artifact({}, label=huge),
        "value": lambda: forged_artifact({"k": [huge]}),
    }[where]()
    assert peak_while(lambda: bounded(artifact)) < 100_000


# -- subclasses of JSON types are charged and counted like their bases ---------------------------


class SubStr(str):
    pass


class SubInt(int):
    pass


class SubList(list):  # type: ignore[type-arg]
    pass


class SubTuple(tuple):  # type: ignore[type-arg]
    pass


class SubDict(dict):  # type: ignore[type-arg]
    pass


class SubFloat(float):
    pass


SUB_SHAPES = {
    "str subclass": lambda n: {"x": [SubStr("")] * n},
    "int subclass": lambda n: {"x": [SubInt(7)] * n},
    "float subclass": lambda n: {"x": [SubFloat(0.25)] * n},
    "list subclass of zeros": lambda n: {"x": SubList([0] * n)},
    "tuple subclass of zeros": lambda n: {"x": SubTuple([0] * n)},
    "list subclass of rows": lambda n: {"x": SubList([["a", ""]] * (n // 2))},
    "exact tuple of rows": lambda n: {"x": tuple([["a"]] * n)},
    "str subclass mixed": lambda n: {"x": [SubStr(""), None] * (n // 2)},
    "list subclass": lambda n: {"x": [SubList()] * n},
    "tuple subclass": lambda n: {"x": [SubTuple()] * n},
    "dict subclass": lambda n: {"x": [SubDict()] * n},
    "subclass keys": lambda n: {"x": SubDict({SubStr(str(i)): SubInt(0) for i in range(n // 2)})},
}


@pytest.mark.parametrize("shape", SUB_SHAPES.values(), ids=SUB_SHAPES.keys())
def test_subclass_shapes_at_exactly_the_limit_are_kept(shape: Any) -> None:
    assert_kept_at_exactly_the_limit(shape(8_000))


@pytest.mark.parametrize("container", [SubList, SubTuple, tuple])
def test_rows_in_a_subclass_or_tuple_at_the_depth_limit(container: type) -> None:
    # The rows inside are copied in one go: the container passes its own level down.
    rows = container([["a", "b"]])
    kept = bounded(forged_artifact(data_of_depth(DATA_LEVELS - 2, rows)))
    assert kept[0]["data"] == data_of_depth(DATA_LEVELS - 2, [["a", "b"]])
    assert bounded(forged_artifact(data_of_depth(DATA_LEVELS - 1, rows))) == UNENCODABLE


@pytest.mark.parametrize("container", [SubList, SubTuple, SubDict])
def test_depth_counts_subclass_containers_like_their_bases(container: type) -> None:
    def nest(levels: int) -> Any:
        value: Any = container()
        for _ in range(levels - 1):
            value = container({"k": value}) if container is SubDict else container([value])
        return {"k": value}

    assert bounded(forged_artifact(nest(DATA_LEVELS - 1))) not in (UNENCODABLE, TOO_LARGE)
    assert bounded(forged_artifact(nest(DATA_LEVELS))) == UNENCODABLE


@pytest.mark.parametrize(
    ("value", "kept"),
    [(INT_MAX, True), (INT_MIN, True), (INT_MAX + 1, False), (INT_MIN - 1, False)],
    ids=["max", "min", "max+1", "min-1"],
)
def test_int_subclass_range(value: int, kept: bool) -> None:
    out = walk(SubInt(value))
    assert (out == value and type(out) is int) if kept else out == UNENCODABLE


SUB_SHARED = {
    "list subclass of nulls": lambda: SubList([None] * 20_000),
    "tuple subclass of bools": lambda: SubTuple([True] * 20_000),
    "dict subclass": lambda: SubDict({f"k{i}": 0 for i in range(5_000)}),
    "str subclasses": lambda: [SubStr("ab")] * 20_000,
}


@pytest.mark.parametrize("make", SUB_SHARED.values(), ids=SUB_SHARED.keys())
def test_shared_subclass_references_are_refused_within_the_budget(make: Any) -> None:
    assert shared_graph_peak(make()) < 2_000_000


# -- too many artifacts ---------------------------------------------------------------------------
# The smallest artifact, `{"type":"text","label":"","data":{}}`, is 36 bytes: 1,351 of them (and
# their commas and brackets) make 49,988 bytes, 1,352 make 50,025. A list longer than the most
# that can fit is refused by its length, before any item is looked at.


def smallest_artifacts(n: int) -> tuple[Artifact, ...]:
    return tuple(Artifact(ArtifactType.TEXT, "", {}) for _ in range(n))


def test_the_most_artifacts_that_fit_are_kept_and_one_more_refused() -> None:
    fits = ToolResult.text("ok", *smallest_artifacts(1_351))
    out = bound_result(fits)
    assert out is not None and len(out.artifacts) == 1_351
    assert len(encode_json([a.to_dict() for a in out.artifacts])) == 49_988
    over = bound_result(ToolResult.text("ok", *smallest_artifacts(1_352)))
    assert over is not None
    assert [a.to_dict() for a in over.artifacts] == TOO_LARGE


def test_too_many_artifacts_are_refused_before_any_is_looked_at() -> None:
    # Items that are not even artifacts: at 1,352 the count alone refuses them (the marker);
    # at 1,351 each is looked at, and the result is invalid.
    assert bound_result(forged_result(artifacts=(object(),) * 1_351)) is None
    over = bound_result(forged_result(artifacts=(object(),) * 1_352))
    assert over is not None
    assert [a.to_dict() for a in over.artifacts] == TOO_LARGE
