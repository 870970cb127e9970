"""The fuzz targets: one byte string in, every invariant of the walk (or the redactor) checked.

A target raises ``AssertionError`` (or lets any other exception escape) on a finding. The same
functions run under Hypothesis in the test suite and under atheris by hand (``scripts/fuzz``).
"""

from __future__ import annotations

from typing import Any

from nr_llm_core.bounding import (
    ARTIFACTS_OMITTED_LABEL,
    MAX_ARTIFACT_BYTES,
    MAX_CONTENT_BYTES,
    REASON_TOO_LARGE,
    REASON_UNENCODABLE,
    TRUNCATION_MARKER,
    bound_result,
    coerce_utf8,
)
from nr_llm_core.encoding import encode_json
from nr_llm_core.results import Artifact, ArtifactType, ToolResult

from .values import (
    INVALID,
    OVERRIDES_RAN,
    EvilStr,
    Reader,
    _mapping,
    build_json,
)

__all__ = ["check_redactor", "check_walk"]

_PLAIN = (str, int, float, bool, type(None))


def _assert_plain(value: Any) -> None:
    """Exact JSON types all the way down, iteratively (the value may be 64 levels deep)."""
    stack = [value]
    while stack:
        v = stack.pop()
        t = type(v)
        if t is dict:
            assert all(type(k) is str for k in v)
            stack.extend(v.values())
        elif t is list:
            stack.extend(v)
        else:
            assert t in _PLAIN, t


def _build_result(r: Reader) -> tuple[ToolResult, list[Any] | None]:
    content: Any = r.text() * (1 + r.byte() * r.byte())  # up to ~800 KB of content
    if r.below(4) == 0:
        content = EvilStr(content)
    is_error = r.below(8) == 0
    artifacts: list[Artifact] = []
    expected: list[Any] | None = []
    for _ in range(r.below(4)):
        label = r.text()
        data, exp = _mapping(r, 3, r.below(20))
        kind = ArtifactType.TABLE if r.below(2) else ArtifactType.TEXT
        artifacts.append(Artifact(kind, EvilStr(label) if r.below(4) == 0 else label, data))
        if exp is INVALID or expected is None:
            expected = None
        else:
            expected.append({"type": kind.value, "label": coerce_utf8(label), "data": exp})
    # Artifact() takes any dict; ToolResult.text() is what a plugin calls.
    return ToolResult._build(content, is_error, tuple(artifacts)), expected


def check_walk(data: bytes) -> None:
    """Bound a result built from ``data`` and check every contract rule on what comes out."""
    result_in, expected = _build_result(Reader(data))
    raw_content = str.__str__(result_in.content)
    OVERRIDES_RAN.clear()  # building may touch overrides; the walk must not
    out = bound_result(result_in)
    assert OVERRIDES_RAN == [], OVERRIDES_RAN
    assert out is not None
    assert type(out.content) is str
    encoded_content = out.content.encode("utf-8")  # valid UTF-8 or this raises
    assert len(encoded_content) <= MAX_CONTENT_BYTES
    plain_content = coerce_utf8(raw_content)
    if len(plain_content.encode("utf-8")) <= MAX_CONTENT_BYTES:
        assert out.content == plain_content
    else:
        assert out.content.endswith(TRUNCATION_MARKER)
        assert plain_content.startswith(out.content[: -len(TRUNCATION_MARKER)])
    assert out.is_error is result_in.is_error
    dicts = [a.to_dict() for a in out.artifacts]
    encoded = encode_json(dicts)
    assert len(encoded) <= MAX_ARTIFACT_BYTES
    _assert_plain(dicts)
    marker = len(out.artifacts) == 1 and out.artifacts[0].label == ARTIFACTS_OMITTED_LABEL
    if out.is_error or not result_in.artifacts:
        assert out.artifacts == ()
    elif expected is None:
        assert marker, "an invalid value got through the walk"
    elif len(encode_json(expected)) > MAX_ARTIFACT_BYTES:
        assert marker
        assert out.artifacts[0].data == {"text": REASON_TOO_LARGE}
    else:
        assert dicts == expected
    if marker:
        assert out.artifacts[0].data["text"] in (REASON_TOO_LARGE, REASON_UNENCODABLE)
    again = bound_result(out)
    assert again == out  # bounding is idempotent


def check_redactor(data: bytes) -> None:
    """Redact a JSON-like value built from ``data``: no crash, idempotent, bounded strings.

    Needs ``nr_llm_core.redaction`` (on main since the audit branch merged).
    """
    from nr_llm_core.redaction import MAX_REDACTED_CHARS, TRUNCATION_MARK, redact_value

    value = build_json(Reader(data))
    once = redact_value(value)
    assert redact_value(once) == once, "redaction is not idempotent"
    stack = [once]
    while stack:
        v = stack.pop()
        if type(v) is dict:
            stack.extend(v.values())
            stack.extend(v.keys())
        elif type(v) is list:
            stack.extend(v)
        elif type(v) is str:
            assert len(v) <= MAX_REDACTED_CHARS + 64 + len(TRUNCATION_MARK), len(v)
    encode_json(once)  # still plain JSON
