"""ToolHost: registration rules and the invoke() seam, in the order DESIGN.md gives."""

from __future__ import annotations

import logging
import threading
from typing import Any, ClassVar

import pytest

from nr_llm_core import (
    Artifact,
    ToolContext,
    ToolHost,
    ToolLoadError,
    ToolResult,
    ToolSpec,
    hookimpl,
)

SECRET = "sk-CANARY-exception-secret-0042"


def make_tool(name: str = "echo", *, schema: dict[str, Any] | None = None, **spec: Any) -> Any:
    class Tool:
        calls: ClassVar[list[Any]] = []

        @hookimpl
        def tool_spec(self) -> ToolSpec:
            return ToolSpec(name, f"The {name} tool.", schema, **spec)

        @hookimpl
        def execute(self, arguments: dict[str, Any]) -> ToolResult:
            self.calls.append(arguments)
            return ToolResult.text(str(arguments.get("text", "")), Artifact.text("echo", "kept"))

    return Tool()


class Raises:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("boom", "Raises.")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        raise self.exc


class Returns:
    def __init__(self, value: object) -> None:
        self.value = value

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("returns", "Returns a value.")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> Any:
        return self.value


def host_with(*plugins: object, **options: Any) -> ToolHost:
    host = ToolHost(**options)
    for plugin in plugins:
        host.register(plugin)
    return host


# -- the order of the seam ----------------------------------------------------------------------


def test_unknown_tool_is_reported_before_the_allow_list() -> None:
    host = host_with(make_tool())
    assert host.invoke("nope", {}, allowed=[]).content == 'Error: unknown tool "nope"'
    assert host.invoke("nope", {}).is_error


def test_unknown_tool_name_from_a_model_is_bounded() -> None:
    out = ToolHost().invoke("x" * 10_000 + "\ud800", {})
    assert out.is_error
    assert len(out.content) < 120


@pytest.mark.parametrize("name", [None, 3, ["echo"], {"echo": 1}])
def test_non_str_tool_names_are_unknown(name: Any) -> None:
    assert ToolHost().invoke(name, {}).content == 'Error: unknown tool "?"'


def test_allow_list_none_permits_all_and_empty_permits_none() -> None:
    tool = make_tool()
    host = host_with(tool)
    assert host.invoke("echo", {"text": "hi"}).content == "hi"
    assert host.invoke("echo", {}, allowed=[]).content == 'Error: tool "echo" not permitted'
    assert host.invoke("echo", {}, allowed=["other"]).content == 'Error: tool "echo" not permitted'
    assert host.invoke("echo", {"text": "ok"}, allowed={"echo"}).content == "ok"
    assert len(tool.calls) == 2


def test_disabled_tools_are_not_permitted_even_when_allowed() -> None:
    off = make_tool("off", enabled_by_default=False)
    host = host_with(off)
    assert not host.is_enabled("off")
    assert host.invoke("off", {}, allowed=["off"]).content == 'Error: tool "off" not permitted'
    assert off.calls == []
    assert host_with(make_tool("off", enabled_by_default=False), enable=["off"]).is_enabled("off")


def test_a_disabled_group_cannot_be_reenabled_per_tool() -> None:
    host = host_with(make_tool("g", group="files"), enable=["g"], disable_groups=["files"])
    assert not host.is_enabled("g")
    assert host.permitted() == []
    assert host_with(make_tool("d"), disable=["d"]).permitted() == []


@pytest.mark.parametrize("arguments", [[], "text", None, 1, ("a",)])
def test_arguments_must_be_a_json_object(arguments: Any) -> None:
    tool = make_tool()
    out = host_with(tool).invoke("echo", arguments)
    assert (
        out.content == 'Error: invalid arguments for tool "echo": arguments must be a JSON object'
    )
    assert tool.calls == []


def test_arguments_are_validated_against_the_schema_and_execute_is_not_called() -> None:
    schema = {
        "type": "object",
        "properties": {"text": {"type": "string"}, "n": {"type": "integer", "maximum": 3}},
        "required": ["text"],
        "additionalProperties": False,
    }
    tool = make_tool(schema=schema)
    host = host_with(tool)
    for bad in ({}, {"text": 1}, {"text": "a", "n": 9}, {"text": "a", "extra": True}):
        out = host.invoke("echo", bad)
        assert out.is_error
        assert out.content.startswith('Error: invalid arguments for tool "echo": ')
        assert out.artifacts == ()
    assert tool.calls == []
    assert host.invoke("echo", {"text": "fine", "n": 2}).content == "fine"


