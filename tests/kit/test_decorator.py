"""@tool: the spec from signature and docstring, strict arguments, refusals at decoration time."""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal, Optional

import attrs
import pytest

from nr_llm_core import Artifact, DataClass, ToolContext, ToolHost, ToolResult, tool
from nr_llm_core.decorator import FunctionTool
from nr_llm_core.failures import InvalidArguments


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.Enum):
    LOW = 1
    HIGH = 2


@attrs.frozen
class Point:
    x: int
    y: Annotated[int, "The y coordinate."] = 0
    label: str = attrs.field(default="", metadata={"description": "A label."})


@tool
def plain(name: str) -> str:
    """Say a name.

    Args:
        name: The name to say.
    """
    return f"name={name}"


@tool(name="kitchen-sink", group="demo", data_class="internal", requires_approval=True)
def sink(
    text: str,
    count: int = 1,
    ratio: float = 0.5,
    flag: bool = False,
    tags: list[str] | None = None,
    counts: dict[str, int] | None = None,
    mode: Literal["a", "b"] = "a",
    color: Color = Color.RED,
    level: Optional[Level] = None,  # noqa: UP045  # the Optional spelling is supported too
    point: Point | None = None,
    note: Annotated[str, "A note."] = "",
) -> str:
    """Echo every argument back, typed.

    This second paragraph is not part of the description.
    """
    return repr((text, count, ratio, flag, tags, counts, mode, color, level, point, note))


def run(t: FunctionTool[Any, Any], arguments: Any) -> ToolResult:
    result = t.execute(arguments, None)
    assert isinstance(result, ToolResult)
    return result


def refusal(t: FunctionTool[Any, Any], arguments: Any) -> str:
    """The host-worded reason ``execute`` gives for arguments it cannot structure."""
    with pytest.raises(InvalidArguments) as raised:
        t.execute(arguments, None)
    return str(raised.value)


def test_spec_from_signature_and_google_docstring() -> None:
    assert plain.spec.name == "plain"
    assert plain.spec.description == "Say a name."
    assert plain.spec.parameters == {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "The name to say."}},
        "required": ["name"],
        "additionalProperties": False,
    }
    assert plain.tool_spec() is plain.spec


def test_every_supported_type_becomes_json_schema() -> None:
    spec = sink.spec
    assert (spec.name, spec.group, spec.data_class, spec.requires_approval) == (
        "kitchen-sink",
        "demo",
        DataClass.INTERNAL,
        True,
    )
    assert spec.description == "Echo every argument back, typed."
    props = spec.parameters["properties"]
    assert spec.parameters["required"] == ["text"]
    assert spec.parameters["additionalProperties"] is False
    assert props["text"] == {"type": "string"}
    assert props["count"] == {"type": "integer", "default": 1}
    assert props["ratio"] == {"type": "number", "default": 0.5}
    assert props["flag"] == {"type": "boolean", "default": False}
    assert props["tags"] == {
        "type": ["array", "null"],
        "items": {"type": "string"},
        "default": None,
    }
    assert props["counts"] == {
        "type": ["object", "null"],
        "additionalProperties": {"type": "integer"},
        "default": None,
    }
    assert props["mode"] == {"type": "string", "enum": ["a", "b"], "default": "a"}
    assert props["color"] == {"type": "string", "enum": ["red", "blue"], "default": "red"}
    assert props["level"] == {"type": ["integer", "null"], "enum": [1, 2, None], "default": None}
    assert props["point"] == {
        "type": ["object", "null"],
        "properties": {
            "x": {"type": "integer"},
            "y": {"type": "integer", "description": "The y coordinate.", "default": 0},
            "label": {"type": "string", "description": "A label.", "default": ""},
        },
        "required": ["x"],
        "additionalProperties": False,
        "default": None,
    }
    assert props["note"] == {"type": "string", "description": "A note.", "default": ""}


def test_numpy_docstring_parameters() -> None:
    @tool
    def numpy_style(path: str, depth: int = 2) -> str:
        """List a directory
        tree.

        Parameters
        ----------
        path : str
            Where to start.
        depth : int
            How deep to go,
            at most.

        Returns
        -------
        str
        """
        return path

    assert numpy_style.spec.description == "List a directory tree."
    props = numpy_style.spec.parameters["properties"]
    assert props["path"]["description"] == "Where to start."
    assert props["depth"]["description"] == "How deep to go, at most."


