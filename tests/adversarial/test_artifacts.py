"""ADVERSARIAL.md, Artifacts: the parts of rows the walk's unit tests leave open.

tests/core/test_bounding_artifacts.py pins each row on ``bound_result``. What it cannot show,
this file does, through ``ToolHost.invoke`` and ``ToolLoop``:

- that no method of a foreign value runs. A method that raises proves nothing there: the walk
  turns any exception into the marker, which is the expected outcome anyway. Here every method
  records that it ran and returns something plausible, and the record must stay empty;
- that refusing a 10M-key dict or 100,000-deep nesting reads none of it (peak memory, not time);
- that a tool mutating its data after returning changes nothing streamed or stored.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nr_llm_core import (
    AgentRunPersister,
    Artifact,
    ArtifactType,
    PrivacyLevel,
    ScriptedProvider,
    ToolHost,
    ToolLoop,
    ToolResult,
    ToolSpec,
    hookimpl,
)
from nr_llm_core.encoding import decode_json, encode_json
from nr_llm_core.trace import RunStep, RunTrace, StepKind

from ..core.forge import forged_artifact, forged_result
from ._tools import CALLED, Returns, invalid_result, invoke_returning

UNENCODABLE = [
    {"type": "text", "label": "Artifacts omitted", "data": {"text": "could not be encoded"}}
]
TOO_LARGE = [
    {"type": "text", "label": "Artifacts omitted", "data": {"text": "exceeded 50000 bytes"}}
]


def artifacts_of(result: ToolResult) -> list[dict[str, Any]]:
    assert not result.is_error, result.content
    return [a.to_dict() for a in result.artifacts]


# -- foreign values: the marker, and none of their methods runs ---------------------------------


def _probe(name: str, returns: Callable[[], Any]) -> Callable[..., Any]:
    def method(self: object, *args: Any, **kwargs: Any) -> Any:
        CALLED.append(f"{type(self).__name__}.{name}")
        return returns()

    method.__name__ = name
    return method


def _probe_getattribute(self: object, name: str) -> Any:
    CALLED.append(f"{type(self).__name__}.__getattribute__({name})")
    return object.__getattribute__(self, name)


# Every way a host, a walk or an encoder might read a value, each returning something plausible,
# so that a host that called one would go on with made-up data instead of failing closed.
PROBES: dict[str, Callable[[], Any]] = {
    "__str__": lambda: "probe",
    "__repr__": lambda: "probe",
    "__format__": lambda: "probe",
    "__bytes__": lambda: b"probe",
    "__len__": lambda: 1,
    "__iter__": lambda: iter(["probe"]),
    "__getitem__": lambda: "probe",
    "__contains__": lambda: False,
    "__float__": lambda: 1.5,
    "__int__": lambda: 1,
    "__index__": lambda: 1,
    "__bool__": lambda: True,
    "__eq__": lambda: False,
    "__ne__": lambda: True,
    "__hash__": lambda: 1,
    "__reduce__": lambda: (str, ("probe",)),
    "__reduce_ex__": lambda: (str, ("probe",)),
    "__copy__": lambda: "probe",
    "__deepcopy__": lambda: "probe",
    "__fspath__": lambda: "probe",
    "__getattr__": lambda: "probe",
    "__json__": lambda: "probe",
    "items": lambda: [("k", "probe")],
    "keys": lambda: ["k"],
    "values": lambda: ["probe"],
    "isoformat": lambda: "2026-01-01",
    "tolist": lambda: ["probe"],
    "decode": lambda: "probe",
    "hex": lambda: "00",
    "to_dict": lambda: {"k": "probe"},
    "_asdict": lambda: {"k": "probe"},
    "as_tuple": lambda: (0, (1,), 0),
}


def probed(cls: type) -> type:
    """Give ``cls`` every probe (on top of whatever it had), and a recording attribute read."""
    for name, returns in PROBES.items():
        setattr(cls, name, _probe(name, returns))
    cls.__getattribute__ = _probe_getattribute  # type: ignore[method-assign]
    return cls


@probed
class ProbedBytes(bytes):
    pass


@probed
class ProbedBytearray(bytearray):
    pass


@probed
class ProbedSet(set):  # type: ignore[type-arg]
    pass


@probed
class ProbedFrozenset(frozenset):  # type: ignore[type-arg]
    pass


@probed
class ProbedDatetime(datetime.datetime):
    pass


@probed
class ProbedDate(datetime.date):
    pass


@probed
class ProbedUUID(uuid.UUID):
    pass


@probed
class ProbedDecimal(decimal.Decimal):
    pass


@probed
class ProbedEnum(enum.Enum):
    RED = "red"


@probed
class ProbedIntEnum(enum.IntEnum):
    ONE = 1


@probed
class ProbedStrEnum(enum.StrEnum):
    FAST = "fast"


@probed
@dataclasses.dataclass
class ProbedDataclass:
    x: int
    y: str


@probed
class ProbedObject:
    pass


FOREIGN: dict[str, Callable[[], object]] = {
    "bytes": lambda: ProbedBytes(b"bytes"),
    "bytearray": lambda: ProbedBytearray(b"bytearray"),
    "memoryview": lambda: memoryview(b"no subclass possible, no plugin code"),
    "set": lambda: ProbedSet({"a", "b"}),
    "frozenset": lambda: ProbedFrozenset({"a"}),
    "datetime": lambda: ProbedDatetime(2026, 1, 2, 3, 4, 5),
    "date": lambda: ProbedDate(2026, 1, 2),
    "uuid": lambda: ProbedUUID(int=7),
    "decimal": lambda: ProbedDecimal("1.5"),
    "enum": lambda: ProbedEnum.RED,
    "intenum": lambda: ProbedIntEnum.ONE,
    "strenum": lambda: ProbedStrEnum.FAST,
    "dataclass": lambda: ProbedDataclass(1, "y"),
    "object": ProbedObject,
}

PLACES: dict[str, Callable[[object], Artifact]] = {
    "value": lambda v: Artifact(ArtifactType.TEXT, "foreign", {"d": v}),
    "list item": lambda v: Artifact(ArtifactType.TEXT, "foreign", {"d": ["ok", v]}),
    "data": lambda v: forged_artifact(v),
}


@pytest.mark.parametrize("place", PLACES.values(), ids=PLACES.keys())
@pytest.mark.parametrize("make", FOREIGN.values(), ids=FOREIGN.keys())
def test_foreign_values_give_the_marker_and_none_of_their_methods_runs(
    make: Callable[[], object], place: Callable[[object], Artifact]
) -> None:
    result = ToolResult.text("ok", Artifact.text("fine", "kept?"), place(make()))
    CALLED.clear()
    out = invoke_returning(result)
    assert CALLED == []
    assert out.content == "ok"
    assert artifacts_of(out) == UNENCODABLE


def test_the_probes_do_record() -> None:
    # The test above is only as good as its probes: reading a probed value records it.
    CALLED.clear()
    value = ProbedSet({"a"})
    str(value)
    list(value)
    value.items()
    isinstance(ProbedObject(), dict)  # not a dict by type: isinstance() reads __class__
    assert {
        "ProbedSet.__str__",
        "ProbedSet.__iter__",
        "ProbedSet.__getattribute__(items)",
        "ProbedSet.items",
        "ProbedObject.__getattribute__(__class__)",
    } <= set(CALLED)


# -- subclasses of JSON types: the real data through the base type, and no override runs -------


@probed
class ProbedDict(dict):  # type: ignore[type-arg]
    pass


@probed
class ProbedList(list):  # type: ignore[type-arg]
    pass


@probed
class ProbedTuple(tuple):  # type: ignore[type-arg]
    pass


@probed
class ProbedStr(str):
    pass


@probed
class ProbedInt(int):
    pass


@probed
class ProbedFloat(float):
    pass


def test_json_subclasses_give_their_real_data_and_no_override_runs() -> None:
    # The probes return made-up data, so an override whose result was used would show in the
    # output, and one whose result was thrown away shows in the record.
    data = ProbedDict(
        {
            ProbedStr("key"): ProbedList([ProbedStr("s"), ProbedInt(7), ProbedFloat(2.5)]),
            "rows": ProbedList([ProbedList([ProbedStr("a"), ProbedStr("b")])]),
            "pair": ProbedTuple((ProbedInt(1), ProbedTuple((ProbedStr("x"),)))),
            "nested": ProbedDict({"k": ProbedDict()}),
        }
    )
    result = ToolResult.text("ok", Artifact(ArtifactType.TEXT, ProbedStr("label"), data))
    CALLED.clear()
    out = invoke_returning(result)
    assert CALLED == []
    assert artifacts_of(out) == [
        {
            "type": "text",
            "label": "label",
            "data": {
                "key": ["s", 7, 2.5],
                "rows": [["a", "b"]],
                "pair": [1, ["x"]],
                "nested": {"k": {}},
            },
        }
    ]
    copy = out.artifacts[0].data
    assert [type(v) for v in copy["key"]] == [str, int, float]
    assert type(copy) is dict and type(copy["pair"]) is list and type(copy["rows"][0]) is list


# -- an object claiming to be a dict ------------------------------------------------------------


class ClaimsDict:
    @property  # type: ignore[misc]
    def __class__(self) -> type:
        CALLED.append("ClaimsDict.__class__")
        return dict


class ClaimsStr:
    @property  # type: ignore[misc]
    def __class__(self) -> type:
        CALLED.append("ClaimsStr.__class__")
        return str


CLAIMS: dict[str, Callable[[], Artifact]] = {
    # The constructor's isinstance() believes the property: a plugin can build these.
    "data": lambda: Artifact(ArtifactType.TEXT, "claims", ClaimsDict()),  # type: ignore[arg-type]
    "value": lambda: Artifact(ArtifactType.TEXT, "claims", {"d": ClaimsDict()}),
    "nested value": lambda: Artifact(ArtifactType.TEXT, "claims", {"d": [{"e": ClaimsDict()}]}),
    "key": lambda: Artifact(ArtifactType.TEXT, "claims", {ClaimsStr(): "v"}),
    "label": lambda: Artifact(ArtifactType.TEXT, ClaimsStr(), {"text": "t"}),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("make", CLAIMS.values(), ids=CLAIMS.keys())
def test_an_object_claiming_a_json_type_gives_the_marker_and_its_property_never_runs(
    make: Callable[[], Artifact],
) -> None:
    result = ToolResult.text("ok", make())
    CALLED.clear()
    out = invoke_returning(result)
    assert CALLED == []
    assert artifacts_of(out) == UNENCODABLE


def test_content_claiming_to_be_a_str_is_an_invalid_result_and_its_property_never_runs() -> None:
    result = ToolResult.text(ClaimsStr())  # type: ignore[arg-type]  # isinstance() believes it
    CALLED.clear()
    out = invoke_returning(result)
    assert CALLED == []
    assert out.is_error and out.content == invalid_result()


# -- huge and deep values are refused without being read ---------------------------------------


def bounded_peak(result: ToolResult) -> tuple[ToolResult, int]:
    """The seam's result for a tool returning ``result``, and the peak memory it took."""
    host = ToolHost()
    host.register(Returns(result))
    tracemalloc.start()
    try:
        out = host.invoke("returns", {})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return out, peak