def test_invalid_argument_reason_is_bounded() -> None:
    schema = {"type": "object", "properties": {"t": {"enum": ["a" * 5000]}}}
    out = host_with(make_tool(schema=schema)).invoke("echo", {"t": "b" * 100_000})
    assert out.is_error
    assert len(out.content) < 400


def test_exceptions_become_a_generic_error_and_are_logged_without_their_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Huge(Exception):
        def __str__(self) -> str:
            return SECRET * 1_000_000

    host = host_with(Raises(RuntimeError(SECRET)))
    with caplog.at_level(logging.INFO, logger="nr_llm"):
        out = host.invoke("boom", {})
    assert out.content == 'Error: tool "boom" failed.'
    assert out.is_error and out.artifacts == ()
    assert SECRET not in out.content
    assert "RuntimeError" in caplog.text and "Traceback" in caplog.text
    assert "execute" in caplog.text  # the frame of the tool
    assert SECRET not in caplog.text
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="nr_llm"):
        assert host_with(Raises(Huge())).invoke("boom", {}).content == 'Error: tool "boom" failed.'
    assert SECRET not in caplog.text and "Huge" in caplog.text


class CustomBase(BaseException):
    pass


@pytest.mark.parametrize("exc", [SystemExit(3), CustomBase(), GeneratorExit(), StopIteration()])
def test_base_exceptions_do_not_escape(exc: BaseException) -> None:
    assert host_with(Raises(exc)).invoke("boom", {}).content == 'Error: tool "boom" failed.'


def test_keyboard_interrupt_is_not_swallowed() -> None:
    with pytest.raises(KeyboardInterrupt):
        host_with(Raises(KeyboardInterrupt())).invoke("boom", {})


@pytest.mark.parametrize(
    "value", [None, "a string", {"content": "x"}, 42, ToolResult, b"bytes"], ids=repr
)
def test_returning_anything_but_a_tool_result_is_an_invalid_result(value: object) -> None:
    out = host_with(Returns(value)).invoke("returns", {})
    assert out.content == 'Error: tool "returns" returned an invalid result.'
    assert out.is_error


def test_the_returned_result_is_rebuilt_from_bounded_values() -> None:
    original = ToolResult.text("x" * 60_000)
    out = host_with(Returns(original)).invoke("returns", {})
    assert out is not original
    assert len(out.content.encode()) == 50_000


def test_context_is_passed_to_tools_that_ask_for_it() -> None:
    seen: list[Any] = []

    class WithContext:
        @hookimpl
        def tool_spec(self) -> ToolSpec:
            return ToolSpec("ctx", "Context.")

        @hookimpl
        def execute(self, context: ToolContext | None, arguments: dict[str, Any]) -> ToolResult:
            seen.append((context, arguments))
            return ToolResult.text("ok")

    context = ToolContext(run_id="r1", call_id="c1", round=2)
    assert host_with(WithContext()).invoke("ctx", {"a": 1}, context=context).content == "ok"
    assert seen == [(context, {"a": 1})]


def test_a_tool_that_never_returns_times_out_and_the_host_goes_on() -> None:
    release = threading.Event()

    class Hangs:
        @hookimpl
        def tool_spec(self) -> ToolSpec:
            return ToolSpec("hang", "Hangs.")

        @hookimpl
        def execute(self, arguments: dict[str, Any]) -> ToolResult:
            release.wait()
            return ToolResult.text("late")

    host = host_with(Hangs(), make_tool())
    try:
        assert host.invoke("hang", {}, timeout=0.05).content == 'Error: tool "hang" timed out.'
        assert host.invoke("echo", {"text": "next"}).content == "next"
    finally:
        release.set()


def test_timeout_still_bounds_and_catches() -> None:
    host = host_with(Raises(ValueError("x")), Returns(ToolResult.text("y" * 60_000)), timeout=5)
    assert host.invoke("boom", {}).content == 'Error: tool "boom" failed.'
    assert len(host.invoke("returns", {}).content.encode()) == 50_000


