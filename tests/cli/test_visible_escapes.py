"""``visible()``'s escapes read back as exactly one character each.

A format character beyond the Basic Multilingual Plane (U+E0001 LANGUAGE TAG, the tag
characters that can hide text, U+1D173 MUSICAL SYMBOL BEGIN BEAM) was written as ``\\ue0001``,
which a reader (and Python) takes for ``\\ue000`` followed by ``1``.
"""

from __future__ import annotations

import ast
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nr_llm_core.cli._output import visible


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\U000e0001", "\\U000e0001"),
        ("a\U000e0041b", "a\\U000e0041b"),
        ("\U0001d173", "\\U0001d173"),
        ("\u202e", "\\u202e"),  # the BMP keeps its four digits
        ("\x1b", "\\x1b"),
    ],
)
def test_an_escape_names_one_code_point(raw: str, shown: str) -> None:
    """Tries the format characters above U+FFFF that read as a BMP escape plus a digit."""
    assert visible(raw) == shown


@given(st.text(st.characters(categories=["Cf", "Cc", "Zl", "Zp"]), max_size=20))
def test_the_escaped_text_reads_back_as_the_original(text: str) -> None:
    """Tries every control and format character, astral ones included: the escaped text,
    read as a Python string literal, is the original (no escape swallows the next digit)."""
    shown = visible(text.replace("\\", ""), keep_newlines=False)
    assert all(unicodedata.category(c) not in ("Cf", "Cc") for c in shown)
    assert ast.literal_eval(f'"{shown}"') == text.replace("\\", "")