def test_sphinx_docstring_parameters_and_annotated_wins() -> None:
    """A ``:param x:`` docstring describes its parameters (it gave none before); an
    ``Annotated`` description wins over the docstring's."""

    @tool
    def rest_style(path: str, depth: Annotated[int, "Levels below the start."] = 2) -> str:
        """List a directory tree.

        :param path: Where to start,
            relative to the root.
        :param depth: How deep to go.
        :returns: the tree.
        """
        return path

    assert rest_style.spec.description == "List a directory tree."
    props = rest_style.spec.parameters["properties"]
    assert props["path"]["description"] == "Where to start, relative to the root."
    assert props["depth"]["description"] == "Levels below the start."


def test_structured_values_reach_the_function() -> None:
    result = run(
        sink,
        {
            "text": "t",
            "count": 3,
            "ratio": 2,
            "tags": ["x"],
            "counts": {"k": 1},
            "mode": "b",
            "color": "blue",
            "level": 2,
            "point": {"x": 1, "y": 2},
        },
    )
    assert not result.is_error
    expected = ("t", 3, 2.0, False, ["x"], {"k": 1}, "b", Color.BLUE, Level.HIGH, Point(1, 2), "")
    assert result.content == repr(expected)


def test_absent_arguments_take_the_function_defaults() -> None:
    @tool
    def with_mutable_default(items: list[int] = [1, 2]) -> str:  # noqa: B006  # the default must survive
        """Count items."""
        items.append(0)
        return str(len(items))

    assert run(with_mutable_default, {}).content == "3"
    assert run(with_mutable_default, {}).content == "4"  # Python semantics, no copy


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        ({"text": 1}, "expected string, got integer @ $.text"),
        ({"text": "t", "count": "1"}, "expected integer, got string @ $.count"),
        ({"text": "t", "count": True}, "expected integer, got boolean @ $.count"),
        ({"text": "t", "count": 1.5}, "expected integer, got number @ $.count"),
        ({"text": "t", "flag": "abc"}, "expected boolean, got string @ $.flag"),
        ({"text": "t", "flag": 1}, "expected boolean, got integer @ $.flag"),
        ({"text": "t", "ratio": True}, "expected finite number, got boolean @ $.ratio"),
        ({"text": "t", "tags": "abc"}, "expected array, got string @ $.tags"),
        ({"text": "t", "tags": ["a", 2]}, "expected string, got integer @ $.tags[1]"),
        ({"text": "t", "counts": {"k": "1"}}, "expected integer, got string @ $.counts.k"),
        (
            {"text": "t", "counts": {"a key": "1"}},
            'expected integer, got string @ $.counts["a key"]',
        ),
        ({"text": "t", "mode": "c"}, "not one of the allowed values @ $.mode"),
        ({"text": "t", "color": "RED"}, "not one of the allowed values @ $.color"),
        ({"text": "t", "level": True}, "not one of the allowed values @ $.level"),
        ({"text": "t", "point": {"x": "1"}}, "expected integer, got string @ $.point.x"),
        ({"text": "t", "point": {}}, "missing required property @ $.point.x"),
        ({"text": "t", "point": {"x": 1, "z": 0}}, "unexpected property @ $.point.z"),
        ({"text": "t", "extra": 1}, "unexpected property @ $.extra"),
        ({}, "missing required property @ $.text"),
        ([], "expected object, got array @ $"),
    ],
)
def test_strict_converter_refuses_coercions_with_path_reasons(arguments: Any, reason: str) -> None:
    assert refusal(sink, arguments) == reason


def test_the_seam_words_a_structuring_refusal_like_a_schema_refusal() -> None:
    """Past the schema check (which would catch it first), ``execute``'s refusal reaches the
    model as the same invalid-arguments text, built from the same vocabulary."""
    host = ToolHost()
    host.register(sink)
    direct = refusal(sink, {"text": "t", "count": "1"})
    through = host.invoke("kitchen-sink", {"text": "t", "count": "1"})
    assert through.content == f'Error: invalid arguments for tool "kitchen-sink": {direct}'


