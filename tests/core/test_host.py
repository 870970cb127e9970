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


class Hangs:
    """Hangs until released, or for ``HANG_SECONDS``: far past every timeout these tests set,
    so that a seam that stopped applying its timeout fails the test instead of hanging it."""

    HANG_SECONDS = 30.0

    def __init__(self, release: threading.Event) -> None:
        self.release = release

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("hang", "Hangs until released.")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        self.release.wait(self.HANG_SECONDS)
        return ToolResult.text("late")


def test_a_tool_that_never_returns_times_out_and_the_host_goes_on() -> None:
    release = threading.Event()
    host = host_with(Hangs(release), make_tool())
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


def refused(plugin: object, reason: str, *, exact: bool = True) -> ToolHost:
    """Register ``plugin``: refused with ``reason`` (a part of it when not ``exact``), and
    nothing of it left behind."""
    host = ToolHost()
    with pytest.raises(ToolLoadError) as raised:
        host.register(plugin)
    if exact:
        assert raised.value.reason == reason
    else:
        assert reason in raised.value.reason
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

    refused(Tool(), f"hookimpl 'execute' declares {flag}, which tools may not use")


def test_a_misspelled_hook_is_refused() -> None:
    class Tool:
        @hookimpl
        def tool_spec(self) -> ToolSpec:
            return ToolSpec("t", "d")

        @hookimpl
        def exeucte(self, arguments: dict[str, Any]) -> ToolResult:
            return ToolResult.text("x")

    refused(Tool(), "unknown hook 'exeucte' (a tool implements tool_spec and execute)")


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

    refused(Tool(), "more than one execute implementation ('execute', 'execute_again')")


def test_missing_hooks_and_bad_signatures_are_refused() -> None:
    class NoExecute:
        @hookimpl
        def tool_spec(self) -> ToolSpec:
            return ToolSpec("t", "d")

    refused(NoExecute(), "no execute hookimpl")

    class NoSpec:
        @hookimpl
        def execute(self, arguments: dict[str, Any]) -> ToolResult:
            return ToolResult.text("x")

    refused(NoSpec(), "no tool_spec hookimpl")

    class ExtraArgument:
        @hookimpl
        def tool_spec(self) -> ToolSpec:
            return ToolSpec("t", "d")

        @hookimpl
        def execute(self, arguments: dict[str, Any], extra: int) -> ToolResult:
            return ToolResult.text("x")

    refused(ExtraArgument(), "{'extra'}", exact=False)  # pluggy's own words

    class NoArguments:
        @hookimpl
        def tool_spec(self) -> ToolSpec:
            return ToolSpec("t", "d")

        @hookimpl
        def execute(self) -> ToolResult:
            return ToolResult.text("x")

    refused(NoArguments(), "execute must take an 'arguments' parameter")

    class Async:
        @hookimpl
        def tool_spec(self) -> ToolSpec:
            return ToolSpec("t", "d")

        @hookimpl
        async def execute(self, arguments: dict[str, Any]) -> ToolResult:
            return ToolResult.text("x")

    refused(Async(), "execute must be a plain function, not a coroutine function")


def test_bad_specs_are_refused() -> None:
    class NotASpec:
        @hookimpl
        def tool_spec(self) -> Any:
            return {"name": "t"}

        @hookimpl
        def execute(self, arguments: dict[str, Any]) -> ToolResult:
            return ToolResult.text("x")

    refused(NotASpec(), "tool_spec() returned dict, not a ToolSpec")

    class SpecRaises(NotASpec):
        @hookimpl
        def tool_spec(self) -> Any:
            raise RuntimeError(SECRET)

    host = refused(SpecRaises(), "tool_spec() raised RuntimeError")
    assert host.load_errors == ()

    class BadSchema(NotASpec):
        @hookimpl
        def tool_spec(self) -> Any:
            return ToolSpec("t", "d", {"type": "object", "properties": {"x": {"type": "nope"}}})

    refused(
        BadSchema(),
        "parameters of 't' are not a valid JSON Schema: matches none of the allowed schemas"
        " @ $.properties.x.type",
    )


