"""docs/privacy.md: its Python example runs and prints what it says it prints."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "privacy.md"


def test_privacy_doc_example_runs_as_written() -> None:
    (code,) = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    lines = [line.strip() for line in code.splitlines()]
    expected = [line.split("  # ", 1)[1] for line in lines if line.startswith("print(")]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(DOC), "exec"), {"__name__": "privacy_doc"})
    assert out.getvalue().splitlines() == expected
