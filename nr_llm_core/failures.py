"""Host-made error results: their content in host words, and the detail kept for the trace only.

Every error text the host writes into a result's ``content`` (unknown tool, not permitted,
invalid arguments, failed, invalid result, timed out, not approved) is built here from host
vocabulary: the tool name, an argument path, the kind of failure. What a plugin's exception
said (its type name and message) is read here too, without running plugin code, into a
:class:`ToolFailure`. The loop records that in the tool step's ``tool_error``, a content key
of the privacy filter; it is never part of a ``ToolResult``, so no path leads from it to a
provider.

Arguments that are refused are described as *problems*: ``(phrase, path)`` pairs, where the
phrase comes from a closed vocabulary (``expected integer, got string``, ``missing required
property``…) and the path is the JSON location (``$.items[2].name``). The schema check
(:mod:`nr_llm_core._schema`) and ``@tool``'s structuring (:mod:`nr_llm_core.arguments`) both
speak it, and :func:`render_problems` is the one place that turns problems into text.
"""

from __future__ import annotations

import enum
import json
import re
import sys
from collections.abc import Iterable
from typing import Any, Final

import attrs

from nr_llm_core._inert import (
    ABSENT,
    exception_args,
    exception_dict,
    know_host_types,
    own_item,
    qualified_name,
)
from nr_llm_core.bounding import coerce_utf8
from nr_llm_core.errors import NrLlmError
from nr_llm_core.results import ToolResult

__all__ = [
    "MAX_DETAIL_CHARS",
    "MAX_PROBLEMS_SHOWN",
    "FailureKind",
    "InvalidArguments",
    "Phrase",
    "Problem",
    "ToolFailed",
    "ToolFailure",
    "error_result",
    "exception_failure",
    "expected",
    "host_phrase",
    "invalid_arguments",
    "own_field",
    "read_exception",
    "render_path",
    "render_problems",
    "short",
]

#: A refused argument: a phrase of the host's vocabulary and the JSON path it applies to.
Problem = tuple[str, tuple[str | int, ...]]

#: Characters kept of a plugin exception's message in the trace.
MAX_DETAIL_CHARS: Final = 500
_MAX_TYPE_CHARS: Final = 200
#: At most this many problems are named in an invalid-arguments text (then "and N more").
MAX_PROBLEMS_SHOWN: Final = 3
_MAX_REASON_CHARS: Final = 300
_MAX_PATH_SEGMENTS: Final = 12
_MAX_KEY_CHARS: Final = 40


def short(text: str, limit: int) -> str:
    """``text`` (an exact ``str``) as valid UTF-8, cut to ``limit`` characters with ``…``.

    Only the first ``2 * limit + 1`` code units are ever coerced (a message can be a
    gigabyte): coercion joins at most two code units into one character, so they hold more
    than ``limit`` characters exactly when the whole text does.
    """
    text = coerce_utf8(text[: 2 * limit + 1])
    return text if len(text) <= limit else text[: limit - 1] + "…"


class FailureKind(enum.StrEnum):
    """Why the host wrote an error result instead of the tool's own (host vocabulary)."""

    UNKNOWN_TOOL = "unknown_tool"
    NOT_PERMITTED = "not_permitted"
    INVALID_ARGUMENTS = "invalid_arguments"
    FAILED = "failed"
    INVALID_RESULT = "invalid_result"
    TIMED_OUT = "timed_out"
    NOT_APPROVED = "not_approved"


@attrs.frozen(kw_only=True)
class ToolFailure:
    """What the host knows about a call it answered with an error result, for the trace.

    ``kind`` is host vocabulary. ``exception_type`` and ``message`` are what a plugin's
    exception said (its qualified type name; its message when that is one plain ``str``),
    coerced to UTF-8 and bounded: plugin bytes, recorded under the privacy filter as the step's
    ``tool_error`` and never sent to a model.
    """

    kind: FailureKind
    exception_type: str | None = None
    message: str | None = None

    def to_dict(self) -> dict[str, str]:
        """``{"kind", "exception_type"?, "message"?}``: the step's ``tool_error`` value."""
        out = {"kind": self.kind.value}
        if self.exception_type is not None:
            out["exception_type"] = self.exception_type
        if self.message is not None:
            out["message"] = self.message
        return out


# -- reading a plugin's exception without running its code -----------------------------------


def _message(exc: BaseException) -> str | None:
    args = exception_args(exc)
    if type(args) is tuple and len(args) == 1 and type(args[0]) is str:
        return short(args[0], MAX_DETAIL_CHARS)
    return None


def read_exception(exc: BaseException) -> tuple[str, str | None]:
    """A plugin exception's qualified type name and its message (when that is one plain
    ``str``), both bounded; no method of ``exc``, of its class or of its metaclass runs (see
    :mod:`nr_llm_core._inert`)."""
    return qualified_name(type(exc)), _message(exc)


