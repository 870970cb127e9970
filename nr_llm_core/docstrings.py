"""Reading a tool's description and parameter texts from a Google, NumPy or Sphinx docstring."""

from __future__ import annotations

import inspect
import re
from typing import Final

import docstring_parser

__all__ = ["parse_docstring"]

_GOOGLE_HEADER: Final = re.compile(
    r"^(?:Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters"
    r"|Returns|Raises|Yields):$"
)
#: A line that opens the parameters (or a later section) rather than continuing the summary:
#: a Google header, a NumPy header (the rule under it is checked separately), a reST or
#: Epydoc field.
_SECTION_START: Final = re.compile(
    _GOOGLE_HEADER.pattern + r"|^(?:Parameters|Arguments|Returns|Raises)$"
    r"|^[:@](?:param|parameter|arg|argument|key|keyword|type|returns?|rtype|raises?|except"
    r"|exception|yields?|ytype|var|ivar|cvar|vartype)\b"
)
#: What the parser sees first: a summary of its own, so that a docstring opening with its
#: ``Args:`` section is still read as Google (the summary is taken from the docstring itself).
_PLACEHOLDER_SUMMARY: Final = "Summary.\n\n"
_STYLES: Final = (
    docstring_parser.DocstringStyle.GOOGLE,
    docstring_parser.DocstringStyle.NUMPYDOC,
    docstring_parser.DocstringStyle.REST,
    docstring_parser.DocstringStyle.EPYDOC,
)


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The first paragraph (lines joined) and the parameter texts (whitespace collapsed) of a
    Google (``Args:``), NumPy (``Parameters``) or Sphinx/reST (``:param x:``) docstring.

    The parameters are read by ``docstring-parser`` in each style; the style that finds the
    most parameter texts wins. A docstring no style can read gives no parameter texts: never
    an error.
    """
    lines = _clean(doc)
    first: list[str] = []
    for i, line in enumerate(lines):
        text = line.strip()
        if not text or _SECTION_START.match(text) or _is_rule(lines, i + 1):
            break
        first.append(text)
    text = _PLACEHOLDER_SUMMARY + "\n".join(lines)
    found: list[dict[str, str]] = [{}]
    for style in _STYLES:
        # One style at a time, not the parser's AUTO: a style that fails on an odd docstring
        # (its parsers raise more than ParseError: ``: :`` is an IndexError) costs only itself.
        try:
            parsed = docstring_parser.parse(text, style)
        except Exception:  # noqa: S112  # the next style may read it; none is an error
            continue
        found.append(
            {
                param.arg_name: " ".join(param.description.split())
                for param in parsed.params
                if param.arg_name.isidentifier() and param.description
            }
        )
    return " ".join(first), max(found, key=len)


def _clean(doc: str) -> list[str]:
    """``doc``'s lines, indented relative to each other as in the source."""
    lines = inspect.cleandoc(doc).splitlines()
    # cleandoc measures the indentation of the lines after the first: in a docstring that
    # opens with its ``Args:`` header, the entries end up at column 0. Put them back under it.
    if lines and _GOOGLE_HEADER.match(lines[0].strip()):
        body = next((line for line in lines[1:] if line.strip()), " ")
        if not body[0].isspace():
            lines[1:] = [f"    {line}" if line.strip() else line for line in lines[1:]]
    return lines


def _is_rule(lines: list[str], i: int) -> bool:
    return i < len(lines) and set(lines[i].strip()) == {"-"}
