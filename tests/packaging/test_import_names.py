"""The builtins are imported by their installed name only (ADR 0017).

From the repository root the folder ``builtin_tools`` is importable too; a module imported under
both names would exist twice, with two copies of its state. This test fails when any source,
test or plugin file imports the folder name, or when the core imports the builtins at all.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_FOLDER_IMPORT = re.compile(r"^\s*(?:from|import)\s+builtin_tools\b", re.M)
_ANY_BUILTINS_IMPORT = re.compile(
    r"^\s*(?:from|import)\s+(?:nr_llm_builtins|builtin_tools)\b", re.M
)


def _python_files(*folders: str) -> list[Path]:
    return [
        p for folder in folders for p in (ROOT / folder).rglob("*.py") if "build" not in p.parts
    ]


def test_nothing_imports_the_builtins_by_their_folder_name() -> None:
    offenders = [
        str(p.relative_to(ROOT))
        for p in _python_files("nr_llm_core", "builtin_tools", "tests", "plugins", "benchmarks")
        if _FOLDER_IMPORT.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_core_never_imports_the_builtins() -> None:
    """The framework does not depend on one of its own plugins: the builtins are found through
    their entry points like any other tool."""
    offenders = [
        str(p.relative_to(ROOT))
        for p in _python_files("nr_llm_core")
        if _ANY_BUILTINS_IMPORT.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []
