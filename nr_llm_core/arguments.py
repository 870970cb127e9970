"""Typed parameters → JSON Schema, and the strict cattrs converter that structures arguments.

Used by :func:`nr_llm_core.tool`. The supported types are ``str``, ``int``, ``float``, ``bool``,
``list[T]``, ``dict[str, T]``, ``Literal[...]``, ``T | None``, :class:`enum.Enum` subclasses,
attrs classes, and ``Annotated[T, "description"]`` around any of them. Anything else is refused
when the tool is defined, not when a model calls it.

The converter is strict where cattrs is lenient by default: no ``1`` → ``"1"``, no ``"abc"`` →
``True``, no ``1.5`` → ``1``, no ``True`` for an ``int``, no string iterated into a list.
An integral float such as ``2.0`` is an ``int``: JSON Schema says so, and the seam's schema check
lets it through.
"""

from __future__ import annotations

import enum
import math
import types
import typing
from collections.abc import Callable
from typing import Any, Final

import attrs
import cattrs
from cattrs.errors import (
    AttributeValidationNote,
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
)

from nr_llm_core._inert import exception_dict, own_item
from nr_llm_core._schema import json_type
from nr_llm_core.failures import Phrase, Problem, expected

__all__ = [
    "ArgumentMismatch",
    "describe_type",
    "strict_converter",
    "strip",
    "structuring_problems",
]

_PRIMITIVES: Final[dict[type, str]] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
}
_JSON_VALUES: Final = (str, int, float, bool, type(None))


class ArgumentMismatch(ValueError):
    """A value does not fit its declared type; ``phrase`` says how, in the host's vocabulary
    of argument problems (:mod:`nr_llm_core.failures`)."""

    def __init__(self, phrase: str) -> None:
        self.phrase = phrase
        super().__init__(phrase)


def _mismatch(wanted: str, value: object) -> ArgumentMismatch:
    return ArgumentMismatch(expected((wanted,), json_type(value)))


# -- type inspection --------------------------------------------------------------------------


def strip(tp: Any) -> tuple[Any, str | None]:
    """``Annotated[T, "text", ...]`` → ``(T, "text")``; any other type → ``(tp, None)``."""
    if typing.get_origin(tp) is typing.Annotated:
        inner, *extras = typing.get_args(tp)
        texts = [e for e in extras if isinstance(e, str)]
        return inner, (texts[0] if texts else None)
    return tp, None


