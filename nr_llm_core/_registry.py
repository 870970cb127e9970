"""How a tool plugin becomes a loaded tool: its spec, its compiled schema, a load error's reason.

Plain functions over the hookimpls :mod:`nr_llm_core._hookimpls` found and checked;
:class:`~nr_llm_core.host.ToolHost` calls them when it registers a plugin, and the isolation
worker calls them in its own process.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from importlib.machinery import ModuleSpec
from typing import Any, Final, Protocol

import attrs

from nr_llm_core._hookimpls import Hookimpl
from nr_llm_core._inert import is_users_interrupt, known_type_phrase, own_item
from nr_llm_core._schema import ArgumentCheck, compile_arguments
from nr_llm_core.errors import ToolDefinitionError, ToolLoadError
from nr_llm_core.failures import Problem, short
from nr_llm_core.hooks import ToolContext
from nr_llm_core.results import DataClass, ToolSpec

__all__ = [
    "MAX_REASON_CHARS",
    "OutOfProcess",
    "Tool",
    "build_tool",
    "compile_schema",
    "dist_name",
    "import_failure",
    "short",
]

MAX_REASON_CHARS: Final = 300
_MODULE_DICT: Final = vars(types.ModuleType)["__dict__"]
_SPEC_DICT: Final = ModuleSpec.__dict__["__dict__"]


class OutOfProcess(Protocol):
    """Runs the calls of a tool that lives in another process (an isolated worker, an MCP
    server), within a deadline it enforces itself: it can stop what it waits for."""

    @property
    def timeout(self) -> float:
        """The per-call limit when the caller names none (seconds)."""
        ...

    def call(
        self, arguments: dict[str, Any], context: ToolContext | None, timeout: float
    ) -> object:
        """The tool's return value (the seam bounds it); raises ``TimedOut`` past ``timeout``."""
        ...


@attrs.frozen
class Tool:
    """One loaded tool: its spec, the one ``execute`` to call, its compiled argument check.

    ``check(arguments)`` is the hot-path test (it may raise for input the validator cannot
    read); ``explain(arguments)`` names the problems in host words when it failed.
    """

    spec: ToolSpec
    execute: Callable[..., object]
    argnames: tuple[str, ...]
    check: Callable[[Any], bool]
    explain: Callable[[Any], tuple[Problem, ...]]
    distribution: str | None
    enabled: bool = False
    # Set for a tool in another process (then ``execute`` is its ``execute``): the timeout
    # path hands the limit to it, and it kills what it waits for when the limit passes.
    remote: OutOfProcess | None = None
    # Set for a tool another program serves (an MCP server, not one of the host's workers).
    external: bool = False
    # Read on every call (the hot path): computed once here rather than in a property.
    takes_context: bool = attrs.field(init=False)

    @takes_context.default
    def _takes_context(self) -> bool:
        return len(self.argnames) > 1


def build_tool(
    impls: dict[str, Hookimpl],
    entry_point: str | None,
    distribution: str | None,
) -> Tool:
    """The loaded tool from a plugin's checked hookimpls: ``tool_spec()`` is called here, once,
    and its spec checked and compiled."""
    execute = impls["execute"]
    if "arguments" not in execute.argnames:
        raise ToolLoadError("execute must take an 'arguments' parameter")
    if execute.coroutine:
        raise ToolLoadError("execute must be a plain function, not a coroutine function")
    try:
        spec = impls["tool_spec"].call()
    except BaseException as exc:
        if is_users_interrupt(exc):
            raise
        raise ToolLoadError(f"tool_spec() raised {known_type_phrase(type(exc))}") from None
    if type(spec) is not ToolSpec:
        raise ToolLoadError(f"tool_spec() returned {known_type_phrase(type(spec))}, not a ToolSpec")
    spec = _exact_spec(spec)
    if entry_point is not None and spec.name != entry_point:
        raise ToolLoadError(
            f"entry point name {entry_point!r} differs from tool_spec().name {spec.name!r}"
        )
    check, explain = compile_schema(spec)
    return Tool(
        spec=spec,
        execute=execute.call,
        argnames=execute.argnames,
        check=check,
        explain=explain,
        distribution=distribution,
    )


def _exact_text(value: object) -> str | None:
    # A str subclass (a StrEnum member, say) read through str: an exact copy.
    return str.__getitem__(value, slice(None)) if issubclass(type(value), str) else None  # type: ignore[index]


