"""Properties of the seam: whatever a tool returns, what invoke() returns is bounded."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from nr_llm_core import (
    MAX_ARTIFACT_BYTES,
    MAX_ARTIFACT_DEPTH,
    MAX_CONTENT_BYTES,
    Artifact,
    ArtifactType,
    ToolHost,
    ToolResult,
    ToolSpec,
    hookimpl,
)
from nr_llm_core.bounding import ARTIFACTS_OMITTED_LABEL, REASON_TOO_LARGE, REASON_UNENCODABLE
from nr_llm_core.encoding import encode_json

from ..core.forge import forged_artifact, forged_result

# Every code point, with surrogates (halves of pairs, and lone ones) made common.
surrogates = st.sampled_from(["\ud83d", "\ude00", chr(0xD800), chr(0xDFFF)])
any_char = st.one_of(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), surrogates)
any_text = st.text(any_char, max_size=40)
big_text = st.one_of(any_text, st.integers(0, 70_000).map(lambda n: "é" * n))

leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    any_text,
    st.binary(max_size=4),
    st.just(math.nan),
)
keys = st.one_of(any_text, any_text, st.integers(-2, 2), st.none(), st.booleans())
values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.lists(inner, max_size=5).map(tuple),
        st.dictionaries(keys, inner, max_size=5),
        st.frozensets(st.integers(), max_size=2),
    ),
    max_leaves=40,
)
artifact = st.builds(
    forged_artifact,
    st.one_of(st.dictionaries(keys, values, max_size=4), values),
    label=st.one_of(any_text, any_text, st.none()),
    type=st.sampled_from([ArtifactType.TABLE, ArtifactType.TEXT, "table"]),
)
results = st.builds(
    forged_result,
    st.one_of(big_text, big_text, st.none(), st.binary(max_size=3)),
    is_error=st.one_of(st.booleans(), st.booleans(), st.just(1)),
    artifacts=st.one_of(
        st.lists(artifact, max_size=3).map(tuple),
        st.lists(artifact, max_size=2),
        st.just({"type": "text"}),
    ),
)


class Replays:
    """A tool that returns whatever the test hands it."""

    value: Any = None

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("replay", "Returns the value under test.")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> Any:
        return self.value


TOOL = Replays()
HOST = ToolHost()
HOST.register(TOOL)


def depth(value: Any) -> int:
    """Nesting depth of containers in plain JSON, empty containers counted."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, level)
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, level + 1) for child in children)
    return deepest


MARKERS = [
    [{"type": "text", "label": ARTIFACTS_OMITTED_LABEL, "data": {"text": reason}}]
    for reason in (REASON_UNENCODABLE, REASON_TOO_LARGE)
]


# The central property: at least 400 examples (more under the long profile).
@settings(
    max_examples=max(400, settings.default.max_examples),
    suppress_health_check=[HealthCheck.too_slow],
)
@given(results)
def test_whatever_a_tool_returns_invoke_returns_something_bounded(value: ToolResult) -> None:
    TOOL.value = value
    out = HOST.invoke("replay", {})
    assert type(out) is ToolResult
    raw = out.content.encode("utf-8")  # raises if not valid UTF-8
    assert len(raw) <= MAX_CONTENT_BYTES
    if out.is_error:
        assert out.artifacts == ()
        return
    listed = [a.to_dict() for a in out.artifacts]
    encoded = encode_json(listed)
    assert len(encoded) <= MAX_ARTIFACT_BYTES
    assert depth(listed) <= MAX_ARTIFACT_DEPTH
    assert json.loads(encoded) == listed  # what was kept encodes and reads back the same
    if any(a.label == ARTIFACTS_OMITTED_LABEL for a in out.artifacts):
        assert listed in MARKERS


plain_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
plain = st.recursive(
    plain_leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)


@given(st.dictionaries(st.text(max_size=8), plain, max_size=4), st.text(max_size=100))
def test_plain_json_within_the_limits_passes_unchanged(data: dict[str, Any], content: str) -> None:
    TOOL.value = ToolResult.text(content, forged_artifact(data, label="plain"))
    out = HOST.invoke("replay", {})
    assert out.content == content
    assert [a.to_dict() for a in out.artifacts] == [
        {"type": "text", "label": "plain", "data": data}
    ]


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(results)
def test_bounding_is_idempotent(value: ToolResult) -> None:
    TOOL.value = value
    once = HOST.invoke("replay", {})
    TOOL.value = once
    assert HOST.invoke("replay", {}) == once


@given(st.lists(st.lists(st.text(any_char, max_size=12), min_size=2, max_size=2), max_size=30))
def test_table_rows_keep_every_cell_in_order(rows: list[list[str]]) -> None:
    TOOL.value = ToolResult.text("t", Artifact.table("rows", ["a", "b"], rows))
    out = HOST.invoke("replay", {})
    kept = out.artifacts[0].data["rows"]
    assert len(kept) == len(rows)
    for got, given_row in zip(kept, rows, strict=True):
        assert got == [
            c.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace") for c in given_row
        ]


# -- the walk measures its copy exactly -----------------------------------------------------------