def own_field(exc: BaseException, name: str) -> object:
    """A field a host exception (``InvalidArguments``, ``ToolFailed``) keeps in its instance
    dict, read without running code: a plugin can raise one of them with a hostile dict.
    ``None`` when it is not there."""
    value = own_item(exception_dict(exc), name)
    return None if value is ABSENT else value


def _bounded_str(value: object, limit: int) -> str | None:
    return short(value, limit) if type(value) is str else None


class ToolFailed(NrLlmError):
    """Raised by host code in place of a tool's exception that was read in another process (an
    isolated tool's worker). ``exception_type`` and ``message`` are what the worker reported,
    kept for the trace like an in-process exception's; the model reads ``failed.``."""

    def __init__(self, exception_type: str | None, message: str | None) -> None:
        self.exception_type = exception_type
        self.message = message
        super().__init__("the tool failed in its worker")


def exception_failure(kind: FailureKind, exc: BaseException) -> ToolFailure:
    """The :class:`ToolFailure` for an exception a tool raised; no method of ``exc`` runs."""
    if type(exc) is ToolFailed:
        return ToolFailure(
            kind=kind,
            exception_type=_bounded_str(own_field(exc, "exception_type"), _MAX_TYPE_CHARS),
            message=_bounded_str(own_field(exc, "message"), MAX_DETAIL_CHARS),
        )
    exception_type, message = read_exception(exc)
    return ToolFailure(kind=kind, exception_type=exception_type, message=message)


# -- the vocabulary of argument problems -------------------------------------------------------


class Phrase(enum.StrEnum):
    """The fixed phrases of argument problems (with :func:`expected`, the whole vocabulary)."""

    MISSING = "missing required property"
    UNEXPECTED = "unexpected property"
    NOT_ALLOWED = "not one of the allowed values"
    NOT_CONSTANT = "not the allowed value"
    INVALID = "invalid value"
    NOT_JSON = "not plain JSON"
    TOO_DEEP = "nested too deeply"
    TOO_SHORT = "too short"
    TOO_LONG = "too long"
    TOO_FEW_ITEMS = "too few items"
    TOO_MANY_ITEMS = "too many items"
    UNEXPECTED_ITEM = "unexpected item"
    TOO_FEW_PROPERTIES = "too few properties"
    TOO_MANY_PROPERTIES = "too many properties"
    BELOW_MINIMUM = "below the minimum"
    ABOVE_MAXIMUM = "above the maximum"
    NOT_MULTIPLE = "not a multiple of the required number"
    NO_PATTERN_MATCH = "does not match the pattern"
    BAD_FORMAT = "not in the required format"
    NO_SCHEMA_MATCH = "matches none of the allowed schemas"
    MANY_SCHEMAS_MATCH = "matches more than one of the allowed schemas"
    FORBIDDEN_MATCH = "matches a schema it must not match"
    NOT_ALLOWED_HERE = "not allowed here"
    NO_MATCHING_ITEM = "no matching item"
    NOT_UNIQUE = "items are not unique"
    BAD_PROPERTY_NAME = "invalid property name"
    BAD_CONTENT = "invalid encoded content"
    SCHEMA_MISMATCH = "does not match the schema"
    # Said of the arguments as a whole, without a path.
    NOT_OBJECT = "arguments must be a JSON object"
    NOT_VALID_JSON = "arguments are not valid JSON"
    TOO_LARGE = "arguments are too large"


_PHRASES: Final = frozenset(p.value for p in Phrase)
_WHOLE: Final = frozenset(
    {Phrase.NOT_OBJECT.value, Phrase.NOT_VALID_JSON.value, Phrase.TOO_LARGE.value}
)
_JSON_TYPES: Final = ("object", "array", "string", "integer", "number", "boolean", "null")
_EXPECTABLE: Final = (*_JSON_TYPES, "finite number")
_GOT: Final = (*_JSON_TYPES, "a non-JSON value")
_WORDS = "|".join(re.escape(t) for t in _EXPECTABLE)
_EXPECTED_RE: Final = re.compile(
    rf"expected (?:{_WORDS})(?: or (?:{_WORDS}))*(?:, got (?:{'|'.join(_GOT)}))?"
)


def expected(types: Iterable[object], got: str | None = None) -> str:
    """``expected <type>[ or <type>…][, got <type>]`` from JSON type names; any name outside
    the vocabulary makes it :attr:`Phrase.INVALID`."""
    wanted = [t for t in types if type(t) is str and t in _EXPECTABLE]
    if not wanted or (got is not None and got not in _GOT):
        return Phrase.INVALID.value
    text = "expected " + " or ".join(dict.fromkeys(wanted))
    return text if got is None else f"{text}, got {got}"