def test_a_dict_with_ten_million_keys_is_refused_without_reading_it() -> None:
    # int keys are a tripwire: reading any key would refuse the dict as unencodable instead.
    huge = dict.fromkeys(range(10_000_000))
    out, peak = bounded_peak(ToolResult.text("ok", Artifact(ArtifactType.TEXT, "big", huge)))
    assert artifacts_of(out) == TOO_LARGE
    assert peak < 100_000  # listing its items alone would take hundreds of megabytes
    out, peak = bounded_peak(ToolResult.text("ok", Artifact(ArtifactType.TEXT, "big", {"d": huge})))
    assert artifacts_of(out) == TOO_LARGE
    assert peak < 100_000


@pytest.mark.parametrize("kind", [tuple, list])
def test_100000_deep_nesting_is_refused_at_the_depth_limit_without_walking_on(kind: type) -> None:
    deep: Any = kind()
    for _ in range(100_000):
        deep = kind((deep,))
    out, peak = bounded_peak(
        ToolResult.text("ok", Artifact(ArtifactType.TEXT, "deep", {"d": deep}))
    )
    assert artifacts_of(out) == UNENCODABLE
    # Walking to the 64th level takes some 20 KB; walking all 100,000 would take tens of MB.
    assert peak < 200_000


# -- artifacts that are not a tuple of Artifact, at the seam ------------------------------------