def test_a_second_tool_with_the_same_name_is_refused() -> None:
    host = host_with(make_tool("same"))
    with pytest.raises(ToolLoadError) as raised:
        host.register(make_tool("same"))
    assert raised.value.reason == "tool name 'same' is already registered"
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
    (error,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert error.getMessage().splitlines()[:2] == [
        "tool 'boom' raised: RuntimeError",
        "Traceback (most recent call last):",
    ]
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="nr_llm"):
        host.invoke("boom", {})
    debug = [r for r in caplog.records if r.levelno == logging.DEBUG]
    assert len(debug) == 1
    # The message is cut to 500 characters, the last one the ellipsis.
    expected = "detail " + "x" * (499 - len("detail ")) + "…"
    assert debug[0].getMessage() == f"tool 'boom' exception message: {expected}"


@pytest.mark.parametrize(
    "exc",
    [
        RuntimeError(),
        RuntimeError("two", "args"),
        KeyError(42),
        RuntimeError(type("S", (str,), {})("x")),
    ],
    ids=["no-args", "two-args", "not-a-str", "str-subclass"],
)
def test_at_debug_only_a_single_str_message_is_logged(
    exc: BaseException, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="nr_llm"):
        assert host_with(Raises(exc)).invoke("boom", {}).content == 'Error: tool "boom" failed.'
    assert [r.levelno for r in caplog.records] == [logging.ERROR]


def test_a_tools_exception_is_logged_as_its_own_on_the_timeout_path_too(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="nr_llm"):
        out = host_with(Raises(ValueError("x"))).invoke("boom", {}, timeout=30)
    assert out.content == 'Error: tool "boom" failed.'
    (error,) = caplog.records
    assert error.getMessage().splitlines()[0] == "tool 'boom' raised: ValueError"


