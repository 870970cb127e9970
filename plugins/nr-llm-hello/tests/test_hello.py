from nr_llm_hello import Hello

from nr_llm_core import ArtifactType, ToolHost


def test_hello_greets_through_the_seam() -> None:
    host = ToolHost()
    host.register(Hello)
    result = host.invoke("hello", {"name": "Ada"})
    assert result.content == "Hello, Ada!"
    assert [a.type for a in result.artifacts] == [ArtifactType.TABLE]


def test_hello_requires_a_name() -> None:
    host = ToolHost()
    host.register(Hello)
    result = host.invoke("hello", {})
    assert result.is_error
    assert result.content.startswith('Error: invalid arguments for tool "hello"')
