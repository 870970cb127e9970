"""How a tool plugin becomes a loaded tool: hookimpl checks, the spec, the compiled schema.

Plain functions over a pluggy ``PluginManager``; :class:`~nr_llm_core.host.ToolHost` calls them
when it registers a plugin, and the isolation worker calls them in its own process.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Any, Final, Protocol

import attrs
import pluggy

from nr_llm_core._schema import ArgumentCheck, compile_arguments
from nr_llm_core.errors import ToolLoadError
from nr_llm_core.failures import Problem, short
from nr_llm_core.hooks import ToolContext
from nr_llm_core.results import ToolSpec

__all__ = [
    "HOOK_NAMES",
    "MAX_REASON_CHARS",
    "OutOfProcess",
    "Tool",
    "build_tool",
    "check_hookimpls",
    "compile_schema",
    "dist_name",
    "import_failure",
    "plain_message",
    "short",
]

HOOK_NAMES: Final = frozenset({"tool_spec", "execute"})
_REFUSED_OPTS: Final = ("wrapper", "hookwrapper", "tryfirst", "trylast")
MAX_REASON_CHARS: Final = 300


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


def check_hookimpls(pm: pluggy.PluginManager, plugin: object) -> dict[str, str]:
    """Map hook name -> attribute name, refusing every hookimpl a tool may not declare."""
    found: dict[str, str] = {}
    for attr in dir(plugin):
        opts = pm.parse_hookimpl_opts(plugin, attr)
        if opts is None:
            continue
        hook = opts.get("specname") or attr
        if hook not in HOOK_NAMES:
            raise ToolLoadError(f"unknown hook {hook!r} (a tool implements tool_spec and execute)")
        for flag in _REFUSED_OPTS:
            if opts.get(flag):
                raise ToolLoadError(f"hookimpl {attr!r} declares {flag}, which tools may not use")
        if hook in found:
            raise ToolLoadError(f"more than one {hook} implementation ({found[hook]!r}, {attr!r})")
        found[hook] = attr
    for hook in sorted(HOOK_NAMES - found.keys()):
        raise ToolLoadError(f"no {hook} hookimpl")
    return found


def build_tool(
    pm: pluggy.PluginManager,
    plugin: object,
    impls: dict[str, str],
    entry_point: str | None,
    distribution: str | None,
) -> Tool:
    by_hook = {
        hook: next(i for i in getattr(pm.hook, hook).get_hookimpls() if i.plugin is plugin)
        for hook in impls
    }
    execute = by_hook["execute"]
    if "arguments" not in execute.argnames:
        raise ToolLoadError("execute must take an 'arguments' parameter")
    if inspect.iscoroutinefunction(execute.function):
        raise ToolLoadError("execute must be a plain function, not a coroutine function")
    try:
        spec = by_hook["tool_spec"].function()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        raise ToolLoadError(f"tool_spec() raised {type(exc).__name__}") from None
    if type(spec) is not ToolSpec:
        raise ToolLoadError(f"tool_spec() returned {type(spec).__name__}, not a ToolSpec")
    if entry_point is not None and spec.name != entry_point:
        raise ToolLoadError(
            f"entry point name {entry_point!r} differs from tool_spec().name {spec.name!r}"
        )
    check, explain = compile_schema(spec)
    return Tool(
        spec=spec,
        execute=execute.function,
        argnames=tuple(execute.argnames),
        check=check,
        explain=explain,
        distribution=distribution,
    )


def dist_name(ep: Any) -> str | None:
    """The name of an entry point's distribution; ``None`` for one built without it."""
    dist = ep.dist
    return None if dist is None else str(dist.name)


def plain_message(exc: BaseException) -> bool:
    return len(exc.args) == 1 and type(exc.args[0]) is str


def import_failure(exc: BaseException) -> str:
    """A load error's reason: the exception type, and what the import system recorded in the
    exception's fields (the missing module, or the module and attribute an entry point names).

    Never the exception's message: a plugin can raise ``ImportError("...")`` with any text (a
    key it failed to use, megabytes of output), and the reason reaches ``load_errors``,
    ``nr-llm doctor`` and a WARNING log line. The fields are names, and they are bounded.
    """
    reason = f"could not be imported: {type(exc).__name__}"
    name = getattr(exc, "name", None)
    if type(name) is not str or not name:
        return reason
    if type(exc) is ModuleNotFoundError:
        return f"{reason}: No module named {short(name, MAX_REASON_CHARS)!r}"
    if type(exc) is ImportError:
        return f"{reason}: cannot import from {short(name, MAX_REASON_CHARS)!r}"
    module = getattr(exc, "obj", None)
    if type(exc) is AttributeError and isinstance(module, types.ModuleType):
        try:  # the spec the import system gave the module (a plugin's module may be odd)
            where = module.__spec__.name  # type: ignore[union-attr]
        except Exception:
            where = None
        if type(where) is str:
            return (
                f"{reason}: module {short(where, MAX_REASON_CHARS)!r} "
                f"has no attribute {short(name, MAX_REASON_CHARS)!r}"
            )
    return reason


def compile_schema(spec: ToolSpec) -> ArgumentCheck:
    """The argument check of a tool, compiled once at registration (in-process and isolated
    tools alike); :class:`ToolLoadError` when its parameters cannot be a tool's schema."""
    return compile_arguments(spec.name, spec.parameters)