def test_integral_float_is_an_int_as_in_json_schema() -> None:
    assert run(sink, {"text": "t", "count": 2.0}).content.startswith("('t', 2, ")


def test_literal_does_not_accept_equal_values_of_another_type() -> None:
    @tool
    def pick(n: Literal[1, 2]) -> str:
        """Pick a number."""
        return repr(n)

    assert run(pick, {"n": 1}).content == "1"
    assert refusal(pick, {"n": True}) == "not one of the allowed values @ $.n"
    assert refusal(pick, {"n": 1.0}) == "not one of the allowed values @ $.n"


def test_through_the_seam_mismatch_is_an_error_result_and_the_function_is_not_called() -> None:
    calls: list[str] = []

    @tool
    def record(text: str) -> str:
        """Record a text."""
        calls.append(text)
        return "ok"

    host = ToolHost()
    assert host.register(record) == "record"
    bad = host.invoke("record", {"text": 5})
    assert bad.is_error and bad.content.startswith('Error: invalid arguments for tool "record"')
    assert calls == []
    assert host.invoke("record", {"text": "x"}) == ToolResult.text("ok")
    assert calls == ["x"]


def test_string_result_tool_result_and_invalid_result() -> None:
    @tool
    def rich() -> ToolResult:
        """Return a table."""
        return ToolResult.text("done", Artifact.table("t", ["a"], [["1"]]))

    @tool
    def broken() -> int:
        """Return the wrong type."""
        return 42

    host = ToolHost()
    host.register(rich)
    host.register(broken)
    assert host.invoke("rich", {}).artifacts[0].label == "t"
    assert host.invoke("broken", {}).content == 'Error: tool "broken" returned an invalid result.'


def test_exceptions_become_the_generic_failure() -> None:
    @tool
    def explode() -> str:
        """Fail."""
        raise RuntimeError("secret-canary")

    host = ToolHost()
    host.register(explode)
    result = host.invoke("explode", {})
    assert result.content == 'Error: tool "explode" failed.'
    assert "secret-canary" not in result.content


def test_context_is_passed_through_and_not_in_the_schema() -> None:
    seen: list[ToolContext | None] = []

    @tool
    def ctx(text: str, context: ToolContext | None = None) -> str:
        """Look at the context."""
        seen.append(context)
        return text

    assert "context" not in ctx.spec.parameters["properties"]
    host = ToolHost()
    host.register(ctx)
    context = ToolContext(run_id="r1", call_id="c1", round=1)
    assert host.invoke("ctx", {"text": "a"}, context=context).content == "a"
    assert seen == [context]
    assert host.invoke("ctx", {"text": "a", "context": {}}).is_error


def test_the_decorated_object_is_still_the_function() -> None:
    assert plain("Ada") == "name=Ada"
    assert plain.__name__ == "plain"
    assert plain.__doc__ is not None and "Say a name" in plain.__doc__
    assert "plain" in repr(plain)


def test_enabled_by_default_and_description_override() -> None:
    @tool(enabled_by_default=False, description="Overridden.")
    def off() -> str:
        """Not this."""
        return "x"

    host = ToolHost()
    host.register(off)
    assert off.spec.description == "Overridden."
    assert host.invoke("off", {}).content == 'Error: tool "off" not permitted'


def _untyped(a, b: int) -> str:  # type: ignore[no-untyped-def]  # the point of the test
    """Untyped."""
    return ""


def _star_args(*names: str) -> str:
    """Star args."""
    return ""


def _star_kwargs(**options: str) -> str:
    """Star kwargs."""
    return ""


def _unsupported(when: set[str]) -> str:
    """A set."""
    return ""


def _union(value: int | str) -> str:
    """A union."""
    return ""


def _bare_list(items: list) -> str:  # type: ignore[type-arg]  # the point of the test
    """A bare list."""
    return ""


def _int_keys(items: dict[int, str]) -> str:
    """Int keys."""
    return ""


def _no_doc(x: int) -> str:
    return ""


def _positional(x: int, /) -> str:
    """Positional only."""
    return ""


@attrs.define
class Node:
    child: Node | None = None


def _recursive(node: Node) -> str:
    """Recursive."""
    return ""


@attrs.define
class Untyped:
    value = attrs.field()