def _optional_inner(tp: Any) -> Any | None:
    """``T`` for ``T | None`` / ``Optional[T]``; ``None`` for anything else."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(args) == 2:
            return rest[0]
    return None


def _is_enum(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, enum.Enum)


def _enum_values(tp: type[enum.Enum], where: str) -> list[Any]:
    values = [member.value for member in tp]
    if not values or not all(type(v) in (str, int) for v in values):
        raise TypeError(f"{where}: enum {tp.__name__} must have str or int values")
    return values


def _typed_enum(values: list[Any]) -> dict[str, Any]:
    kinds = {type(v) for v in values}
    schema: dict[str, Any] = {"enum": values}
    if len(kinds) == 1:
        schema = {"type": _PRIMITIVES[kinds.pop()], **schema}
    return schema


def describe_type(tp: Any, where: str, *, seen: tuple[type, ...] = ()) -> dict[str, Any]:
    """The JSON Schema of one parameter type. ``where`` names it in a ``TypeError``."""
    tp, description = strip(tp)
    schema = _describe(tp, where, seen)
    if description:
        schema = {**schema, "description": description}
    return schema


def _describe(tp: Any, where: str, seen: tuple[type, ...]) -> dict[str, Any]:
    if tp in _PRIMITIVES:
        return {"type": _PRIMITIVES[tp]}
    inner = _optional_inner(tp)
    if inner is not None:
        schema = describe_type(inner, where, seen=seen)
        if isinstance(schema.get("type"), str):
            # One schema with a type list, not anyOf: validators then report the inner path.
            nullable = {**schema, "type": [schema["type"], "null"]}
            if "enum" in schema:
                nullable["enum"] = [*schema["enum"], None]
            return nullable
        return {"anyOf": [schema, {"type": "null"}]}
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is list and len(args) == 1:
        return {"type": "array", "items": describe_type(args[0], f"{where}[]", seen=seen)}
    if origin is dict and len(args) == 2:
        if strip(args[0])[0] is not str:
            raise TypeError(f"{where}: dict keys must be str (JSON object keys are strings)")
        return {
            "type": "object",
            "additionalProperties": describe_type(args[1], f"{where}{{}}", seen=seen),
        }
    if origin is typing.Literal:
        if not args or not all(type(a) in (str, int, bool) for a in args):
            raise TypeError(f"{where}: Literal values must be str, int or bool")
        return _typed_enum(list(args))
    if _is_enum(tp):
        return _typed_enum(_enum_values(tp, where))
    if isinstance(tp, type) and attrs.has(tp):
        return _describe_attrs(tp, where, seen)
    raise TypeError(f"{where}: unsupported type {_type_name(tp)}")


def _type_name(tp: Any) -> str:
    return tp.__name__ if isinstance(tp, type) else repr(tp)


def _describe_attrs(cls: type, where: str, seen: tuple[type, ...]) -> dict[str, Any]:
    if cls in seen:
        raise TypeError(f"{where}: {cls.__name__} refers to itself; recursive types are refused")
    hints = typing.get_type_hints(cls, include_extras=True)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for field in attrs.fields(cls):
        if not field.init:
            continue
        name = field.name  # cattrs reads dict keys by field name, not by alias
        field_where = f"{where} ({cls.__name__}.{field.name})"
        tp = hints.get(field.name, field.type)
        if tp is None:
            raise TypeError(f"{field_where}: the field has no type annotation")
        schema = describe_type(tp, field_where, seen=(*seen, cls))
        if "description" in field.metadata and "description" not in schema:
            schema["description"] = str(field.metadata["description"])
        if field.default is attrs.NOTHING:
            required.append(name)
        else:
            default = json_default(field.default)
            if default is not None:
                schema["default"] = default[0]
        properties[name] = schema
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def json_default(value: object) -> tuple[Any] | None:
    """``(value,)`` as a JSON value when a default can be shown in a schema, else ``None``."""
    if isinstance(value, enum.Enum):
        value = value.value
    if type(value) in _JSON_VALUES:
        if type(value) is float and not math.isfinite(value):
            return None
        return (value,)
    return None


# -- the strict converter ---------------------------------------------------------------------


def _structure_str(value: object, _: Any) -> str:
    if type(value) is not str:
        raise _mismatch("string", value)
    return value


def _structure_bool(value: object, _: Any) -> bool:
    if type(value) is not bool:
        raise _mismatch("boolean", value)
    return value


def _structure_int(value: object, _: Any) -> int:
    if type(value) is int:
        return value
    if type(value) is float and math.isfinite(value) and value.is_integer():
        return int(value)
    raise _mismatch("integer", value)


def _structure_float(value: object, _: Any) -> float:
    if type(value) in (int, float) and math.isfinite(value):  # type: ignore[arg-type]
        return float(value)  # type: ignore[arg-type]
    raise _mismatch("finite number", value)


def _exact_member(allowed: tuple[Any, ...], value: object) -> bool:
    # ``in`` would accept True for 1 and 1.0 for 1: compare type and value.
    return any(type(value) is type(a) and value == a for a in allowed)


def _literal_factory(tp: Any, _: cattrs.Converter) -> Callable[[object, Any], Any]:
    allowed = typing.get_args(tp)

    def structure(value: object, _: Any) -> Any:
        if not _exact_member(allowed, value):
            raise ArgumentMismatch(Phrase.NOT_ALLOWED.value)
        return value

    return structure


def _enum_factory(tp: Any, _: cattrs.Converter) -> Callable[[object, Any], Any]:
    members = {(type(m.value), m.value): m for m in tp}

    def structure(value: object, _: Any) -> Any:
        member = members.get((type(value), value)) if type(value) in (str, int) else None
        if member is None:
            raise ArgumentMismatch(Phrase.NOT_ALLOWED.value)
        return member

    return structure


class _AtItem(Exception):
    """An item's structuring failure and the index or key it happened at.

    The host's own record of the path: the failure itself (which may be an argument type's
    own exception) is neither read nor written to note it.
    """

    def __init__(self, error: Exception, segment: int | str) -> None:
        super().__init__("invalid item")
        self.error = error
        self.segment = segment


def _noted(exc: Exception, index: int | str, tp: Any) -> Exception:
    """``exc`` with the item's index or key noted beside it (``tp`` is the item type)."""
    return _AtItem(exc, index)


def _list_factory(tp: Any, conv: cattrs.Converter) -> Callable[[object, Any], Any]:
    (item_type,) = typing.get_args(tp)

    def structure(value: object, _: Any) -> list[Any]:
        if type(value) is not list:
            raise _mismatch("array", value)
        hook = conv.get_structure_hook(item_type)
        out: list[Any] = []
        errors: list[Exception] = []
        for index, item in enumerate(value):
            try:
                out.append(hook(item, item_type))
            except Exception as exc:
                errors.append(_noted(exc, index, item_type))
        if errors:
            raise IterableValidationError("invalid items", errors, tp)
        return out

    return structure


def _dict_factory(tp: Any, conv: cattrs.Converter) -> Callable[[object, Any], Any]:
    _, value_type = typing.get_args(tp)

    def structure(value: object, _: Any) -> dict[str, Any]:
        if type(value) is not dict:
            raise _mismatch("object", value)
        hook = conv.get_structure_hook(value_type)
        out: dict[str, Any] = {}
        errors: list[Exception] = []
        for key, item in value.items():
            if type(key) is not str:
                errors.append(ArgumentMismatch(Phrase.NOT_JSON.value))
                continue
            try:
                out[key] = hook(item, value_type)
            except Exception as exc:
                errors.append(_noted(exc, key, value_type))
        if errors:
            raise IterableValidationError("invalid values", errors, tp)
        return out

    return structure


