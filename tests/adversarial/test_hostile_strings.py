"""Hostile strings and bytes: read through the base type only, and a gigabyte ``str`` subclass
is cut or refused without ever being copied whole.

``str.__str__`` of a ``str`` subclass copies the whole string: a host that reads a subclass that
way copies a gigabyte before its size check. These tests measure the peak of traced memory
while the host bounds a 1 GiB subclass instance (as ``test_bounding_content.py`` does for an
exact ``str``), and assert that no method of the subclass ran.
"""

from __future__ import annotations

import logging
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from nr_llm_core import MAX_CONTENT_BYTES, ToolResult
from nr_llm_core.bounding import (
    ARTIFACTS_OMITTED_LABEL,
    REASON_TOO_LARGE,
    REASON_UNENCODABLE,
    TRUNCATION_MARKER,
    bound_result,
    read_str,
)

from ..core.forge import forged_artifact, forged_result
from ._hostile import (
    ARMED,
    PROBES,
    RELEASE,
    EvilBytes,
    EvilStr,
    HangingStr,
    armed,
    probe,
    returns_within,
)
from ._tools import invalid_result, invoke_returning

GIB = 1 << 30


@pytest.fixture(autouse=True)
def release_hangs() -> Iterator[None]:
    PROBES.clear()
    RELEASE.clear()
    ARMED.clear()
    yield
    ARMED.clear()
    RELEASE.set()


def peak_while(call: Callable[[], Any]) -> tuple[Any, int]:
    """``call()``'s value and the peak of memory traced while it ran."""
    tracemalloc.start()
    try:
        value = call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return value, peak


def _content(value: str) -> ToolResult:
    return forged_result(value)


def _label(value: str) -> ToolResult:
    return forged_result("ok", artifacts=(forged_artifact({"text": "t"}, label=value),))


def _key(value: str) -> ToolResult:
    return armed(forged_result("ok", artifacts=(forged_artifact({value: "v"}),)))


def _leaf(value: str) -> ToolResult:
    return forged_result("ok", artifacts=(forged_artifact({"text": value}),))


@pytest.mark.parametrize("where", [_content, _label, _key, _leaf], ids=lambda f: f.__name__[1:])
def test_a_one_gib_str_subclass_is_cut_or_refused_without_a_whole_copy(
    where: Callable[[str], ToolResult],
) -> None:
    """Tries a 1 GiB ``str`` subclass, every method of which is a probe, as content, an
    artifact label, a key and a leaf: content is cut to the cap, the artifacts are the marker,
    and the peak of memory stays far below the input's size."""
    result = where(HangingStr("x" * GIB))
    bounded, peak = peak_while(lambda: returns_within(lambda: bound_result(result)))
    assert bounded is not None
    assert peak < 1 << 20, f"{peak} bytes traced: the string was copied"
    assert PROBES == []
    if where is _content:
        assert type(bounded.content) is str
        assert bounded.content == "x" * 49_958 + TRUNCATION_MARKER
    else:
        (marker,) = bounded.artifacts
        assert marker.label == ARTIFACTS_OMITTED_LABEL
        assert marker.data == {"text": REASON_TOO_LARGE}


@pytest.mark.parametrize("where", [_content, _label, _key, _leaf], ids=lambda f: f.__name__[1:])
@pytest.mark.parametrize("text", ["plain", "näive \ud83d\ude00 \ud800"], ids=["ascii", "unicode"])
def test_a_small_str_subclass_gives_its_real_characters_and_runs_nothing(
    where: Callable[[str], ToolResult], text: str
) -> None:
    """Tries a short hostile ``str`` subclass (``__len__``, ``__iter__``, ``__getitem__``,
    ``encode``, ``__str__``, ``isascii`` … all probes) in each place a string is read."""
    bounded = returns_within(lambda: bound_result(where(HangingStr(text))))
    assert bounded is not None
    assert PROBES == []
    expected = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if where is _content:
        assert bounded.content == expected and type(bounded.content) is str
        return
    (artifact,) = bounded.artifacts
    value = {
        "_label": artifact.label,
        "_key": next(iter(artifact.data)),
        "_leaf": artifact.data.get("text"),
    }[where.__name__]
    assert value == expected and type(value) is str


