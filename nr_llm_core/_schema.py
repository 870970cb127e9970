"""Tool argument schemas: compiled once as JSON Schema 2020-12 without remote references, and
what the validator finds turned into host-worded problems.

The validator is ``jsonschema-rs``: it implements 2020-12 (MCP's default dialect), compiles
without generating Python source, and asks a retriever for every resource outside the schema
(a remote ``$ref``, a ``file:`` URI, an unknown ``$schema``). The retriever here refuses them
all, so compiling a schema never touches the network or the filesystem, and a schema that
needs a resource is refused when the tool is registered. A schema without ``$schema`` is read
as 2020-12; a published draft named in ``$schema`` is honoured.

Its recursion is native code: with ``$ref`` a schema can make it descend once per level of
the arguments, through a chain of references each time, and a native stack has no
``RecursionError``. A schema with references is therefore limited in how many it holds, and
arguments checked against it in how deeply they nest, so that the depth of that recursion
stays within a small thread stack (see :data:`REFERENCE_BUDGET`). A schema without references
descends no deeper than the schema itself, whose nesting the compiler bounds.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Final, NoReturn

from nr_llm_core.errors import ToolLoadError
from nr_llm_core.failures import Phrase, Problem, expected, render_problems, short

__all__ = [
    "MAX_ARGUMENT_DEPTH",
    "MAX_SCHEMA_REFERENCES",
    "REFERENCE_BUDGET",
    "ArgumentCheck",
    "compile_arguments",
    "json_type",
]

#: Arguments checked against a schema with references nest at most this deep (the arguments
#: object is level 1), and less when the schema has many references.
MAX_ARGUMENT_DEPTH: Final = 64
#: A schema holds at most this many reference keywords (``$ref``, ``$dynamicRef``,
#: ``$recursiveRef``).
MAX_SCHEMA_REFERENCES: Final = 128
#: Allowed argument depth times the schema's references: keeps the validator's recursion to
#: about a thousand reference hops, measured to fit a 512 KiB thread stack (2,000 passed and
#: 4,096 crashed one; an 8 MiB stack took 32,000).
REFERENCE_BUDGET: Final = 1024
_MIN_ARGUMENT_DEPTH: Final = 8
_REFERENCE_KEYS: Final = frozenset({"$ref", "$dynamicRef", "$recursiveRef"})
_SCHEME_RE: Final = re.compile(r"[a-z][a-z0-9+.-]{0,15}")
_SCALARS: Final = frozenset({str, int, bool, type(None)})
_ABSENT: Final = object()
_ADDITIONAL: Final = ["additionalProperties"]
_UNEVALUATED: Final = ["unevaluatedProperties"]

#: ``check(arguments) -> bool`` (it may raise for input it cannot read) and
#: ``explain(arguments) -> problems`` (never raises), for one tool's schema.
ArgumentCheck = tuple[Callable[[Any], bool], Callable[[Any], tuple[Problem, ...]]]


class _Refused(Exception):
    """What the retriever raises: no resource outside the schema is ever fetched."""


class _Retriever:
    """Refuses every resource and remembers which were asked for."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, uri: str) -> NoReturn:
        self.asked.append(uri)
        raise _Refused