def test_artifacts_that_are_not_a_tuple_of_artifacts_are_an_invalid_result_at_the_seam() -> None:
    def generator() -> Iterator[Artifact]:
        CALLED.append("generator iterated")
        yield Artifact.text("l", "t")

    for artifacts in (
        {"type": "text", "label": "l", "data": {"text": "t"}},
        [Artifact.text("l", "t")],
        generator(),
        (Artifact.text("l", "t"), {"type": "text"}),
    ):
        CALLED.clear()
        out = invoke_returning(forged_result("ok", artifacts=artifacts))
        assert out.is_error and out.content == invalid_result(), artifacts
        assert out.artifacts == ()
        assert CALLED == []


# -- the tool mutates its data after returning ---------------------------------------------------


class Leaky:
    """Returns an artifact over data it keeps, and changes that data after every return."""

    def __init__(self) -> None:
        self.live: dict[str, Any] = {"columns": ["c"], "rows": [["original"]]}

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("leaky", "Keeps a reference to what it returned.", data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        # Artifact(...) keeps the dict it is given: the plugin still holds it afterwards.
        return ToolResult.text("ok", Artifact(ArtifactType.TABLE, "live", self.live))

    def tamper(self) -> None:
        self.live["rows"][0][0] = "CHANGED-AFTER-RETURN"
        self.live["rows"].append(["ADDED-AFTER-RETURN"])
        self.live["columns"].append("ADDED-COLUMN")
        self.live["extra"] = "ADDED-KEY"


def test_mutating_artifact_data_after_return_changes_nothing_streamed_or_stored(
    tmp_path: Path,
) -> None:
    leaky = Leaky()
    host = ToolHost()
    host.register(leaky)
    streamed: list[dict[str, Any]] = []

    def tamper(trace: RunTrace, step: RunStep) -> None:
        # As the tool's own thread could, right after the call returned: before the inspector
        # stream and the audit store (the listeners after this one) have seen the step.
        if step.kind is StepKind.TOOL:
            leaky.tamper()

    def stream(trace: RunTrace, step: RunStep) -> None:
        # Like the live inspector: the step dict is kept and encoded later, after the run.
        streamed.append(step.to_dict())

    db = tmp_path / "mutation.db"
    provider = ScriptedProvider([{"tool_calls": [{"id": "c1", "name": "leaky"}]}, "done"])
    with AgentRunPersister(db) as store:
        loop = ToolLoop(
            provider,
            host,
            persister=store,
            privacy=PrivacyLevel.FULL,
            trace_listeners=[tamper, stream],
        )
        result = loop.run("go")
        leaky.tamper()  # and again once everything is over
        stored = [s["step"] for s in store.steps(result.run_id)]
    expected = [
        {"type": "table", "label": "live", "data": {"columns": ["c"], "rows": [["original"]]}}
    ]
    assert leaky.live["rows"][0] == ["CHANGED-AFTER-RETURN"]  # the tampering did happen
    assert artifacts_of(result.invocations[0].result) == expected
    streamed_tools = [decode_json(encode_json(s)) for s in streamed if s["kind"] == "tool"]
    assert [s["tool_artifacts"] for s in streamed_tools] == [expected]
    assert [s["tool_artifacts"] for s in stored if s["kind"] == "tool"] == [expected]
    files = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith(db.name))
    assert b"original" in files
    assert b"AFTER-RETURN" not in files and b"ADDED-" not in files