def _exact_spec(spec: ToolSpec) -> ToolSpec:
    """``spec`` rebuilt from exact values. Its strings may be ``str`` subclasses (a
    ``StrEnum`` member as the name; a hostile class whose ``__eq__`` or ``__hash__`` would run
    each time the host looks a name up), and a spec made around its constructor can hold
    anything; what does not fit is refused."""
    name, description = _exact_text(spec.name), _exact_text(spec.description)
    group = None if spec.group is None else _exact_text(spec.group)
    if (
        name is None
        or description is None
        or (spec.group is not None and group is None)
        or type(spec.parameters) is not dict
        or type(spec.enabled_by_default) is not bool
        or type(spec.requires_approval) is not bool
        or not (spec.data_class is None or type(spec.data_class) is DataClass)
    ):
        raise ToolLoadError("tool_spec() returned a ToolSpec whose fields are not of their types")
    try:
        return ToolSpec(
            name,
            description,
            spec.parameters,
            group=group,
            enabled_by_default=spec.enabled_by_default,
            data_class=spec.data_class,
            requires_approval=spec.requires_approval,
        )
    except (TypeError, ValueError):  # a name or parameters its constructor refuses
        raise ToolLoadError("tool_spec() returned a ToolSpec its constructor refuses") from None


def dist_name(ep: Any) -> str | None:
    """The name of an entry point's distribution; ``None`` for one built without it."""
    dist = ep.dist
    return None if dist is None else str(dist.name)


def import_failure(exc: BaseException) -> str:
    """A load error's reason: the kind of exception, and what the import system recorded in
    the exception's fields (the missing module, or the module and attribute an entry point
    names).

    Never the exception's message: a plugin can raise ``ImportError("...")`` with any text (a
    key it failed to use, megabytes of output), and the reason reaches ``load_errors``,
    ``nr-llm doctor`` and a WARNING log line. Nor the name of a class the plugin defined (text
    it chose, read through code it can define): the kind is a builtin or nr-llm exception
    type, or ``a subclass of`` one (see :func:`~nr_llm_core._inert.known_type_phrase`). The
    fields are read only from the exact builtin types, whose fields are slots, and are
    bounded.
    """
    kind = type(exc)
    reason = f"could not be imported: {known_type_phrase(kind)}"
    if kind is ToolDefinitionError:
        refused = _definition_refused(exc)
        return reason if refused is None else f"{reason}: {refused}"
    if kind is ModuleNotFoundError or kind is ImportError:
        name = exc.name  # type: ignore[attr-defined]  # a slot of the exact type
        if type(name) is not str or not name:
            return reason
        if kind is ModuleNotFoundError:
            return f"{reason}: No module named {short(name, MAX_REASON_CHARS)!r}"
        return f"{reason}: cannot import from {short(name, MAX_REASON_CHARS)!r}"
    if kind is AttributeError:
        name, module = exc.name, exc.obj  # type: ignore[attr-defined]  # slots, as above
        if type(name) is not str or not name or type(module) is not types.ModuleType:
            return reason
        # The spec the import system gave the module, read from the module's own dict.
        spec = own_item(_MODULE_DICT.__get__(module), "__spec__")
        where = own_item(_SPEC_DICT.__get__(spec), "name") if type(spec) is ModuleSpec else None
        if type(where) is str:
            return (
                f"{reason}: module {short(where, MAX_REASON_CHARS)!r} "
                f"has no attribute {short(name, MAX_REASON_CHARS)!r}"
            )
    return reason


def _definition_refused(exc: BaseException) -> str | None:
    """What ``@tool`` refused, from the fields a :class:`ToolDefinitionError` keeps apart:
    one of its known problems and the function's and the parameter's names (identifiers,
    bounded). ``None`` when any field is not what ``@tool`` writes (a plugin can raise the
    class itself, with any text): then only the kind is shown."""
    fields = vars(exc)  # the exact type: its fields live in the instance's own dict
    function, problem, parameter = (fields.get(k) for k in ("function", "problem", "parameter"))
    if type(problem) is not str or problem not in ToolDefinitionError.PROBLEMS:
        return None
    if type(function) is not str or not all(
        part.isidentifier() or part in ("<locals>", "<lambda>") for part in function.split(".")
    ):
        return None
    at = f"@tool {short(function, MAX_REASON_CHARS)}"
    if parameter is not None:
        if type(parameter) is not str or not parameter.isidentifier():
            return None
        at += f", parameter {short(parameter, MAX_REASON_CHARS)!r}"
    return f"{at}: {problem}"


def compile_schema(spec: ToolSpec) -> ArgumentCheck:
    """The argument check of a tool, compiled once at registration (in-process and isolated
    tools alike); :class:`ToolLoadError` when its parameters cannot be a tool's schema."""
    return compile_arguments(spec.name, spec.parameters)