def compile_arguments(name: str, parameters: Mapping[str, Any]) -> ArgumentCheck:
    """Compile a tool's parameter schema; :class:`ToolLoadError` (host words) when it is not a
    valid JSON Schema, needs a resource outside itself, or holds too many references."""
    import jsonschema_rs

    schema = dict(parameters)
    references = _count_references(schema)
    if references > MAX_SCHEMA_REFERENCES:
        raise ToolLoadError(
            f"parameters of {name!r} hold {references} references (at most {MAX_SCHEMA_REFERENCES})"
        )
    retriever = _Retriever()
    try:
        validator = jsonschema_rs.validator_for(schema, retriever=retriever)
    except jsonschema_rs.ValidationError as exc:
        raise ToolLoadError(_refusal(name, schema, exc, retriever.asked)) from None
    except Exception:  # "Recursion limit reached", a value that is not JSON …
        raise ToolLoadError(
            f"parameters of {name!r} are not a valid JSON Schema "
            "(nested too deeply, or holding values that are not JSON)"
        ) from None
    if retriever.asked:  # pragma: no cover - a refused resource always fails the compile
        raise ToolLoadError(_outside(name, schema, retriever.asked[0]))
    if references:
        depth = max(_MIN_ARGUMENT_DEPTH, min(MAX_ARGUMENT_DEPTH, REFERENCE_BUDGET // references))
        return _deep_checked(validator, depth)
    return validator.is_valid, lambda arguments: _explain(validator, arguments, None)


def _deep_checked(validator: Any, depth: int) -> ArgumentCheck:
    is_valid = validator.is_valid

    def check(arguments: Any) -> bool:
        return _plain(arguments, depth) and bool(is_valid(arguments))

    return check, lambda arguments: _explain(validator, arguments, depth)


# -- refusals at registration ------------------------------------------------------------------


def _count_references(schema: object) -> int:
    count = 0
    stack = [schema]
    while stack:
        node = stack.pop()
        if type(node) is dict:
            count += sum(1 for key in node if key in _REFERENCE_KEYS)
            stack.extend(node.values())
        elif type(node) is list:
            stack.extend(node)
    return count


def _outside(name: str, schema: Mapping[str, Any], uri: str) -> str:
    declared = schema.get("$schema")
    if type(declared) is str and declared.rstrip("#") == uri.rstrip("#"):
        return (
            f'parameters of {name!r} declare an unknown "$schema" (a published JSON Schema '
            "draft, or none for 2020-12; nothing is fetched)"
        )
    scheme = uri.split(":", 1)[0].lower()
    where = f"{scheme} URI" if _SCHEME_RE.fullmatch(scheme) else "URI"
    return (
        f"parameters of {name!r} refer to a schema outside themselves ({where}); remote and "
        'file references are refused: use local ones ("#/$defs/...")'
    )


def _refusal(name: str, schema: Mapping[str, Any], exc: Any, asked: list[str]) -> str:
    if asked:
        return _outside(name, schema, asked[0])
    kind = type(exc.kind).__name__
    if kind == "Referencing":
        return (
            f"parameters of {name!r} hold a reference that does not resolve inside them "
            '(remote and file references are refused; local ones look like "#/$defs/...")'
        )
    # Meta-schema validation: the "instance" is the schema, so the path points into it.
    path = tuple(p for p in exc.instance_path if type(p) in (str, int))
    problem = _problems_of(exc, schema)[:1] or [(Phrase.SCHEMA_MISMATCH.value, path)]
    return short(
        f"parameters of {name!r} are not a valid JSON Schema: {render_problems(tuple(problem))}",
        300,
    )


# -- arguments ---------------------------------------------------------------------------------


def json_type(value: object) -> str:
    """The JSON type name of a plain value (exact types, finite numbers), else ``a non-JSON
    value``."""
    kind = type(value)
    if kind is bool:
        return "boolean"
    if kind is int:
        return "integer"
    if kind is float:
        return "number" if math.isfinite(value) else "a non-JSON value"  # type: ignore[arg-type]
    if kind is str:
        return "string"
    if value is None:
        return "null"
    if kind is list:
        return "array"
    if kind is dict:
        return "object"
    return "a non-JSON value"


def _plain(arguments: Any, limit: int) -> bool:
    """Whether ``arguments`` is plain JSON (exact types, str keys, finite numbers) nested at
    most ``limit`` deep. Iterative; no method of a value runs."""
    stack = [(arguments, 1)]
    while stack:
        node, depth = stack.pop()
        if type(node) is dict:
            for key in node:
                if type(key) is not str:
                    return False
            values: Any = node.values()
        else:
            values = node
        for value in values:
            kind = type(value)
            if kind is dict or kind is list:
                if depth >= limit:
                    return False
                stack.append((value, depth + 1))
            elif kind is float:
                if not math.isfinite(value):
                    return False
            elif kind not in _SCALARS:
                return False
    return True


def _shape_problem(arguments: Any, limit: int) -> Problem | None:
    """The first place where ``arguments`` is not plain JSON or nests deeper than ``limit``."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(arguments, ())]
    while stack:
        node, path = stack.pop()
        pairs: Any = node.items() if type(node) is dict else enumerate(node)
        for key, value in pairs:
            if type(node) is dict and type(key) is not str:
                return (Phrase.NOT_JSON.value, path)
            here = (*path, key)
            kind = type(value)
            if kind is dict or kind is list:
                if len(here) >= limit:
                    return (Phrase.TOO_DEEP.value, here)
                stack.append((value, here))
            elif (kind is float and not math.isfinite(value)) or (
                kind is not float and kind not in _SCALARS
            ):
                return (Phrase.NOT_JSON.value, here)
    return None


def _explain(validator: Any, arguments: Any, depth: int | None) -> tuple[Problem, ...]:
    if depth is not None:
        shape = _shape_problem(arguments, depth)
        if shape is not None:
            return (shape,)
    problems: list[Problem] = []
    try:
        for error in validator.iter_errors(arguments):
            problems.extend(_problems_of(error, arguments))
    except Exception:  # the validator could not read the input: say where, if the walk can
        shape = _shape_problem(arguments, MAX_ARGUMENT_DEPTH)
        return (shape,) if shape is not None else ((Phrase.SCHEMA_MISMATCH.value, ()),)
    return tuple(problems) or ((Phrase.SCHEMA_MISMATCH.value, ()),)


# Each kind of validation error in host words (the error's own message quotes instance values
# and schema fragments, and is never used).
_PHRASE_OF_KIND: Final = {
    "Enum": Phrase.NOT_ALLOWED,
    "Constant": Phrase.NOT_CONSTANT,
    "MinLength": Phrase.TOO_SHORT,
    "MaxLength": Phrase.TOO_LONG,
    "MinItems": Phrase.TOO_FEW_ITEMS,
    "MaxItems": Phrase.TOO_MANY_ITEMS,
    "AdditionalItems": Phrase.TOO_MANY_ITEMS,
    "UnevaluatedItems": Phrase.UNEXPECTED_ITEM,
    "MinProperties": Phrase.TOO_FEW_PROPERTIES,
    "MaxProperties": Phrase.TOO_MANY_PROPERTIES,
    "Minimum": Phrase.BELOW_MINIMUM,
    "ExclusiveMinimum": Phrase.BELOW_MINIMUM,
    "Maximum": Phrase.ABOVE_MAXIMUM,
    "ExclusiveMaximum": Phrase.ABOVE_MAXIMUM,
    "MultipleOf": Phrase.NOT_MULTIPLE,
    "Pattern": Phrase.NO_PATTERN_MATCH,
    "BacktrackLimitExceeded": Phrase.NO_PATTERN_MATCH,
    "RegexEngineFailure": Phrase.NO_PATTERN_MATCH,
    "Format": Phrase.BAD_FORMAT,
    "AnyOf": Phrase.NO_SCHEMA_MATCH,
    "OneOfNotValid": Phrase.NO_SCHEMA_MATCH,
    "OneOfMultipleValid": Phrase.MANY_SCHEMAS_MATCH,
    "Not": Phrase.FORBIDDEN_MATCH,
    "FalseSchema": Phrase.NOT_ALLOWED_HERE,
    "Contains": Phrase.NO_MATCHING_ITEM,
    "UniqueItems": Phrase.NOT_UNIQUE,
    "PropertyNames": Phrase.BAD_PROPERTY_NAME,
    "ContentEncoding": Phrase.BAD_CONTENT,
    "ContentMediaType": Phrase.BAD_CONTENT,
    "FromUtf8": Phrase.BAD_CONTENT,
}


def _problems_of(error: Any, instance: Any) -> list[Problem]:
    """The problems one validation error stands for, in host words."""
    path = tuple(p for p in error.instance_path if type(p) in (str, int))
    kind = error.kind
    name = type(kind).__name__
    if name == "Type":
        return [(expected(kind.types, json_type(_value_at(instance, path))), path)]
    if name == "Required":
        return [(Phrase.MISSING.value, (*path, kind.property))]
    if name in ("AdditionalProperties", "UnevaluatedProperties"):
        return [(Phrase.UNEXPECTED.value, (*path, key)) for key in kind.unexpected]
    if name == "FalseSchema" and error.schema_path[-1:] in (_ADDITIONAL, _UNEVALUATED):
        # "additionalProperties": false with no "properties" is reported at the object.
        return [(Phrase.UNEXPECTED.value, path)]
    return [(_PHRASE_OF_KIND.get(name, Phrase.SCHEMA_MISMATCH).value, path)]


def _value_at(instance: Any, path: tuple[str | int, ...]) -> object:
    node = instance
    for segment in path:
        in_object = type(node) is dict and type(segment) is str and segment in node
        in_array = type(node) is list and type(segment) is int and 0 <= segment < len(node)
        if not (in_object or in_array):
            return _ABSENT  # reported as "a non-JSON value"
        node = node[segment]
    return node
