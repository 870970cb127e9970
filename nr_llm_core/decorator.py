"""``@tool``: a typed function becomes a tool plugin, its spec read from signature and docstring.

The decorated name is a :class:`FunctionTool`: a plugin object with the ``tool_spec`` and
``execute`` hooks, usable as an entry-point target and with :meth:`ToolHost.register`, and
still callable as the original function. Everything it cannot describe is refused at decoration
time; arguments a model gets wrong become the invalid-arguments error through the seam (``execute``
raises :class:`~nr_llm_core.failures.InvalidArguments`, worded in host vocabulary).
"""

from __future__ import annotations

import inspect
import keyword
import re
import typing
from collections.abc import Callable
from typing import Any, Final, Generic, ParamSpec, TypeVar, final, overload

import attrs

from nr_llm_core.arguments import (
    describe_type,
    json_default,
    strict_converter,
    structuring_problems,
)
from nr_llm_core.arguments import strip as strip_annotated
from nr_llm_core.docstrings import parse_docstring
from nr_llm_core.errors import ToolDefinitionError
from nr_llm_core.failures import InvalidArguments, read_exception
from nr_llm_core.hooks import ToolContext, hookimpl
from nr_llm_core.results import DataClass, ToolResult, ToolSpec

__all__ = ["FunctionTool", "tool"]

P = ParamSpec("P")
R = TypeVar("R")

_CONVERTER: Final = strict_converter()


class _Missing:
    """The default of an argument field whose parameter has a Python default."""


_MISSING: Final = _Missing()


def _is_context(tp: Any) -> bool:
    tp = strip_annotated(tp)[0]
    if tp is ToolContext:
        return True
    args = typing.get_args(tp)
    return typing.get_origin(tp) is not None and set(args) == {ToolContext, type(None)}


