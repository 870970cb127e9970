"""The ``utility`` group: the current time in a time zone, and safe arithmetic.

``calculate`` never calls ``eval``: the expression is parsed with :mod:`ast` and only numeric
literals, ``+ - * / // % **``, unary ``+``/``-`` and parentheses are evaluated, by this module's
own walk. Every bound is checked *before* the operation that could exceed it: the expression's
length and node count, an exponent's size, and every intermediate result's magnitude, so no
input can make the tool spend unbounded time or memory on one huge integer.
"""

from __future__ import annotations

import ast
import datetime as dt
import math
import operator
from collections.abc import Callable
from typing import Any, Final, final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from nr_llm_core.hooks import hookimpl
from nr_llm_core.results import DataClass, ToolResult, ToolSpec

__all__ = ["Calculate", "CalculationError", "CurrentTime", "evaluate"]

GROUP: Final = "utility"
MAX_EXPRESSION_CHARS: Final = 200
MAX_NODES: Final = 100
MAX_EXPONENT: Final = 1000
#: Integers stay below 2**1024 (about 1.8e308, as large as a float can be).
MAX_INT_BITS: Final = 1024


@final
class CurrentTime:
    """``current_time``: the current date and time in an IANA time zone (default UTC)."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(
            "current_time",
            "The current date and time in a time zone (an IANA name such as Europe/Berlin; "
            "default UTC).",
            {
                "type": "object",
                "properties": {"timezone": {"type": "string", "minLength": 1, "maxLength": 64}},
                "additionalProperties": False,
            },
            group=GROUP,
            data_class=DataClass.PUBLIC,
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        name = arguments.get("timezone", "UTC")
        try:
            zone = ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError, OSError, TypeError):
            # ValueError: a key that is not a normalised relative path (``../x``, ``/etc``).
            shown = " ".join(str(name).split())[:64]
            return ToolResult.error(
                f"Unknown time zone: {shown!r} (use an IANA name like Europe/Berlin)."
            )
        now = dt.datetime.now(zone)
        return ToolResult.text(
            f"{now.isoformat(timespec='seconds')} ({now.strftime('%A')}, {name}, "
            f"{now.tzname()}, UTC{now.strftime('%z')[:3]}:{now.strftime('%z')[3:]})"
        )


class CalculationError(ValueError):
    """The expression cannot be evaluated; the message is what the model is told."""


_BINARY: Final[dict[type[ast.operator], Callable[[Any, Any], Any]]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: Final[dict[type[ast.unaryop], Callable[[Any], Any]]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}


def _check_magnitude(value: int | float) -> int | float:
    if isinstance(value, complex):
        raise CalculationError("the result is not a real number")
    if isinstance(value, float) and not math.isfinite(value):
        raise CalculationError("the result is too large")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise CalculationError("the result is too large")
    return value


def _power(base: int | float, exponent: int | float) -> int | float:
    if abs(exponent) > MAX_EXPONENT:
        raise CalculationError(f"exponents are limited to ±{MAX_EXPONENT}")
    # Bound the size before computing: |b**e| >= 2**((bits(b) - 1) * e).
    if (
        isinstance(base, int)
        and isinstance(exponent, int)
        and max(abs(base).bit_length() - 1, 0) * exponent > MAX_INT_BITS
    ):
        raise CalculationError("the result is too large")
    result: int | float = base**exponent
    return result


def _apply(op: ast.operator, left: int | float, right: int | float) -> int | float:
    try:
        if isinstance(op, ast.Pow):
            return _power(left, right)
        result: int | float = _BINARY[type(op)](left, right)
    except ZeroDivisionError:
        raise CalculationError("division by zero") from None
    return result


def evaluate(expression: str) -> int | float:
    """The value of an arithmetic ``expression``; :class:`CalculationError` says why not."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculationError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise CalculationError("not a valid arithmetic expression") from None
    nodes = list(ast.walk(tree))
    if len(nodes) > MAX_NODES:
        raise CalculationError(f"the expression has more than {MAX_NODES} parts")
    for node in nodes:
        if isinstance(node, ast.Constant):
            if type(node.value) not in (int, float):
                raise CalculationError("only numbers are allowed")
        elif isinstance(node, ast.BinOp):
            if type(node.op) not in _BINARY:
                raise CalculationError("only + - * / // % ** are allowed")
        elif isinstance(node, ast.UnaryOp):
            if type(node.op) not in _UNARY:
                raise CalculationError("only unary + and - are allowed")
        elif not isinstance(node, ast.Expression | ast.operator | ast.unaryop):
            raise CalculationError("only numbers, operators and parentheses are allowed")
    try:
        return _evaluate(tree.body)
    except OverflowError:
        raise CalculationError("the result is too large") from None


def _evaluate(node: ast.expr) -> int | float:
    # Recursion is bounded: at most MAX_NODES nodes were admitted.
    if isinstance(node, ast.Constant):
        value = node.value
        assert isinstance(value, int | float)  # only int and float constants were admitted
        return _check_magnitude(value)
    if isinstance(node, ast.UnaryOp):
        return _check_magnitude(_UNARY[type(node.op)](_evaluate(node.operand)))
    assert isinstance(node, ast.BinOp)
    left, right = _evaluate(node.left), _evaluate(node.right)
    return _check_magnitude(_apply(node.op, left, right))


@final
class Calculate:
    """``calculate``: evaluate an arithmetic expression, safely."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(
            "calculate",
            "Evaluate an arithmetic expression: numbers, + - * / // % ** and parentheses.",
            {
                "type": "object",
                "properties": {
                    "expression": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": MAX_EXPRESSION_CHARS,
                    }
                },
                "required": ["expression"],
                "additionalProperties": False,
            },
            group=GROUP,
            data_class=DataClass.PUBLIC,
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        expression = str(arguments["expression"])
        try:
            value = evaluate(expression)
        except CalculationError as exc:
            return ToolResult.error(f"Cannot calculate: {exc}.")
        shown = " ".join(expression.split())
        return ToolResult.text(f"{shown} = {value!r}")
