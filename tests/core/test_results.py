"""ToolResult, Artifact, ArtifactType, ToolSpec: the typed contract."""

from __future__ import annotations

import pytest

from nr_llm_core import Artifact, ArtifactType, DataClass, ToolResult, ToolSpec

CANARY = "CANARY-artifact-data-7f3a"


def test_tool_result_cannot_be_constructed_directly() -> None:
    with pytest.raises(TypeError, match=r"ToolResult\.text"):
        ToolResult("hi", False, ())  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        ToolResult(content="hi")  # type: ignore[call-arg]


def test_text_and_error_factories() -> None:
    table = Artifact.table("t", ["a"], [["1"]])
    result = ToolResult.text("hi", table)
    assert (result.content, result.is_error, result.artifacts) == ("hi", False, (table,))
    error = ToolResult.error("nope")
    assert (error.content, error.is_error, error.artifacts) == ("nope", True, ())


def test_error_takes_no_artifacts() -> None:
    with pytest.raises(TypeError):
        ToolResult.error("nope", Artifact.text("x", "y"))  # type: ignore[call-arg]


@pytest.mark.parametrize("bad", [b"bytes", None, 3, ["list"]])
def test_factories_refuse_non_str_content(bad: object) -> None:
    with pytest.raises(TypeError, match="content must be a str"):
        ToolResult.text(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="content must be a str"):
        ToolResult.error(bad)  # type: ignore[arg-type]


def test_text_refuses_non_artifacts() -> None:
    with pytest.raises(TypeError, match="Artifact"):
        ToolResult.text("x", {"type": "text"})  # type: ignore[arg-type]


@pytest.mark.parametrize("target", ["result", "artifact", "spec"])
def test_frozen(target: str) -> None:
    obj: object = {
        "result": ToolResult.text("x"),
        "artifact": Artifact.text("l", "t"),
        "spec": ToolSpec("t", "d"),
    }[target]
    with pytest.raises(AttributeError, match="frozen"):
        obj.label = "changed"  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="frozen"):
        del obj.label  # type: ignore[attr-defined]


def test_repr_str_and_format_never_show_artifact_data() -> None:
    result = ToolResult.text(
        "visible",
        Artifact.table(CANARY, [CANARY], [[CANARY]]),
        Artifact.text(CANARY, CANARY),
    )
    for shown in (
        repr(result),
        str(result),
        f"{result}",
        format(result, ">200"),
        repr(result.artifacts),
    ):
        assert CANARY not in shown
    assert "table" in repr(result) and "text" in repr(result) and "<2" in repr(result)


def test_artifact_factories_copy_their_input() -> None:
    rows = [["1", "2"]]
    columns = ["a", "b"]
    table = Artifact.table("t", columns, rows)
    rows[0][0] = "changed"
    columns.append("c")
    assert table.data == {"columns": ["a", "b"], "rows": [["1", "2"]]}
    assert table.to_dict() == {"type": "table", "label": "t", "data": table.data}
    assert Artifact.text("l", "body").to_dict() == {
        "type": "text",
        "label": "l",
        "data": {"text": "body"},
    }


def test_table_refuses_ragged_rows_and_non_str_cells() -> None:
    with pytest.raises(ValueError, match="row 0 has 1 cells for 2 columns"):
        Artifact.table("t", ["a", "b"], [["1"]])
    with pytest.raises(TypeError, match="cell in row 0"):
        Artifact.table("t", ["a"], [[1]])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="column name"):
        Artifact.table("t", [1], [])  # type: ignore[list-item]


def test_artifact_type_is_a_str_enum() -> None:
    assert ArtifactType.TABLE == "table" and ArtifactType.TEXT == "text"
    assert [t.value for t in ArtifactType] == ["table", "text"]


def test_tool_spec_wire_holds_only_three_fields() -> None:
    spec = ToolSpec(
        "lookup",
        "Look things up.",
        {"type": "object", "properties": {}},
        group="records",
        enabled_by_default=False,
        data_class="internal",
        requires_approval=True,
    )
    assert spec.to_wire() == {
        "name": "lookup",
        "description": "Look things up.",
        "parameters": {"type": "object", "properties": {}},
    }
    assert spec.data_class is DataClass.INTERNAL
    assert spec.to_dict()["requires_approval"] is True


def test_tool_spec_defaults_and_unknown_data_class_is_strictest() -> None:
    spec = ToolSpec("t", "d")
    assert spec.parameters == {"type": "object", "properties": {}}
    assert spec.enabled_by_default and not spec.requires_approval
    assert spec.data_class is None
    assert spec.effective_data_class is DataClass.SECRET_ADJACENT
    assert DataClass.PUBLIC.rank < DataClass.INTERNAL.rank < DataClass.SECRET_ADJACENT.rank


@pytest.mark.parametrize("name", ["", "has space", "x" * 65, "dots.not.allowed", "ü"])
def test_tool_spec_refuses_names_providers_refuse(name: str) -> None:
    with pytest.raises(ValueError, match="must match"):
        ToolSpec(name, "d")


def test_tool_spec_parameters_must_be_an_object_schema() -> None:
    with pytest.raises(ValueError, match="type 'object'"):
        ToolSpec("t", "d", {"type": "array"})
    with pytest.raises(ValueError, match="secret"):
        ToolSpec("t", "d", data_class="secret")