# -- registration -------------------------------------------------------------------------------


def test_register_returns_the_name_and_lists_it() -> None:
    host = ToolHost()
    assert host.register(make_tool("b")) == "b"
    assert host.register(make_tool("a")) == "a"
    assert host.names() == ["a", "b"]
    assert [s.name for s in host.specs()] == ["a", "b"]
    assert host.distribution("a") is None


def test_register_accepts_a_class() -> None:
    class Tool:
        @hookimpl
        def tool_spec(self) -> ToolSpec:
            return ToolSpec("cls", "A class.")

        @hookimpl
        def execute(self, arguments: dict[str, Any]) -> ToolResult:
            return ToolResult.text("made")

    host = ToolHost()
    assert host.register(Tool) == "cls"
    assert host.invoke("cls", {}).content == "made"


def refused(plugin: object, match: str) -> ToolHost:
    host = ToolHost()
    with pytest.raises(ToolLoadError, match=match):
        host.register(plugin)
    assert host.names() == []
    assert host.plugin_manager.get_plugins() == set(), "a refused plugin stays registered"
    return host


@pytest.mark.parametrize("flag", ["wrapper", "hookwrapper", "tryfirst", "trylast"])
def test_wrappers_and_ordering_flags_are_refused(flag: str) -> None:
    class Tool:
        @hookimpl
        def tool_spec(self) -> ToolSpec:
            return ToolSpec("t", "d")

        @hookimpl(**{flag: True})
        def execute(self, arguments: dict[str, Any]) -> Any:
            yield  # pragma: no cover

    refused(Tool(), f"declares {flag}")


def test_a_misspelled_hook_is_refused() -> None:
    class Tool:
        @hookimpl
        def tool_spec(self) -> ToolSpec:
            return ToolSpec("t", "d")

        @hookimpl
        def exeucte(self, arguments: dict[str, Any]) -> ToolResult:
            return ToolResult.text("x")

    refused(Tool(), "unknown hook 'exeucte'")


def test_two_execute_impls_are_refused() -> None:
    class Tool:
        @hookimpl
        def tool_spec(self) -> ToolSpec:
            return ToolSpec("t", "d")

        @hookimpl
        def execute(self, arguments: dict[str, Any]) -> ToolResult:
            return ToolResult.text("one")

        @hookimpl(specname="execute")
        def execute_again(self, arguments: dict[str, Any]) -> ToolResult:
            return ToolResult.text("two")

    refused(Tool(), "more than one execute")


def test_missing_hooks_and_bad_signatures_are_refused() -> None:
    class NoExecute:
        @hookimpl
        def tool_spec(self) -> ToolSpec:
            return ToolSpec("t", "d")

    refused(NoExecute(), "no execute hookimpl")

    class ExtraArgument:
        @hookimpl
        def tool_spec(self) -> ToolSpec:
            return ToolSpec("t", "d")

        @hookimpl
        def execute(self, arguments: dict[str, Any], extra: int) -> ToolResult:
            return ToolResult.text("x")

    refused(ExtraArgument(), "extra")

    class NoArguments:
        @hookimpl
        def tool_spec(self) -> ToolSpec:
            return ToolSpec("t", "d")

        @hookimpl
        def execute(self) -> ToolResult:
            return ToolResult.text("x")

    refused(NoArguments(), "'arguments' parameter")

    class Async:
        @hookimpl
        def tool_spec(self) -> ToolSpec:
            return ToolSpec("t", "d")

        @hookimpl
        async def execute(self, arguments: dict[str, Any]) -> ToolResult:
            return ToolResult.text("x")

    refused(Async(), "coroutine")


def test_bad_specs_are_refused() -> None:
    class NotASpec:
        @hookimpl
        def tool_spec(self) -> Any:
            return {"name": "t"}

        @hookimpl
        def execute(self, arguments: dict[str, Any]) -> ToolResult:
            return ToolResult.text("x")

    refused(NotASpec(), "not a ToolSpec")

    class SpecRaises(NotASpec):
        @hookimpl
        def tool_spec(self) -> Any:
            raise RuntimeError(SECRET)

    host = refused(SpecRaises(), "tool_spec\\(\\) raised RuntimeError")
    assert host.load_errors == ()

    class BadSchema(NotASpec):
        @hookimpl
        def tool_spec(self) -> Any:
            return ToolSpec("t", "d", {"type": "object", "properties": {"x": {"type": "nope"}}})

    refused(BadSchema(), "not a valid JSON Schema")


