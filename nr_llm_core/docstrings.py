"""Reading a tool's description and parameter texts from a Google- or NumPy-style docstring."""

from __future__ import annotations

import inspect
import re
from typing import Final

__all__ = ["parse_docstring"]

_ARGS_HEADERS: Final = frozenset({"Args:", "Arguments:", "Parameters:", "Params:"})
_GOOGLE_ENTRY_RE: Final = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_ENTRY_RE: Final = re.compile(r"^(\w+)\s*(?::.*)?$")


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The first paragraph (lines joined) and the parameter texts of a Google- or NumPy-style
    ``Args``/``Parameters`` section."""
    lines = inspect.cleandoc(doc).splitlines()
    first: list[str] = []
    for i, line in enumerate(lines):
        if not line.strip() or line.strip() in _ARGS_HEADERS or _is_rule(lines, i + 1):
            break
        first.append(line.strip())
    params: dict[str, str] = {}
    for i, line in enumerate(lines):
        if line.strip() in _ARGS_HEADERS:
            params.update(_google_section(lines[i + 1 :], _indent(line)))
        elif line.strip() in ("Parameters", "Arguments") and _is_rule(lines, i + 1):
            params.update(_numpy_section(lines[i + 2 :], _indent(line)))
    return " ".join(first), params


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _is_rule(lines: list[str], i: int) -> bool:
    return i < len(lines) and set(lines[i].strip()) == {"-"}


def _google_section(lines: list[str], header_indent: int) -> dict[str, str]:
    params: dict[str, list[str]] = {}
    entry_indent: int | None = None
    current: str | None = None
    for line in lines:
        if not line.strip():
            continue
        indent = _indent(line)
        if indent <= header_indent:
            break
        if entry_indent is None:
            entry_indent = indent
        match = _GOOGLE_ENTRY_RE.match(line.strip())
        if indent == entry_indent and match:
            current = match.group(1)
            params[current] = [match.group(2).strip()]
        elif current is not None:
            params[current].append(line.strip())
    return {name: " ".join(t for t in text if t) for name, text in params.items()}


def _numpy_section(lines: list[str], header_indent: int) -> dict[str, str]:
    params: dict[str, list[str]] = {}
    current: str | None = None
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        indent = _indent(line)
        if indent == header_indent and _is_rule(lines, i + 1):
            break  # the next section
        match = _NUMPY_ENTRY_RE.match(line.strip())
        if indent == header_indent and match:
            current = match.group(1)
            params[current] = []
        elif indent > header_indent and current is not None:
            params[current].append(line.strip())
        elif indent <= header_indent:
            break
    return {name: " ".join(text) for name, text in params.items()}