@final
class FunctionTool(Generic[P, R]):
    """A tool plugin made by :func:`tool` from a typed function.

    ``tool_spec()`` returns the spec built at decoration time. ``execute(arguments, context)``
    structures ``arguments`` with the strict converter, calls the function with the arguments
    given (absent ones take the function's defaults), and turns a returned ``str`` into
    :meth:`ToolResult.text`. Arguments it cannot structure raise
    :class:`~nr_llm_core.failures.InvalidArguments`, which the seam answers with the
    invalid-arguments error. Calling the object calls the function itself, so it can be tested
    like one. ``spec`` and ``function`` are the spec and the original function.
    """

    def __init__(
        self,
        function: Callable[P, R],
        spec: ToolSpec,
        arguments_class: type,
        parameters: tuple[str, ...],
        context_parameter: str | None,
    ) -> None:
        self.function = function
        self.spec = spec
        self._arguments_class = arguments_class
        self._parameters = parameters
        self._context_parameter = context_parameter
        self._plain = _plain_call(function, arguments_class, context_parameter)
        self.__name__ = getattr(function, "__name__", spec.name)
        self.__qualname__ = getattr(function, "__qualname__", spec.name)
        self.__module__ = getattr(function, "__module__", __name__)
        self.__doc__ = function.__doc__
        self.__wrapped__ = function

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the original function directly (no validation, no bounding)."""
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<FunctionTool {self.spec.name} ({self.__qualname__})>"

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        """The spec built from the signature and docstring."""
        return self.spec

    @hookimpl
    def execute(self, arguments: dict[str, Any], context: ToolContext | None) -> object:
        """Structure ``arguments`` strictly, call the function, return its result.

        Raises :class:`~nr_llm_core.failures.InvalidArguments` when the arguments cannot be
        structured: its problems are host words (the path, the kind of problem); what an
        argument type's own code raised (a validator, a converter, ``__attrs_post_init__``)
        rides only in its ``exception_type`` and ``message``, which the seam keeps for the
        trace and never puts in the result.
        """
        plain = self._plain
        if plain is not None and type(arguments) is dict:
            # Parameters of the four JSON scalar types, each argument given with exactly its
            # parameter's type and none extra: structuring would return every value as it is,
            # so the converter is not run. Anything else (3.0 for an int, a missing or an
            # unexpected key …) goes through the converter, which refuses or converts it
            # exactly as before.
            value = plain(arguments, context)
            if value is not _MISSING:
                return ToolResult.text(value) if type(value) is str else value
        try:
            structured: Any = _CONVERTER.structure(arguments, self._arguments_class)
        except Exception as exc:
            problems, foreign = structuring_problems(exc)
            exception_type, message = (None, None) if foreign is None else read_exception(foreign)
            raise InvalidArguments(
                problems, exception_type=exception_type, message=message
            ) from None
        kwargs: dict[str, Any] = {
            name: getattr(structured, name)
            for name in self._parameters
            if getattr(structured, name) is not _MISSING
        }
        if self._context_parameter is not None:
            kwargs[self._context_parameter] = context
        call: Callable[..., object] = self.function  # the kwargs were built from its signature
        value = call(**kwargs)
        if type(value) is str:
            return ToolResult.text(value)
        # A ToolResult goes on as it is; anything else is left for the seam to refuse.
        return value


#: The types whose strict structuring returns an argument of that exact type as it is.
_PLAIN_TYPES: Final = frozenset({str, bool, int, float})


def _plain_call(
    function: Callable[..., Any], arguments_class: type, context_parameter: str | None
) -> Callable[[dict[str, Any], ToolContext | None], object] | None:
    """A function that calls ``function`` with ``arguments`` as they are when every parameter
    is of :data:`_PLAIN_TYPES` and each is given with exactly its type (a finite float for a
    float), and returns :data:`_MISSING` otherwise; ``None`` when some parameter is of another
    type. Generated, as cattrs generates its structuring code: one test per parameter."""
    fields = attrs.fields(arguments_class)
    names = [field.name for field in fields]
    if context_parameter is not None:
        names.append(context_parameter)
    if any(f.type not in _PLAIN_TYPES for f in fields) or not all(
        n.isidentifier() and not keyword.iskeyword(n) for n in names
    ):
        return None
    lines = [
        "def call(arguments, context):",
        f"    if len(arguments) != {len(fields)}:",
        "        return MISSING",
    ]
    passed = []
    for index, field in enumerate(fields):
        value = f"v{index}"
        lines.append(f"    {value} = arguments.get({field.name!r}, MISSING)")
        kind = field.type.__name__
        test = f"type({value}) is not {kind}"
        if field.type is float:
            test += f" or {value} - {value} != 0.0"  # infinities and NaN give NaN
        lines.append(f"    if {test}:")
        lines.append("        return MISSING")
        passed.append(f"{field.name}={value}")
    if context_parameter is not None:
        passed.append(f"{context_parameter}=context")
    lines.append(f"    return function({', '.join(passed)})")
    namespace: dict[str, Any] = {"MISSING": _MISSING, "function": function}
    exec("\n".join(lines), namespace)  # noqa: S102 (names checked: identifiers only)
    call: Callable[[dict[str, Any], ToolContext | None], object] = namespace["call"]
    return call


def _refused(
    at: str, function: str, problem: str, detail: str = "", *, param: str | None = None
) -> ToolDefinitionError:
    """``@tool``'s refusal: ``at`` (the function, or its parameter) and ``problem``, then the
    details; the parts a load error may show are kept apart (see ToolDefinitionError)."""
    return ToolDefinitionError(
        f"{at}: {problem}{detail}", function=function, problem=problem, parameter=param
    )


def _build(
    function: Callable[..., Any],
    *,
    name: str | None,
    description: str | None,
    group: str | None,
    data_class: DataClass | str | None,
    requires_approval: bool,
    enabled_by_default: bool,
) -> FunctionTool[Any, Any]:
    qual = str(getattr(function, "__qualname__", repr(function)))
    where = f"@tool {qual}"
    if isinstance(function, FunctionTool):
        raise _refused(where, qual, "is already a tool")
    if not callable(function) or inspect.isclass(function):
        raise _refused(where, qual, "@tool decorates a function")
    if inspect.iscoroutinefunction(function):
        raise _refused(where, qual, "async functions are not supported")
    try:
        hints = typing.get_type_hints(function, include_extras=True)
    except Exception as exc:
        raise _refused(where, qual, "cannot resolve the type annotations", f" ({exc})") from None
    summary, param_docs = parse_docstring(function.__doc__ or "")
    description = summary if description is None else description
    if not description:
        raise _refused(where, qual, "needs a docstring (its first paragraph describes the tool)")

    properties: dict[str, Any] = {}
    required: list[str] = []
    fields: dict[str, Any] = {}
    context_parameter: str | None = None
    for param in inspect.signature(function).parameters.values():
        at = f"{where}, parameter {param.name!r}"
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise _refused(
                at,
                qual,
                "*args and **kwargs cannot be described as a JSON Schema",
                param=param.name,
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise _refused(
                at, qual, "positional-only parameters are not supported", param=param.name
            )
        if param.name not in hints:
            raise _refused(at, qual, "has no type annotation", param=param.name)
        tp = hints[param.name]
        if _is_context(tp):
            context_parameter = param.name
            continue
        try:
            schema = describe_type(tp, at)
        except TypeError as exc:  # describe_type's own refusal names the type and the place
            raise ToolDefinitionError(
                str(exc),
                function=qual,
                problem="its type cannot be described as a JSON Schema",
                parameter=param.name,
            ) from None
        except Exception as exc:  # a broken attrs class or annotation
            raise _refused(
                at,
                qual,
                "its type cannot be described as a JSON Schema",
                f" ({exc})",
                param=param.name,
            ) from None
        if "description" not in schema and param.name in param_docs:
            schema["description"] = param_docs[param.name]
        if param.default is param.empty:
            required.append(param.name)
            fields[param.name] = attrs.field(type=strip_annotated(tp)[0])
        else:
            shown = json_default(param.default)
            if shown is not None:
                schema["default"] = shown[0]
            fields[param.name] = attrs.field(type=strip_annotated(tp)[0], default=_MISSING)
        properties[param.name] = schema

    tool_name = name if name is not None else function.__name__
    try:
        spec = ToolSpec(
            tool_name,
            description,
            {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
            group=group,
            data_class=data_class,
            requires_approval=requires_approval,
            enabled_by_default=enabled_by_default,
        )
    except (TypeError, ValueError) as exc:
        raise ToolDefinitionError(
            f"{where}: {exc}",
            function=qual,
            problem="the tool's name, description or parameters are refused",
        ) from None
    # cattrs generates code named after the class: keep the name an identifier.
    class_name = "Arguments_" + re.sub(r"\W", "_", tool_name)
    arguments_class = attrs.make_class(class_name, fields, kw_only=True)
    try:
        _CONVERTER.get_structure_hook(arguments_class)  # generated now, not at the first call
    except Exception as exc:
        raise _refused(where, qual, "cannot build the argument converter", f" ({exc})") from None
    return FunctionTool(
        function, spec, arguments_class, tuple(fields), context_parameter=context_parameter
    )


@overload
def tool(function: Callable[P, R], /) -> FunctionTool[P, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    group: str | None = None,
    data_class: DataClass | str | None = None,
    requires_approval: bool = False,
    enabled_by_default: bool = True,
) -> Callable[[Callable[P, R]], FunctionTool[P, R]]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    group: str | None = None,
    data_class: DataClass | str | None = None,
    requires_approval: bool = False,
    enabled_by_default: bool = True,
) -> Any:
    """Turn a typed function into a tool plugin (a :class:`FunctionTool`).

    Use it bare (``@tool``) or with metadata (``@tool(group="git", data_class="internal")``).
    The name is the function's name unless ``name`` is given; the description is the first
    paragraph of the docstring unless ``description`` is given; parameter descriptions come
    from ``Annotated[T, "description"]``, else from an ``Args:`` (Google) section, a
    ``Parameters`` (NumPy) section or ``:param x:`` (Sphinx/reST) fields. Parameters without a
    default are required. A parameter annotated ``ToolContext`` (or ``ToolContext | None``)
    receives the call's context and is not part of the schema. The function returns a ``str``
    or a :class:`ToolResult`.

    Raises ``TypeError`` at decoration time, naming the function and the parameter, for what
    cannot be described: a missing annotation, ``*args``/``**kwargs``, an unsupported type.
    """
    options: dict[str, Any] = {
        "name": name,
        "description": description,
        "group": group,
        "data_class": data_class,
        "requires_approval": requires_approval,
        "enabled_by_default": enabled_by_default,
    }
    if function is not None:
        return _build(function, **options)

    def decorate(fn: Callable[..., Any]) -> FunctionTool[Any, Any]:
        return _build(fn, **options)

    return decorate
