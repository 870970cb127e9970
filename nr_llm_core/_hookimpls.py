"""A plugin's hookimpls, found once on its real type, and the stand-in pluggy registers.

A plugin is looked at exactly once: the hookimpls are the marked functions in the ``__dict__``
of each class of ``type(plugin).__mro__`` (the first class that defines a name wins, as in
attribute lookup), or, for a module, in the module's own dict. They are bound here, their
marker options and parameter names read here, and every check is made on what was read. Nothing
asks the plugin again: no ``dir()``, no ``getattr``, no ``__getattr__`` or ``__getattribute__``
of its class, no ``__dict__`` property, no instance attribute. pluggy then registers a
:class:`CheckedPlugin` made by the host, whose attributes are forwarders to exactly the checked
functions, with the checked parameters and no ordering or wrapper options: what pluggy holds is
what was checked, whatever the plugin does afterwards (change its ``__class__``, answer
``dir()`` differently, put another ``execute`` on its instance).

Every read goes through C-level descriptors (``type.__dict__``, ``function.__code__``, …) and
:func:`~nr_llm_core._inert.own_item`, so no code of the plugin runs while it is looked at.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Iterator
from typing import Any, Final, final

import attrs

from nr_llm_core._inert import ABSENT, own_item
from nr_llm_core.errors import ToolLoadError
from nr_llm_core.failures import short
from nr_llm_core.hooks import PROJECT_NAME

__all__ = ["HOOK_NAMES", "CheckedPlugin", "Hookimpl", "find_hookimpls"]

HOOK_NAMES: Final = frozenset({"tool_spec", "execute"})
#: The parameters each hookspec defines (``self`` aside).
_SPEC_PARAMETERS: Final = {"tool_spec": frozenset(), "execute": frozenset({"arguments", "context"})}
_REFUSED_OPTS: Final = ("wrapper", "hookwrapper", "tryfirst", "trylast")
_MARKER: Final = f"{PROJECT_NAME}_impl"
#: Names a module plugin may hold; a larger module is refused rather than scanned.
_MAX_NAMES: Final = 100_000
_MAX_WRAPPED: Final = 100
_MAX_SHOWN_CHARS: Final = 80

_TYPE_DICT: Final = type.__dict__["__dict__"]
_MRO: Final = type.__dict__["__mro__"]
_MODULE_DICT: Final = vars(types.ModuleType)["__dict__"]
_FUNCTION_DICT: Final = types.FunctionType.__dict__["__dict__"]
_CODE: Final = types.FunctionType.__dict__["__code__"]
_DEFAULTS: Final = types.FunctionType.__dict__["__defaults__"]
_STATIC_FUNC: Final = staticmethod.__dict__["__func__"]
_STATIC_DICT: Final = staticmethod.__dict__["__dict__"]
_CLASS_FUNC: Final = classmethod.__dict__["__func__"]
_CLASS_DICT: Final = classmethod.__dict__["__dict__"]
_METHOD_FUNC: Final = types.MethodType.__dict__["__func__"]


@attrs.frozen
class Hookimpl:
    """One checked hook implementation: where it was found, the callable the host calls (bound
    as attribute access would bind it), and the parameters it takes (``self`` aside, those
    without a default)."""

    hook: str
    attribute: str
    call: Callable[..., object]
    argnames: tuple[str, ...]
    coroutine: bool


def _shown(name: str) -> str:
    """A plugin-chosen name in a host sentence: bounded, quoted, escaped."""
    return repr(short(name, _MAX_SHOWN_CHARS))


def _names(plugin: object) -> Iterator[tuple[str, object]]:
    """``(name, raw value)`` of every attribute the plugin's type (or, for a module, the
    module itself) defines, sorted by name; the first definition along the MRO wins."""
    cls = type(plugin)
    if issubclass(cls, types.ModuleType):
        namespace = _MODULE_DICT.__get__(plugin)
        if dict.__len__(namespace) > _MAX_NAMES:
            raise ToolLoadError(f"the module defines more than {_MAX_NAMES} names")
        found = {k: v for k, v in dict.items(namespace) if type(k) is str}
    else:
        found = {}
        for klass in _MRO.__get__(cls):
            for name, value in _TYPE_DICT.__get__(klass).items():
                if type(name) is str and name not in found:
                    found[name] = value
    for name in sorted(found):
        yield name, found[name]


def _function_dict(function: types.FunctionType) -> object:
    return _FUNCTION_DICT.__get__(function)


def _unwrapped(plugin: object, raw: object) -> tuple[object, types.FunctionType, Any, bool] | None:
    """``(marker holder, function, callable, bound)`` for a plain function, a static or class
    method or a bound method; ``None`` for anything else (a property, a descriptor of the
    plugin's own, a callable object: never a hookimpl)."""
    is_module = issubclass(type(plugin), types.ModuleType)
    kind = type(raw)
    if kind is types.FunctionType:
        if is_module:
            return raw, raw, raw, False  # type: ignore[return-value]
        return raw, raw, types.MethodType(raw, plugin), True  # type: ignore[arg-type,return-value]
    if kind is types.MethodType:
        function = _METHOD_FUNC.__get__(raw)
        if type(function) is types.FunctionType:
            return function, function, raw, True
        return None
    if is_module:
        return None
    if kind is staticmethod:
        function = _STATIC_FUNC.__get__(raw)
        if type(function) is types.FunctionType:
            return raw, function, function, False
    elif kind is classmethod:
        function = _CLASS_FUNC.__get__(raw)
        if type(function) is types.FunctionType:
            return raw, function, types.MethodType(function, type(plugin)), True
    return None


def _holder_dict(holder: object) -> object:
    kind = type(holder)
    if kind is staticmethod:
        return _STATIC_DICT.__get__(holder)
    if kind is classmethod:
        return _CLASS_DICT.__get__(holder)
    return _function_dict(holder)  # type: ignore[arg-type]


def _marker(holder: object, function: types.FunctionType) -> dict[str, object] | None:
    """The hookimpl options marked on ``holder`` (or on the function it wraps), copied:
    ``None`` when there is no marker (or not an exact dict, which pluggy would skip too)."""
    opts = own_item(_holder_dict(holder), _MARKER)
    if (opts is ABSENT or opts is None) and holder is not function:
        opts = own_item(_function_dict(function), _MARKER)
    if type(opts) is not dict:
        return None
    return {
        key: own_item(opts, key)
        for key in (*_REFUSED_OPTS, "specname", "optionalhook")
        if own_item(opts, key) is not ABSENT
    }


def _argnames(function: types.FunctionType, bound: bool) -> tuple[str, ...]:
    """The positional parameters without a default, as pluggy counts them: through
    ``__wrapped__`` (a decorated function's own), ``self`` aside for a bound one."""
    target = function
    for _ in range(_MAX_WRAPPED):
        inner = own_item(_function_dict(target), "__wrapped__")
        if type(inner) is not types.FunctionType:
            break
        target = inner
    code = _CODE.__get__(target)
    names: tuple[str, ...] = code.co_varnames[: code.co_argcount]
    defaults = _DEFAULTS.__get__(target)
    if type(defaults) is tuple and defaults:
        names = names[: max(0, len(names) - len(defaults))]
    return names[1:] if bound and names else names


def _flag_set(value: object) -> bool:
    # Identity only: a plugin's option value could define __bool__ or __eq__.
    return value is not ABSENT and value is not None and value is not False


def _checked(attribute: str, raw: object, plugin: object) -> Hookimpl | None:
    """The hookimpl ``attribute`` is, checked; ``None`` when it is not one."""
    found = _unwrapped(plugin, raw)
    if found is None:
        return None
    holder, function, call, bound = found
    opts = _marker(holder, function)
    if opts is None:
        return None
    specname = opts.get("specname", ABSENT)
    if specname is ABSENT or specname is None:
        hook = attribute
    elif type(specname) is str:
        hook = specname
    else:
        raise ToolLoadError(f"hookimpl {_shown(attribute)} has a specname that is not a str")
    if hook not in HOOK_NAMES:
        raise ToolLoadError(
            f"unknown hook {_shown(hook)} (a tool implements tool_spec and execute)"
        )
    for flag in _REFUSED_OPTS:
        if _flag_set(opts.get(flag, ABSENT)):
            raise ToolLoadError(
                f"hookimpl {_shown(attribute)} declares {flag}, which tools may not use"
            )
    argnames = _argnames(function, bound)
    extra = sorted(set(argnames) - _SPEC_PARAMETERS[hook])
    if extra:
        names = ", ".join(_shown(n) for n in extra[:5])
        raise ToolLoadError(
            f"hookimpl {_shown(attribute)} takes parameters the {hook} hookspec does not "
            f"define: {{{names}}}"
        )
    coroutine = bool(_CODE.__get__(function).co_flags & inspect.CO_COROUTINE)
    return Hookimpl(hook, attribute, call, argnames, coroutine)


def find_hookimpls(plugin: object) -> dict[str, Hookimpl]:
    """Hook name -> the checked :class:`Hookimpl`, read once from the plugin's type (or a
    module's dict); :class:`~nr_llm_core.errors.ToolLoadError` for every hookimpl a tool may
    not declare, for a second implementation of a hook, and for a missing one."""
    found: dict[str, Hookimpl] = {}
    for attribute, raw in _names(plugin):
        impl = _checked(attribute, raw, plugin)
        if impl is None:
            continue
        if impl.hook in found:
            first = found[impl.hook].attribute
            raise ToolLoadError(
                f"more than one {impl.hook} implementation ({_shown(first)}, {_shown(attribute)})"
            )
        found[impl.hook] = impl
    if not found:
        raise ToolLoadError(_no_hookimpls(plugin))
    for hook in sorted(HOOK_NAMES - found.keys()):
        raise ToolLoadError(f"no {hook} hookimpl")
    return found


def _no_hookimpls(plugin: object) -> str:
    """What to do about an entry point whose object declares no hook at all (told apart by
    its exact type only: no code of the plugin's runs)."""
    kind = type(plugin)
    if kind is types.FunctionType or kind is types.BuiltinFunctionType:
        return (
            "the entry point names a function without @tool: decorate it "
            "(from nr_llm_core import tool), or name a class whose tool_spec and execute "
            "carry @hookimpl"
        )
    if kind is types.ModuleType:
        return (
            "the entry point names a module: name the @tool function or the tool class "
            "in it (package.module:name)"
        )
    return (
        "no tool_spec or execute hookimpl: name a @tool function, or a class whose "
        "tool_spec and execute carry @hookimpl"
    )


# -- what pluggy registers -----------------------------------------------------------------------

#: The marker every forwarder carries: a plain hookimpl, no ordering, no wrapper.
_PLAIN: Final = {
    "wrapper": False,
    "hookwrapper": False,
    "optionalhook": False,
    "tryfirst": False,
    "trylast": False,
    "specname": None,
}


def _forwarder(impl: Hookimpl) -> Callable[..., object]:
    """A host function with exactly the checked parameters that calls the checked callable."""
    call = impl.call
    forward: Callable[..., object]
    if impl.hook == "tool_spec":

        def tool_spec() -> object:
            return call()

        forward = tool_spec
    elif impl.argnames == ("arguments",):

        def execute(arguments: Any) -> object:
            return call(arguments)

        forward = execute
    elif impl.argnames == ("arguments", "context"):

        def execute_with_context(arguments: Any, context: Any) -> object:
            return call(arguments, context)

        forward = execute_with_context
    else:  # ("context", "arguments"): the only order left once the names are checked

        def execute_context_first(context: Any, arguments: Any) -> object:
            return call(context, arguments)

        forward = execute_context_first
    setattr(forward, _MARKER, dict(_PLAIN))
    return forward


@final
class CheckedPlugin:
    """What the host registers with pluggy in a tool plugin's place: made by the host, frozen,
    its ``tool_spec`` and ``execute`` forwarders to exactly the checked implementations.

    pluggy sees no object of the plugin's, so nothing the plugin does after the check can
    change what pluggy holds. (The host never calls pluggy's hooks: its own table calls the
    same checked implementations. pluggy is kept for its registry, which
    :attr:`~nr_llm_core.host.ToolHost.plugin_manager` shows.)
    """

    __slots__ = ("execute", "tool_spec")

    def __init__(self, impls: dict[str, Hookimpl]) -> None:
        object.__setattr__(self, "tool_spec", _forwarder(impls["tool_spec"]))
        object.__setattr__(self, "execute", _forwarder(impls["execute"]))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("a CheckedPlugin is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("a CheckedPlugin is frozen")
