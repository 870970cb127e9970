"""Host-made error texts and failure records: the vocabulary, the path rendering, and reading a
plugin's exception without running any of its code."""

from __future__ import annotations

from typing import Any

import pytest

from nr_llm_core import ToolHost, ToolResult, ToolSpec, hookimpl
from nr_llm_core.failures import (
    FailureKind,
    InvalidArguments,
    Phrase,
    ToolFailed,
    ToolFailure,
    error_result,
    exception_failure,
    expected,
    host_phrase,
    invalid_arguments,
    read_exception,
    render_path,
    render_problems,
)


def test_the_error_texts_are_the_contracts() -> None:
    texts = {
        kind: error_result(kind, "t")[0].content
        for kind in FailureKind
        if kind.value != "invalid_arguments"
    }
    assert texts == {
        FailureKind.UNKNOWN_TOOL: 'Error: unknown tool "t"',
        FailureKind.NOT_PERMITTED: 'Error: tool "t" not permitted',
        FailureKind.FAILED: 'Error: tool "t" failed.',
        FailureKind.INVALID_RESULT: 'Error: tool "t" returned an invalid result.',
        FailureKind.TIMED_OUT: 'Error: tool "t" timed out.',
        FailureKind.NOT_APPROVED: 'Error: the user did not approve the call to "t".',
    }
    result, failure = invalid_arguments("t", (("missing required property", ("a",)),))
    assert result == ToolResult.error(
        'Error: invalid arguments for tool "t": missing required property @ $.a'
    )
    assert failure == ToolFailure(kind=FailureKind.INVALID_ARGUMENTS)


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        ((), "$"),
        (("a", 0, "b_2"), "$.a[0].b_2"),
        (("a b",), '$["a b"]'),
        (("1a",), '$["1a"]'),
        (("",), '$[""]'),
        (("\x1b[2J",), '$["\\u001b[2J"]'),
        (("é",), '$["\\u00e9"]'),
        (("\ud800",), '$["\\ufffd"]'),  # a lone surrogate is coerced first
        ((True, 1.5, None), "$[?][?][?]"),  # only str and int are path segments
        (tuple("abcdefghijklmn"), "$.a.b.c.d.e.f.g.h.i.j.k.l…"),
        ("not a tuple", "$"),
    ],
)
def test_a_path_is_rendered_safely(path: Any, shown: str) -> None:
    assert render_path(path) == shown


def test_a_phrase_outside_the_vocabulary_says_invalid_value() -> None:
    assert host_phrase("missing required property") == "missing required property"
    assert host_phrase("expected string or null, got integer") == (
        "expected string or null, got integer"
    )
    for forged in ("secret detail", "expected password", "expected string, got hunter2", 7, None):
        assert host_phrase(forged) == "invalid value"


def test_expected_builds_only_from_json_type_names() -> None:
    assert expected(["integer", "null"], "string") == "expected integer or null, got string"
    assert expected(["integer", "integer"]) == "expected integer"
    assert expected(["password"]) == "invalid value"
    assert expected(["string"], "hunter2") == "invalid value"


def test_problems_that_are_not_the_hosts_shape_are_rendered_from_host_words() -> None:
    assert render_problems(()) == "does not match the schema"
    assert render_problems("not problems") == "does not match the schema"
    forged = (("CANARY", ("a",)), ["x", ()], "y", ("expected string", ("b",), "extra"))
    assert render_problems(forged) == (
        "invalid value @ $.a; invalid value @ $; invalid value @ $; and 1 more"
    )
    assert render_problems(((Phrase.NOT_OBJECT.value, ("ignored",)),)) == (
        "arguments must be a JSON object"
    )


def test_the_rendered_reason_is_bounded() -> None:
    long = tuple(("missing required property", ("k" * 39 + str(i),) * 12) for i in range(3))
    assert len(render_problems(long)) == 300


def test_invalid_arguments_renders_its_problems_as_its_message() -> None:
    exc = InvalidArguments((("too long", ("s",)),), exception_type="X", message="m")
    assert str(exc) == "too long @ $.s"
    assert (exc.exception_type, exc.message) == ("X", "m")


# -- reading a plugin's exception --------------------------------------------------------------


