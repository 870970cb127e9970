"""The README's example runs and prints what it says it prints."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs_as_written() -> None:
    text = README.read_text()
    (code,) = re.findall(r"```python\n(.*?)```", text, re.S)
    expected = [line.split("# ", 1)[1] for line in code.splitlines() if line.startswith("print(")]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {"__name__": "readme"})
    assert out.getvalue().splitlines() == expected


def test_readme_starts_with_the_two_commands() -> None:
    text = README.read_text()
    first_block = text.split("```sh\n", 1)[1].split("```", 1)[0].splitlines()
    assert len(first_block) == 2
    assert "nr-llm demo" in first_block[0]
    assert first_block[1].startswith("./scripts/test")
    ci = (README.parent / ".ci" / "run").read_text()
    assert "./scripts/test" in ci
