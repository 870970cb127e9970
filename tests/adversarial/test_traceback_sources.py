"""The source lines of a failed tool's traceback: read from a regular file, decided on the
open descriptor, and never kept by the host.

``_inert._source_line`` looked at a frame's file by path (``os.stat``: a regular file of at most
1 MiB) and then had ``linecache`` open it by path again, and keep it. So a tool that raises
from code naming a fresh file each call (its ``co_filename`` is the tool's to choose) made the
host keep up to 1 MiB per file in ``linecache.cache`` for the life of the process; and a file
swapped for a FIFO between the look and the open blocked the printer. Now each file is opened
once, with ``O_NONBLOCK``, refused unless ``fstat`` says it is a regular file within the limit,
read within the limit, and forgotten when the traceback is formatted.
"""

from __future__ import annotations

import linecache
import logging
from pathlib import Path
from typing import Any

import pytest

from nr_llm_core import ToolHost, ToolResult, ToolSpec, hookimpl

from ._hostile import raising_from

FAILED = 'Error: tool "raiser" failed.'


class Raiser:
    """Raises from the thrower it is given."""

    def __init__(self, thrower: Any) -> None:
        self.thrower = thrower

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("raiser", "Raises.")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        self.thrower(RuntimeError("x"))
        raise AssertionError("unreachable")


def _source(path: Path, marker: str, size: int) -> None:
    """A Python file whose line 2 (the thrower's ``raise``) names ``marker``, padded to
    ``size`` bytes with comment lines."""
    head = f"def thrower(exc):\n    raise exc  # {marker}\n"
    pad = ("# " + "x" * 76 + "\n") * ((size - len(head)) // 79 + 1)
    path.write_text(head + pad)


def test_files_a_tool_raises_from_are_not_kept_by_the_host(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Tries a tool that raises from code naming a new 512 KiB file each call, ten calls: each
    log shows its file's source line, and the host keeps none of the files afterwards."""
    files = []
    for i in range(10):
        path = tmp_path / f"generated_{i}.py"
        _source(path, f"marker-{i}", 512 * 1024)
        files.append(str(path))
    with caplog.at_level(logging.ERROR, logger="nr_llm"):
        for i, name in enumerate(files):
            host = ToolHost()
            host.register(Raiser(raising_from(name, "thrower")))
            assert host.invoke("raiser", {}).content == FAILED
            assert f"raise exc  # marker-{i}" in caplog.records[-1].getMessage()
    kept = [name for name in files if name in linecache.cache]
    assert kept == []


def test_a_source_file_over_the_limit_shows_no_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Tries a frame whose file is just over 1 MiB: the frame is logged, its source is not."""
    path = tmp_path / "big.py"
    _source(path, "marker-big", (1 << 20) + 10)
    host = ToolHost()
    host.register(Raiser(raising_from(str(path), "thrower")))
    with caplog.at_level(logging.ERROR, logger="nr_llm"):
        assert host.invoke("raiser", {}).content == FAILED
    message = caplog.records[-1].getMessage()
    assert str(path) in message
    assert "marker-big" not in message


def test_a_source_file_in_another_encoding_is_read_by_its_cookie(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Tries a Latin-1 source file with a PEP 263 coding line: the line is shown decoded."""
    path = tmp_path / "latin.py"
    path.write_bytes(b"# -*- coding: latin-1 -*-\ndef thrower(exc):\n    raise exc  # caf\xe9\n")
    namespace: dict[str, Any] = {}
    exec(compile(path.read_bytes(), str(path), "exec"), namespace)
    host = ToolHost()
    host.register(Raiser(namespace["thrower"]))
    with caplog.at_level(logging.ERROR, logger="nr_llm"):
        assert host.invoke("raiser", {}).content == FAILED
    assert "raise exc  # café" in caplog.records[-1].getMessage()