def test_an_exceptions_type_and_message_are_read_bounded() -> None:
    class Local(Exception):
        pass

    assert read_exception(ValueError("plain")) == ("ValueError", "plain")
    assert read_exception(Local("x" * 600)) == (
        f"{__name__}.test_an_exceptions_type_and_message_are_read_bounded.<locals>.Local",
        "x" * 499 + "…",
    )
    assert read_exception(KeyError("k", "two args")) == ("KeyError", None)
    assert read_exception(ValueError(b"bytes")) == ("ValueError", None)
    assert read_exception(ValueError("\ud800")) == ("ValueError", "\ufffd")


def test_no_code_of_a_hostile_exception_or_its_class_runs() -> None:
    ran: list[str] = []

    class Meta(type):
        @property  # type: ignore[misc]
        def __name__(cls) -> str:  # type: ignore[override]
            ran.append("metaclass __name__")
            return "Forged"

        @property  # type: ignore[misc]
        def __module__(cls) -> str:  # type: ignore[override]
            ran.append("metaclass __module__")
            return "forged"

        def __getattribute__(cls, name: str) -> Any:
            ran.append(f"metaclass {name}")
            return super().__getattribute__(name)

    class Hostile(Exception, metaclass=Meta):
        @property  # type: ignore[misc]
        def args(self) -> Any:
            ran.append("args")
            return ("forged",)

        def __str__(self) -> str:
            ran.append("__str__")
            return "forged"

        def __repr__(self) -> str:
            ran.append("__repr__")
            return "forged"

        def __getattribute__(self, name: str) -> Any:
            ran.append(f"instance {name}")
            return super().__getattribute__(name)

    exc = Hostile.__new__(Hostile)
    BaseException.__init__(exc, "the real message")
    ran.clear()
    type_name, message = read_exception(exc)
    assert ran == []
    assert type_name.endswith(".Hostile") and message == "the real message"
    failure = exception_failure(FailureKind.FAILED, exc)
    assert ran == []
    assert failure.message == "the real message"


def test_a_worker_reported_failure_keeps_what_the_worker_said_bounded() -> None:
    failure = exception_failure(FailureKind.FAILED, ToolFailed("pkg.Err", "m" * 900))
    assert failure == ToolFailure(
        kind=FailureKind.FAILED, exception_type="pkg.Err", message="m" * 499 + "…"
    )
    odd = exception_failure(FailureKind.FAILED, ToolFailed(7, None))  # type: ignore[arg-type]
    assert odd == ToolFailure(kind=FailureKind.FAILED)


# -- the seam: what the model reads, what the trace gets -----------------------------------------


class Forger:
    """Raises an InvalidArguments of its own, with text of its own in every field."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("forger", "Forges.")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        raise InvalidArguments(
            [("CANARYphrase", ("CANARY key!",)), ("expected string", (0,))],
            exception_type="CANARYtype",
            message="CANARYmessage",
        )


def test_a_plugins_own_invalid_arguments_is_rendered_from_host_words() -> None:
    host = ToolHost()
    host.register(Forger())
    result, failure = host.invoke_traced("forger", {})
    assert result.content == (
        'Error: invalid arguments for tool "forger": invalid value @ $["CANARY key!"]; '
        "expected string @ $[0]"
    )
    assert failure == ToolFailure(
        kind=FailureKind.INVALID_ARGUMENTS, exception_type="CANARYtype", message="CANARYmessage"
    )


def test_a_subclass_of_invalid_arguments_is_a_tool_failure() -> None:
    class Sneaky(InvalidArguments):
        pass

    class Raiser(Forger):
        @hookimpl
        def execute(self, arguments: dict[str, Any]) -> ToolResult:
            raise Sneaky([("missing required property", ("a",))])

    host = ToolHost()
    host.register(Raiser())
    result, failure = host.invoke_traced("forger", {})
    assert result.content == 'Error: tool "forger" failed.'
    assert failure is not None and failure.kind is FailureKind.FAILED


def test_invoke_returns_the_result_invoke_traced_returns() -> None:
    host = ToolHost()
    host.register(Forger())
    assert host.invoke("forger", {}) == host.invoke_traced("forger", {})[0]
    assert host.invoke_traced("nope", {}) == (
        ToolResult.error('Error: unknown tool "nope"'),
        ToolFailure(kind=FailureKind.UNKNOWN_TOOL),
    )