def _attrs_factory(tp: Any, conv: cattrs.Converter) -> Callable[[object, Any], Any]:
    generated = cattrs.gen.make_dict_structure_fn(
        tp, conv, _cattrs_forbid_extra_keys=True, _cattrs_detailed_validation=True
    )

    def structure(value: object, _: Any) -> Any:
        if type(value) is not dict:
            raise _mismatch("object", value)
        return generated(value, tp)

    return structure


def _is_list(tp: Any) -> bool:
    return typing.get_origin(tp) is list


def _is_dict(tp: Any) -> bool:
    return typing.get_origin(tp) is dict


def _is_literal(tp: Any) -> bool:
    return typing.get_origin(tp) is typing.Literal


def _is_attrs(tp: Any) -> bool:
    return isinstance(tp, type) and attrs.has(tp)


def strict_converter() -> cattrs.Converter:
    """A cattrs converter that refuses every coercion (see the module docstring)."""
    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    conv.register_structure_hook(str, _structure_str)
    conv.register_structure_hook(bool, _structure_bool)
    conv.register_structure_hook(int, _structure_int)
    conv.register_structure_hook(float, _structure_float)
    conv.register_structure_hook_factory(_is_literal, _literal_factory)
    conv.register_structure_hook_factory(_is_enum, _enum_factory)
    conv.register_structure_hook_factory(_is_list, _list_factory)
    conv.register_structure_hook_factory(_is_dict, _dict_factory)
    conv.register_structure_hook_factory(_is_attrs, _attrs_factory)
    return conv


# -- structuring errors in host words ---------------------------------------------------------

#: Exceptions looked at, at most, in one structuring failure: a validator can raise cattrs'
#: own group holding one group twice, nested (a tree of 2**60 leaves, if walked as one).
MAX_STRUCTURING_ERRORS: Final = 10_000
_NOTE_DICT: Final = AttributeValidationNote.__dict__["__dict__"]


def _note_name(note: object) -> object:
    """The ``name`` cattrs stored on its own note (an exact ``AttributeValidationNote``),
    read from the note's instance dict."""
    return own_item(_NOTE_DICT.__get__(note), "name")


def _noted_segment(exc: BaseException) -> tuple[str | int, ...] | None:
    """The path segment cattrs noted on ``exc``, if any (read from its instance dict without
    running code: ``exc`` may be an argument type's own exception)."""
    notes = own_item(exception_dict(exc), "__notes__")
    if type(notes) is not list:
        return None
    for note in reversed(notes):
        if type(note) is AttributeValidationNote:
            name = _note_name(note)
            if type(name) is str:
                return (name,)
    return None


def structuring_problems(exc: BaseException) -> tuple[tuple[Problem, ...], BaseException | None]:
    """The problems a structuring failure stands for, and the first exception in it that came
    from an argument type's own code (a validator, a converter, ``__attrs_post_init__``, a
    structure hook), which the problems describe only as ``invalid value``.

    Walks cattrs' exception groups iteratively, reading only exact cattrs and host types; the
    text of a foreign exception is never read here.
    """
    problems: list[Problem] = []
    foreign: BaseException | None = None
    stack: list[tuple[BaseException, tuple[str | int, ...]]] = [(exc, ())]
    seen = 0
    while stack and seen < MAX_STRUCTURING_ERRORS:
        error, path = stack.pop()
        seen += 1
        kind = type(error)
        # `is`, never `in` a tuple of types: `in` compares with ==, which a metaclass defines.
        if kind is ClassValidationError or kind is IterableValidationError:
            for child in reversed(error.exceptions):  # type: ignore[attr-defined]
                stack.append((child, path + (_noted_segment(child) or ())))
        elif kind is _AtItem:
            stack.append((error.error, (*path, error.segment)))  # type: ignore[attr-defined]
        elif kind is ArgumentMismatch:
            # Host and cattrs exceptions too are read from their instance dicts: a validator
            # can raise one built with a hostile dict.
            problems.append((own_item(exception_dict(error), "phrase"), path))  # type: ignore[arg-type]
        elif kind is ForbiddenExtraKeysError:
            extra = own_item(exception_dict(error), "extra_fields")
            keys = sorted(k for k in extra if type(k) is str) if type(extra) is set else []
            problems.extend((Phrase.UNEXPECTED.value, (*path, key)) for key in keys)
        elif kind is KeyError and _noted_segment(error) is not None:
            problems.append((Phrase.MISSING.value, path))  # cattrs: a required field is absent
        else:
            problems.append((Phrase.INVALID.value, path))
            foreign = foreign or error
    return tuple(problems), foreign