def test_a_second_tool_with_the_same_name_is_refused() -> None:
    host = host_with(make_tool("same"))
    with pytest.raises(ToolLoadError, match="already registered"):
        host.register(make_tool("same"))
    assert len(host.plugin_manager.get_plugins()) == 1


def test_invoke_never_calls_the_pluggy_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    host = host_with(make_tool())

    def forbidden(**kwargs: Any) -> Any:
        raise AssertionError("pm.hook.execute was called")

    monkeypatch.setattr(host.plugin_manager.hook, "execute", forbidden)
    assert host.invoke("echo", {"text": "direct"}).content == "direct"


def test_a_plugin_registered_behind_the_hosts_back_changes_nothing() -> None:
    host = host_with(make_tool())

    class Rewriter:
        @hookimpl(wrapper=True)
        def execute(self, arguments: dict[str, Any]) -> Any:
            yield
            return ToolResult.text("rewritten")

    host.plugin_manager.register(Rewriter())
    assert host.invoke("echo", {"text": "original"}).content == "original"
    assert host.names() == ["echo"]


def test_validation_never_changes_the_callers_arguments() -> None:
    schema = {
        "type": "object",
        "properties": {"text": {"type": "string", "default": "filled-in"}, "n": {"default": 3}},
    }
    tool = make_tool(schema=schema)
    arguments: dict[str, Any] = {}
    host_with(tool).invoke("echo", arguments)
    assert arguments == {}
    assert tool.calls == [{}]


class Recorder:
    """Records what it was called with; ``order`` is the parameter order of its execute."""

    def __init__(self, order: str) -> None:
        self.seen: list[tuple[Any, Any]] = []
        self.order = order

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(f"rec_{self.order}", "Records its call.")


class RecordsArguments(Recorder):
    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        self.seen.append((arguments, None))
        return ToolResult.text("ok")


class RecordsArgumentsThenContext(Recorder):
    @hookimpl
    def execute(self, arguments: dict[str, Any], context: ToolContext | None) -> ToolResult:
        self.seen.append((arguments, context))
        return ToolResult.text("ok")


class RecordsContextThenArguments(Recorder):
    @hookimpl
    def execute(self, context: ToolContext | None, arguments: dict[str, Any]) -> ToolResult:
        self.seen.append((arguments, context))
        return ToolResult.text("ok")


@pytest.mark.parametrize(
    ("plugin", "gets_context"),
    [
        (RecordsArguments("a"), False),
        (RecordsArgumentsThenContext("ac"), True),
        (RecordsContextThenArguments("ca"), True),
    ],
    ids=["arguments", "arguments-context", "context-arguments"],
)
@pytest.mark.parametrize("timeout", [None, 30.0], ids=["direct", "with-timeout"])
def test_arguments_and_context_reach_the_tool_on_every_path(
    plugin: Recorder, gets_context: bool, timeout: float | None
) -> None:
    plugin.seen.clear()
    host = host_with(plugin)
    context = ToolContext(run_id="r", call_id="c", round=1)
    name = host.names()[0]
    assert host.invoke(name, {"q": 1}, context=context, timeout=timeout).content == "ok"
    assert plugin.seen == [({"q": 1}, context if gets_context else None)]


def test_a_failure_log_names_the_tool_and_keeps_the_message_for_debug_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    host = host_with(Raises(RuntimeError("detail " + "x" * 2_000)))
    with caplog.at_level(logging.INFO, logger="nr_llm"):
        host.invoke("boom", {})
    assert "'boom'" in caplog.text and "detail" not in caplog.text
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="nr_llm"):
        host.invoke("boom", {})
    debug = [r for r in caplog.records if r.levelno == logging.DEBUG]
    assert len(debug) == 1
    message = debug[0].getMessage()
    assert "'boom'" in message and "detail x" in message
    assert message.endswith("…") and len(message) < 600