def _untyped_attrs(thing: Untyped) -> str:
    """Untyped attrs class."""
    return ""


@pytest.mark.parametrize(
    ("function", "message"),
    [
        (_untyped, "_untyped, parameter 'a': has no type annotation"),
        (_star_args, "_star_args, parameter 'names': *args and **kwargs"),
        (_star_kwargs, "_star_kwargs, parameter 'options': *args and **kwargs"),
        (_unsupported, "_unsupported, parameter 'when': unsupported type set[str]"),
        (_union, "_union, parameter 'value': unsupported type"),
        (_bare_list, "_bare_list, parameter 'items': unsupported type list"),
        (_int_keys, "_int_keys, parameter 'items': dict keys must be str"),
        (_no_doc, "_no_doc: needs a docstring"),
        (_positional, "_positional, parameter 'x': positional-only"),
        (_recursive, "_recursive, parameter 'node' (Node.child): Node refers to itself"),
        (_untyped_attrs, "Untyped.value): the field has no type annotation"),
    ],
)
def test_what_cannot_be_described_fails_at_decoration_time(function: Any, message: str) -> None:
    with pytest.raises(TypeError) as info:
        tool(function)
    assert message in str(info.value)
    assert str(info.value).startswith("@tool ")


def test_invalid_name_fails_at_decoration_time() -> None:
    def fine() -> str:
        """Fine."""
        return ""

    with pytest.raises(TypeError, match="must match"):
        tool(name="no spaces allowed")(fine)


def test_async_functions_are_refused() -> None:
    async def later() -> str:
        """Later."""
        return ""

    with pytest.raises(TypeError, match="async"):
        tool(later)


def test_unresolvable_annotation_names_the_function() -> None:
    def ghost(x: NotDefinedAnywhere) -> str:  # type: ignore[name-defined]  # noqa: F821
        """Ghost."""
        return ""

    with pytest.raises(TypeError, match="ghost: cannot resolve"):
        tool(ghost)


def test_decorating_twice_or_a_class_is_refused() -> None:
    with pytest.raises(TypeError, match="already a tool"):
        tool(plain)
    with pytest.raises(TypeError, match="decorates a function"):
        tool(Point)


@tool
def scalars(
    count: int, ratio: float, flag: bool, word: str, context: ToolContext | None = None, n: int = 5
) -> str:
    """Show what arrived, with its type.

    Args:
        count: A count.
        ratio: A ratio.
        flag: A flag.
        word: A word.
        n: A number.
    """
    shown = {"count": count, "ratio": ratio, "flag": flag, "word": word, "n": n}
    return repr({k: (type(v).__name__, v) for k, v in shown.items()}) + f" ctx={context!r}"


_ODD_VALUES = [0, 7, -1, 3.0, 2.5, float("inf"), float("nan"), True, False, "x", "", None, [1]]


@pytest.mark.parametrize("count", [0, -1, 3.0, True, "7", None])
@pytest.mark.parametrize("ratio", _ODD_VALUES)
@pytest.mark.parametrize("flag", [True, 1, None])
@pytest.mark.parametrize("extra", [{}, {"n": 2}, {"n": 2.0}, {"n": False}, {"other": 1}])
def test_plain_parameters_skip_the_converter_only_where_it_would_change_nothing(
    count: Any, ratio: Any, flag: Any, extra: dict[str, Any]
) -> None:
    """Parameters of the four JSON scalar types are passed on without the converter when every
    argument has exactly its parameter's type: for every mix of values (integral floats for an
    int, an int for a float, bools for numbers, infinities, NaN, missing and unexpected keys),
    the result, or the refusal, is the converter's own."""
    assert scalars._plain is not None
    arguments = {"count": count, "ratio": ratio, "flag": flag, "word": "w", **extra}
    converter_only = FunctionTool(
        scalars.function,
        scalars.spec,
        scalars._arguments_class,
        scalars._parameters,
        scalars._context_parameter,
    )
    converter_only._plain = None

    def outcome(tool_: FunctionTool[Any, Any]) -> Any:
        try:
            return tool_.execute(dict(arguments), "ctx")  # type: ignore[arg-type]
        except InvalidArguments as exc:
            return ("refused", exc.problems)

    assert outcome(scalars) == outcome(converter_only)
