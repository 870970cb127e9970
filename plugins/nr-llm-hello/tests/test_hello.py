"""The hello tool, through the real seam (the tool_host fixture comes from nr-llm)."""

from __future__ import annotations

from nr_llm_hello import hello

from nr_llm_core import Artifact, ArtifactType, DataClass, ToolResult
from nr_llm_core.testing import ToolHostFactory, assert_bounded


def test_hello_greets_through_the_seam(tool_host: ToolHostFactory) -> None:
    result = tool_host(hello).invoke("hello", {"name": "Ada"})
    assert result == ToolResult.text(
        "Hello, Ada!", Artifact.table("greeting", ["name", "greeting"], [["Ada", "Hello, Ada!"]])
    )
    assert [a.type for a in result.artifacts] == [ArtifactType.TABLE]
    assert_bounded(result)


def test_hello_requires_a_name(tool_host: ToolHostFactory) -> None:
    result = tool_host(hello).invoke("hello", {})
    assert result.is_error
    assert result.content.startswith('Error: invalid arguments for tool "hello"')


def test_hello_refuses_a_name_that_is_not_a_string(tool_host: ToolHostFactory) -> None:
    result = tool_host(hello).invoke("hello", {"name": 42})
    assert result.is_error and "name" in result.content


def test_the_spec_is_public_and_in_the_utility_group() -> None:
    spec = hello.spec
    assert (spec.name, spec.group, spec.data_class) == ("hello", "utility", DataClass.PUBLIC)
    assert spec.parameters["required"] == ["name"]
    assert spec.parameters["properties"]["name"]["description"] == "Who to greet."


def test_the_function_is_still_callable() -> None:
    assert hello("Ada").content == "Hello, Ada!"