def host_phrase(value: object) -> str:
    """``value`` if it is a phrase of the vocabulary, else :attr:`Phrase.INVALID`: a problem
    that did not come from host code says nothing of its own."""
    if type(value) is str and (value in _PHRASES or _EXPECTED_RE.fullmatch(value)):
        return value
    return Phrase.INVALID.value


# -- rendering ---------------------------------------------------------------------------------

_NAME_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}")


def render_path(path: object) -> str:
    """``$`` and the segments of ``path``: ``.name`` for a name-shaped key, ``[2]`` for an
    index, ``["a key"]`` (JSON-escaped, ASCII, at most 40 characters) for any other key."""
    if type(path) is not tuple:
        return "$"
    parts = ["$"]
    for segment in path[:_MAX_PATH_SEGMENTS]:
        if type(segment) is int:
            parts.append(f"[{segment}]")
        elif type(segment) is str and _NAME_RE.fullmatch(segment):
            parts.append(f".{segment}")
        elif type(segment) is str:
            parts.append(f"[{json.dumps(short(segment, _MAX_KEY_CHARS))}]")
        else:
            parts.append("[?]")
    if len(path) > _MAX_PATH_SEGMENTS:
        parts.append("…")
    return "".join(parts)


def _render_one(problem: object) -> str:
    if type(problem) is not tuple or len(problem) != 2:
        return f"{Phrase.INVALID.value} @ $"
    phrase = host_phrase(problem[0])
    if phrase in _WHOLE:
        return phrase
    return f"{phrase} @ {render_path(problem[1])}"


def render_problems(problems: object) -> str:
    """The reason of an invalid-arguments text: the first :data:`MAX_PROBLEMS_SHOWN` problems
    as ``<phrase> @ <path>``, joined by ``; ``, then ``and N more``; at most 300 characters."""
    items: tuple[Any, ...] = problems if type(problems) is tuple else ()
    if not items:
        return Phrase.SCHEMA_MISMATCH.value
    text = "; ".join(_render_one(p) for p in items[:MAX_PROBLEMS_SHOWN])
    if len(items) > MAX_PROBLEMS_SHOWN:
        text += f"; and {len(items) - MAX_PROBLEMS_SHOWN} more"
    return short(text, _MAX_REASON_CHARS)


class InvalidArguments(NrLlmError):
    """Raised by a ``@tool`` function's ``execute`` when its arguments cannot be structured
    into the parameter types; the seam answers it with the invalid-arguments error.

    ``problems`` are ``(phrase, path)`` pairs of the host's vocabulary; ``str()`` of the
    exception is their rendering (host words). ``exception_type`` and ``message`` say what the
    first exception raised by an argument type's own code (a validator, a converter,
    ``__attrs_post_init__``, a structure hook) was, for the trace only.
    """

    def __init__(
        self,
        problems: Iterable[Problem],
        *,
        exception_type: str | None = None,
        message: str | None = None,
    ) -> None:
        self.problems = tuple(problems)
        self.exception_type = exception_type
        self.message = message
        super().__init__(render_problems(self.problems))


# -- the error results -------------------------------------------------------------------------

_TEXTS: Final = {
    FailureKind.UNKNOWN_TOOL: 'Error: unknown tool "{}"',
    FailureKind.NOT_PERMITTED: 'Error: tool "{}" not permitted',
    FailureKind.FAILED: 'Error: tool "{}" failed.',
    FailureKind.INVALID_RESULT: 'Error: tool "{}" returned an invalid result.',
    FailureKind.TIMED_OUT: 'Error: tool "{}" timed out.',
    FailureKind.NOT_APPROVED: 'Error: the user did not approve the call to "{}".',
}


def error_result(
    kind: FailureKind, name: str, failure: ToolFailure | None = None
) -> tuple[ToolResult, ToolFailure]:
    """The error result of ``kind`` for the tool ``name`` (a registered name, or one already
    made displayable), and the failure the trace records (``failure``, or just the kind)."""
    text = _TEXTS[kind].format(name)
    return ToolResult.error(text), failure if failure is not None else ToolFailure(kind=kind)


def invalid_arguments(
    name: str,
    problems: object,
    *,
    exception_type: object = None,
    message: object = None,
) -> tuple[ToolResult, ToolFailure]:
    """``Error: invalid arguments for tool "<name>": <problems>`` and its failure record."""
    text = f'Error: invalid arguments for tool "{name}": {render_problems(problems)}'
    failure = ToolFailure(
        kind=FailureKind.INVALID_ARGUMENTS,
        exception_type=_bounded_str(exception_type, _MAX_TYPE_CHARS),
        message=_bounded_str(message, MAX_DETAIL_CHARS),
    )
    return ToolResult.error(text), failure


# What a plugin raises of ours (InvalidArguments, ToolFailed) is named in host words.
know_host_types(sys.modules[__name__])