def test_the_hosts_timeout_applies_to_calls_that_give_none(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = threading.Event()
    host = host_with(Hangs(release), timeout=0.05)
    try:
        with caplog.at_level(logging.INFO, logger="nr_llm"):
            assert host.invoke("hang", {}).content == 'Error: tool "hang" timed out.'
    finally:
        release.set()
    assert [r.getMessage() for r in caplog.records] == [
        "tool 'hang' did not return in time (limit 0.05 s)"
    ]


def test_a_call_with_a_timeout_runs_in_a_named_daemon_thread() -> None:
    seen: list[tuple[str, bool]] = []

    class Where:
        @hookimpl
        def tool_spec(self) -> ToolSpec:
            return ToolSpec("where", "Says which thread runs it.")

        @hookimpl
        def execute(self, arguments: dict[str, Any]) -> ToolResult:
            thread = threading.current_thread()
            seen.append((thread.name, thread.daemon))
            return ToolResult.text("here")

    host = host_with(Where())
    assert host.invoke("where", {}, timeout=30).content == "here"
    # A daemon: a tool that never returns does not keep the process from exiting.
    assert seen == [("nr-llm-tool-where", True)]
    seen.clear()
    assert host.invoke("where", {}).content == "here"
    assert seen == [(threading.current_thread().name, threading.current_thread().daemon)]


def test_an_invalid_result_is_logged_with_its_type(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="nr_llm"):
        host_with(Returns({"content": "x"})).invoke("returns", {})
    assert [r.getMessage() for r in caplog.records] == [
        "tool 'returns' returned dict, not a valid ToolResult"
    ]


def test_an_invalid_argument_reason_is_the_kind_and_the_path_in_host_words() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    out = host_with(make_tool(schema=schema)).invoke("echo", {"n": "x"})
    assert out.content == (
        'Error: invalid arguments for tool "echo": expected integer, got string @ $.n'
    )


def test_arguments_nested_deeper_than_a_recursive_schema_allows_are_refused_unchecked() -> None:
    """A schema with references makes the (native) validator recurse once per level of the
    arguments: arguments deeper than the host allows are refused before it runs, naming the
    path (12 segments shown) instead of crashing a thread with a small stack."""
    schema = {"type": "object", "additionalProperties": {"$ref": "#"}}
    tool = make_tool(schema=schema)
    arguments: dict[str, Any] = {}
    for _ in range(100_000):
        arguments = {"a": arguments}
    out = host_with(tool).invoke("echo", arguments)
    assert out.content == (
        'Error: invalid arguments for tool "echo": nested too deeply @ $' + ".a" * 12 + "…"
    )
    assert tool.calls == []


def test_a_tool_name_is_shown_whole_up_to_80_characters() -> None:
    host = ToolHost()
    assert host.invoke("x" * 80, {}).content == f'Error: unknown tool "{"x" * 80}"'
    assert host.invoke("x" * 81, {}).content == f'Error: unknown tool "{"x" * 79}…"'


def test_permitted_lists_the_enabled_tools_the_allow_list_names() -> None:
    host = host_with(make_tool("b"), make_tool("a"), make_tool("off", enabled_by_default=False))
    assert host.permitted() == ["a", "b"]
    assert host.permitted(["b", "off", "not_loaded"]) == ["b"]
    assert host.permitted([]) == []


def test_tool_switches_from_the_environment_are_comma_separated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NR_LLM_DISABLE_TOOLS", "a,b")
    monkeypatch.setenv("NR_LLM_ENABLE_TOOLS", "off1,off2")
    monkeypatch.setenv("NR_LLM_DISABLE_GROUPS", "g1,g2")
    host = host_with(
        make_tool("a"),
        make_tool("b"),
        make_tool("c"),
        make_tool("off1", enabled_by_default=False),
        make_tool("off2", enabled_by_default=False),
        make_tool("in_g2", group="g2"),
    )
    assert host.permitted() == ["c", "off1", "off2"]


# -- a load error's reason ------------------------------------------------------------------------


def test_an_import_failures_reason_holds_only_the_import_systems_names() -> None:
    import json
    import types

    from nr_llm_core._registry import import_failure

    secret = "sk-live-CANARY-reason-0001"
    assert import_failure(ImportError(secret)) == "could not be imported: ImportError"
    assert (
        import_failure(ModuleNotFoundError(secret)) == "could not be imported: ModuleNotFoundError"
    )
    assert import_failure(AttributeError(secret)) == "could not be imported: AttributeError"
    assert import_failure(RuntimeError(secret)) == "could not be imported: RuntimeError"
    assert import_failure(ModuleNotFoundError(secret, name="nr_llm_missing")) == (
        "could not be imported: ModuleNotFoundError: No module named 'nr_llm_missing'"
    )
    assert import_failure(ImportError(secret, name="json")) == (
        "could not be imported: ImportError: cannot import from 'json'"
    )
    assert import_failure(AttributeError(secret, name="Nope", obj=json)) == (
        "could not be imported: AttributeError: module 'json' has no attribute 'Nope'"
    )
    # Only a module's own spec names it; an attribute missing from anything else, an empty
    # name, a name that is not a str, or a module without a spec give the type alone.
    assert import_failure(AttributeError(secret, name="x", obj=object())) == (
        "could not be imported: AttributeError"
    )
    assert import_failure(ModuleNotFoundError(secret, name="")) == (
        "could not be imported: ModuleNotFoundError"
    )
    odd = ModuleNotFoundError(secret)
    odd.name = 42  # type: ignore[assignment]
    assert import_failure(odd) == "could not be imported: ModuleNotFoundError"
    bare = types.ModuleType("bare")
    bare.__spec__ = None
    assert import_failure(AttributeError(secret, name="x", obj=bare)) == (
        "could not be imported: AttributeError"
    )

    # Subclasses are not the import system's own: the kind alone, in host words (the
    # subclass's own name is text the plugin chose).
    class Custom(ModuleNotFoundError):
        pass

    assert import_failure(Custom(secret, name="pkg")) == (
        "could not be imported: a subclass of ModuleNotFoundError"
    )

    class OwnAttributeError(AttributeError):
        pass

    assert import_failure(OwnAttributeError(secret, name="x", obj=json)) == (
        "could not be imported: a subclass of AttributeError"
    )
    # Long names are cut.
    assert len(import_failure(ModuleNotFoundError(name="m" * 5_000))) < 400