# Text the encoder escapes: quotes, backslashes, every control character, and what it leaves
# alone (DEL, U+2028, non-BMP characters, lone surrogates the walk replaces).
escaped_text = st.text(
    st.one_of(
        st.sampled_from(['"', "\\", "\x7f", "\u2028", "😀", "\ud83d", "é"]),
        st.characters(max_codepoint=0x1F),
        any_char,
    ),
    max_size=12,
)
measured_leaves = st.one_of(
    plain_leaves,
    escaped_text,
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from([0.0, -0.0, 1e16, 1e-7, 5e-324, -1.7976931348623157e308, 2**63 - 1, -(2**63)]),
)


class HostileStr(str):
    def __len__(self) -> int:
        return 0

    def __str__(self) -> str:
        return "a much longer string than the real one"


class HostileInt(int):
    def __repr__(self) -> str:
        return "123456789"


class HostileFloat(float):
    def __repr__(self) -> str:
        return "1"


class HostileList(list):  # type: ignore[type-arg]
    def __len__(self) -> int:
        return 1_000

    def __iter__(self) -> Any:
        return iter(())


class HostileTuple(tuple):  # type: ignore[type-arg]
    def __len__(self) -> int:
        return 0


class HostileDict(dict):  # type: ignore[type-arg]
    def items(self) -> Any:
        return [("fake", 1)]

    def __len__(self) -> int:
        return 0


measured_leaves = st.one_of(
    measured_leaves,
    escaped_text.map(HostileStr),
    st.integers(-(2**63), 2**63 - 1).map(HostileInt),
    st.floats(allow_nan=False, allow_infinity=False).map(HostileFloat),
)
measured = st.recursive(
    measured_leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.lists(inner, max_size=4).map(HostileList),
        st.lists(inner, max_size=4).map(HostileTuple),
        st.lists(st.lists(escaped_text, max_size=3), max_size=3).map(HostileList),
        st.dictionaries(escaped_text.map(HostileStr), inner, max_size=4).map(HostileDict),
        st.lists(st.lists(escaped_text, max_size=3), max_size=3),  # the rows fast path
        st.lists(escaped_text, max_size=4),  # the strings fast path
        st.dictionaries(escaped_text, inner, max_size=4),
    ),
    max_leaves=30,
)


# The 50,000-byte decision rests on this count: at least 500 examples.
@settings(max_examples=max(500, settings.default.max_examples))
@given(
    st.lists(
        st.tuples(
            st.dictionaries(escaped_text, measured, max_size=4),
            escaped_text,
            st.sampled_from(ArtifactType),
        ),
        min_size=1,
        max_size=3,
    )
)
def test_the_walk_counts_exactly_the_bytes_the_encoder_writes(
    parts: list[tuple[dict[str, Any], str, ArtifactType]],
) -> None:
    # Bounding never encodes: it adds up the size of its copy as it walks. That sum decides
    # the 50,000-byte limit, so it must equal what every sink's encoder writes, byte for byte.
    from nr_llm_core.bounding import _canonical_artifacts, _Refused

    artifacts = tuple(forged_artifact(data, label=label, type=kind) for data, label, kind in parts)
    try:
        canonical, size = _canonical_artifacts(artifacts)
    except _Refused:  # keys that collide once coerced, or too large: nothing to measure
        reject()
    assert size == len(encode_json([a.to_dict() for a in canonical]))


# A list of 32 items or more that is not all strings (bounding._LONG_LIST) is read by levels,
# rows of one length and records with the same keys column by column; a shorter one goes value
# by value. Both walks must copy and count alike.
cells = st.one_of(
    measured_leaves,
    st.lists(measured_leaves, max_size=2),
    st.dictionaries(escaped_text, measured_leaves, max_size=2),
    st.lists(measured_leaves, max_size=2).map(HostileList),
)
tables = st.integers(1, 4).flatmap(
    lambda width: st.lists(
        st.lists(cells, min_size=width, max_size=width), min_size=32, max_size=40
    )
)
records = st.lists(st.sampled_from(["a", "é", '"', "\ud83d"]), min_size=1, max_size=3).flatmap(
    lambda names: st.lists(
        st.tuples(*[cells for _ in names]).map(lambda row: dict(zip(names, row, strict=True))),
        min_size=32,
        max_size=40,
    )
)


@settings(max_examples=max(300, settings.default.max_examples))
@given(st.one_of(tables, records))
def test_rows_read_by_column_are_copied_and_counted_as_one_by_one(rows: list[Any]) -> None:
    # The whole table goes by levels and columns; each row alone (a short list) value by value.
    # The copies must be the same, and the count the encoder's, byte for byte.
    from nr_llm_core.bounding import _canonical_artifacts, _Refused

    try:
        (whole,), size = _canonical_artifacts((forged_artifact({"rows": rows}),))
    except _Refused:
        reject()
    one_by_one = []
    for row in rows:
        (alone,), _ = _canonical_artifacts((forged_artifact({"rows": [row]}),))
        one_by_one.extend(alone.data["rows"])
    assert whole.data["rows"] == one_by_one
    assert size == len(encode_json([whole.to_dict()]))
