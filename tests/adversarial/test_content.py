"""ADVERSARIAL.md, Content: what the seam makes of content that is not a plain ``str``.

tests/core/test_bounding_content.py pins these rows on ``bound_result``; here they are pinned at
``ToolHost.invoke``, where a tool's value becomes the error text or the content a model reads.
"""

from __future__ import annotations

from typing import Any

import pytest

from nr_llm_core import ToolResult

from ..core.forge import forged_result
from ._tools import CALLED, invalid_result, invoke_returning


class EvilStr(str):
    """A ``str`` whose methods a host might call to read it: each records that it ran."""

    def __str__(self) -> str:
        CALLED.append("EvilStr.__str__")
        return "fake"

    def __len__(self) -> int:
        CALLED.append("EvilStr.__len__")
        return 1

    def __getitem__(self, index: Any) -> str:
        CALLED.append("EvilStr.__getitem__")
        return "fake"

    def encode(self, *args: Any, **kwargs: Any) -> bytes:  # type: ignore[override]
        CALLED.append("EvilStr.encode")
        return b"fake"

    def isascii(self) -> bool:
        CALLED.append("EvilStr.isascii")
        return True


@pytest.mark.parametrize("content", [b"bytes", bytearray(b"x"), None, 42, 1.5, True], ids=repr)
def test_content_that_is_not_a_str_is_an_invalid_result_error(content: object) -> None:
    out = invoke_returning(forged_result(content))
    assert out.is_error
    assert out.content == invalid_result()
    assert out.artifacts == ()


@pytest.mark.parametrize("repeat", [1, 4_000], ids=["short", "over-the-cap"])
def test_a_str_subclass_is_read_through_str_and_no_override_runs(repeat: int) -> None:
    text = "real characters " * repeat  # 16 bytes each: 4,000 are 64,000 bytes
    result = ToolResult.text(EvilStr(text))
    CALLED.clear()
    out = invoke_returning(result)
    assert CALLED == []
    assert type(out.content) is str
    assert not out.is_error
    if repeat == 1:
        assert out.content == text
    else:
        assert out.content.startswith("real characters ")
        assert out.content.endswith("\n…[tool result truncated at 50000 bytes]")
        assert len(out.content.encode("utf-8")) == 50_000
