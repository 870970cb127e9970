"""The docstring reader behind @tool: first paragraph and parameter texts."""

from __future__ import annotations

from nr_llm_core.docstrings import parse_docstring


def test_first_paragraph_is_joined_and_the_rest_ignored() -> None:
    doc = """Find files
    by name.

    Longer text that the model does not need.
    """
    assert parse_docstring(doc) == ("Find files by name.", {})


def test_google_args_with_types_continuations_and_later_sections() -> None:
    doc = """Search.

    Args:
        query (str): What to look for,
            over two lines.
        limit: At most this many.

    Returns:
        text: Not a parameter.

    Raises:
        ValueError: Not a parameter either.
    """
    assert parse_docstring(doc) == (
        "Search.",
        {"query": "What to look for, over two lines.", "limit": "At most this many."},
    )


def test_args_header_right_after_the_summary_ends_the_paragraph() -> None:
    doc = """Search.
    Arguments:
        query: The query.
    """
    assert parse_docstring(doc) == ("Search.", {"query": "The query."})


def test_numpy_parameters_stop_at_the_next_section() -> None:
    doc = """Search.

    Parameters
    ----------
    query : str
        The query.
    limit : int, optional
        At most
        this many.

    Returns
    -------
    limit
        Not a parameter.
    """
    assert parse_docstring(doc) == (
        "Search.",
        {"query": "The query.", "limit": "At most this many."},
    )


def test_empty_docstring() -> None:
    assert parse_docstring("") == ("", {})