def test_read_str_copies_at_most_its_limit_of_a_subclass() -> None:
    """Tries ``read_str`` with a limit on a 1 GiB ``str`` subclass: what comes back is an exact
    ``str`` of ``limit`` characters, and nothing like the whole was copied."""
    huge = EvilStr("é" * (GIB // 2))
    text, peak = peak_while(lambda: read_str(huge, 1_000))
    assert type(text) is str and text == "é" * 1_000
    assert peak < 1 << 20
    assert read_str(EvilStr("short"), 1_000) == "short"
    assert PROBES == []


# -- bytes wherever bytes can appear ------------------------------------------------------------


class NamedMeta(type):
    """A metaclass whose class names are probes (``__name__`` a property, every other
    attribute through ``__getattribute__``)."""

    @property
    def __name__(cls) -> str:  # type: ignore[override]
        probe("NamedMeta.__name__", "raise")

    def __getattribute__(cls, name: str) -> Any:
        probe(f"NamedMeta.__getattribute__({name})", "raise")


class MetaBytes(EvilBytes, metaclass=NamedMeta):
    """A bytes subclass whose methods and class names are probes."""


class MetaStr(EvilStr, metaclass=NamedMeta):
    """A str subclass whose methods and class names are probes."""


@pytest.mark.parametrize("wrapped", [True, False], ids=["as-content", "as-the-value"])
@pytest.mark.parametrize(
    "content", [EvilBytes(b"bytes"), MetaBytes(b"bytes"), bytearray(b"x")], ids=repr
)
def test_bytes_content_is_an_invalid_result_and_no_method_runs(
    content: bytes, wrapped: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """Tries ``bytes`` subclasses as a result's content (content must be a ``str``) and as the
    value a tool returns, one whose metaclass makes the class names probes: the invalid-result
    log line names the type without them."""
    returned = forged_result(content) if wrapped else content
    with caplog.at_level(logging.INFO, logger="nr_llm"):
        out = returns_within(lambda: invoke_returning(returned))
    assert out.content == invalid_result()
    assert PROBES == []
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.startswith("tool 'returns' returned ")
    assert line.endswith(", not a valid ToolResult")


def test_a_str_subclass_with_probing_class_names_is_read_and_runs_nothing() -> None:
    """Tries content whose class is a ``str`` subclass with a probing metaclass."""
    out = returns_within(lambda: invoke_returning(forged_result(MetaStr("real"))))
    assert out.content == "real" and not out.is_error
    assert PROBES == []


@pytest.mark.parametrize(
    "artifact",
    [
        forged_artifact({"text": EvilBytes(b"leaf")}),
        forged_artifact({"text": "t"}, label=EvilBytes(b"label")),
        forged_artifact({EvilBytes(b"key"): "v"}),
        forged_artifact({"rows": [[MetaBytes(b"cell")]]}),
    ],
    ids=["leaf", "label", "key", "cell"],
)
def test_bytes_in_artifacts_give_the_marker_and_no_method_runs(artifact: Any) -> None:
    """Tries ``bytes`` subclasses as a leaf, a label, a key and a table cell."""
    out = returns_within(lambda: invoke_returning(forged_result("ok", artifacts=(artifact,))))
    assert out.content == "ok"
    (marker,) = out.artifacts
    assert marker.label == ARTIFACTS_OMITTED_LABEL
    assert marker.data == {"text": REASON_UNENCODABLE}
    assert PROBES == []


def test_content_over_the_cap_in_a_subclass_is_cut_like_an_exact_str() -> None:
    """The bounded read of a subclass gives exactly what the exact string gives, at and around
    the cap."""
    for size in (MAX_CONTENT_BYTES - 1, MAX_CONTENT_BYTES, MAX_CONTENT_BYTES + 1, 120_000):
        for char in ("x", "é"):
            text = char * size
            exact = bound_result(forged_result(text))
            sub = bound_result(forged_result(EvilStr(text)))
            assert exact is not None and sub is not None
            assert sub.content == exact.content
    assert PROBES == []
