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


# The same tool, documented in each of the three styles @tool reads: the same spec.

GOOGLE = """Count the words of a text.

    Args:
        text (str): The text to count,
            over two lines.
        top: How many words to show.
    """

NUMPY = """Count the words of a text.

    Parameters
    ----------
    text : str
        The text to count,
        over two lines.
    top : int, optional
        How many words to show.
    """

SPHINX = """Count the words of a text.

    :param text: The text to count,
        over two lines.
    :type text: str
    :param int top: How many words to show.
    :returns: the counts.
    """

EXPECTED = (
    "Count the words of a text.",
    {"text": "The text to count, over two lines.", "top": "How many words to show."},
)


def test_google_numpy_and_sphinx_styles_read_the_same() -> None:
    """One function documented in each style: the same description and parameter texts
    (a ``:param x:`` docstring gave no parameter texts before)."""
    assert [parse_docstring(doc) for doc in (GOOGLE, NUMPY, SPHINX)] == [EXPECTED] * 3


def test_a_field_list_right_after_the_summary_ends_the_paragraph() -> None:
    doc = """Search.
    :param query: The query.
    """
    assert parse_docstring(doc) == ("Search.", {"query": "The query."})


def test_a_docstring_that_opens_with_its_parameters_has_no_description() -> None:
    """@tool then needs ``description=``; the parameter texts are still read."""
    for doc in (
        """Args:
            query: The query.
        """,
        """:param query: The query.""",
        """Parameters
        ----------
        query : str
            The query.
        """,
    ):
        assert parse_docstring(doc) == ("", {"query": "The query."}), doc


def test_a_docstring_without_a_parameters_section() -> None:
    assert parse_docstring("Just a summary.\n\nAnd more prose: with a colon.") == (
        "Just a summary.",
        {},
    )


def test_a_summary_that_opens_with_a_role_is_not_a_field() -> None:
    assert parse_docstring(":class:`Path` helpers: list a folder.") == (
        ":class:`Path` helpers: list a folder.",
        {},
    )


def test_a_docstring_a_parser_trips_on_is_not_an_error() -> None:
    """docstring-parser's reST reader raises ``IndexError`` on ``: :``: the other styles still
    read the docstring, and decorating the tool does not fail."""
    doc = """Search.

    : :

    Args:
        query: The query.
    """
    assert parse_docstring(doc) == ("Search.", {"query": "The query."})
