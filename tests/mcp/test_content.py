"""The one mapping between a ``ToolResult`` and MCP content, row by row: what a client is sent
(content only) and what an imported answer becomes (text as content, the rest as artifacts)."""

from __future__ import annotations

import base64
import json

from nr_llm_core import Artifact, ToolHost, ToolResult
from nr_llm_core.results import ArtifactType
from tests.mcp._support import require_sdk

require_sdk()

from mcp import types  # noqa: E402  # after the extra check

from nr_llm_core.mcp.content import (  # noqa: E402  # after the extra check
    NON_TEXT_LABEL,
    STRUCTURED_LABEL,
    call_result,
    tool_result,
)

CANARY = "CANARY-CONTENT-61f3"


def _answer(
    *blocks: object, structured: object = None, error: bool = False
) -> types.CallToolResult:
    return types.CallToolResult(content=list(blocks), structured_content=structured, is_error=error)


def _text(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


def test_a_served_result_is_one_text_block_of_content_and_nothing_of_its_artifacts() -> None:
    """``call_result`` reads content and is_error only: the wire form holds no artifact byte,
    no structuredContent, and an error result is ``isError``."""
    result = ToolResult.text(
        "2 rows", Artifact.table(CANARY, [CANARY], [[CANARY]]), Artifact.text("t", CANARY)
    )
    wire = call_result(result).model_dump_json(by_alias=True, exclude_none=True)
    assert CANARY not in wire
    assert json.loads(wire) == {
        "content": [{"type": "text", "text": "2 rows"}],
        "isError": False,
        "resultType": "complete",
    }
    failed = call_result(ToolResult.error('Error: tool "x" failed.'))
    assert failed.is_error and failed.content[0].text == 'Error: tool "x" failed.'


def test_text_blocks_are_joined_into_content() -> None:
    result = tool_result(_answer(_text("one"), _text("two")), empty_error="e")
    assert (result.content, result.is_error, result.artifacts) == ("one\ntwo", False, ())


def test_a_list_of_flat_records_is_a_table_and_anything_else_json_text() -> None:
    """Records (bare or under one key) with scalar cells: a TABLE, columns in first-seen
    order, cells as text. A nested value, a mixed list or several keys: TEXT with the JSON."""
    records = {"rows": [{"id": 1, "name": "a"}, {"name": "b", "ok": True, "none": None}]}
    (table,) = tool_result(_answer(_text("t"), structured=records), empty_error="e").artifacts
    assert (table.type, table.label) == (ArtifactType.TABLE, STRUCTURED_LABEL)
    assert table.data == {
        "columns": ["id", "name", "ok", "none"],
        "rows": [["1", "a", "", ""], ["", "b", "true", ""]],
    }
    for value in (
        {"rows": [{"id": {"nested": 1}}]},
        {"a": 1, "b": 2},
        {"rows": [{"id": 1}, 2]},
        {"rows": []},
    ):
        (text,) = tool_result(_answer(_text("t"), structured=value), empty_error="e").artifacts
        assert text.type is ArtifactType.TEXT
        assert json.loads(text.data["text"]) == value


def test_non_text_blocks_are_described_never_carried() -> None:
    """Images, audio, embedded resources and resource links: one TABLE row each (type, MIME
    type, decoded size, URI), never their bytes; content gets a host sentence with counts."""
    data = base64.b64encode(CANARY.encode() * 10).decode()
    answer = _answer(
        _text("here"),
        types.ImageContent(type="image", data=data, mime_type="image/png"),
        types.ImageContent(type="image", data=data, mime_type="image/jpeg"),
        types.AudioContent(type="audio", data=data, mime_type="audio/wav"),
        types.EmbeddedResource(
            type="resource",
            resource=types.BlobResourceContents(uri="file:///b", blob=data, mime_type="x/y"),
        ),
        types.ResourceLink(type="resource_link", name="n", uri="https://h/r", size=7),
    )
    result = tool_result(answer, empty_error="e")
    assert result.content == (
        "here\n[nr-llm: the tool also returned 1 audio block, 2 images, 1 embedded resource, "
        "1 resource link, kept out of the conversation]"
    )
    (kept,) = result.artifacts
    assert kept.label == NON_TEXT_LABEL
    size = str(len(CANARY) * 10)
    assert kept.data["rows"] == [
        ["image", "image/png", size, ""],
        ["image", "image/jpeg", size, ""],
        ["audio", "audio/wav", size, ""],
        ["resource", "x/y", size, "file:///b"],
        ["resource_link", "", "7", "https://h/r"],
    ]
    assert data not in json.dumps(kept.data)


def test_an_error_answer_is_an_error_result_without_artifacts() -> None:
    """``isError``: the text is the error's content (the host's words when there is none)
    and nothing else the server sent is kept: an error result carries no artifacts."""
    image = types.ImageContent(type="image", data="AAAA", mime_type="image/png")
    result = tool_result(
        _answer(_text("bad input"), image, structured={"a": 1}, error=True), empty_error="e"
    )
    assert (result.content, result.is_error, result.artifacts) == ("bad input", True, ())
    empty = tool_result(_answer(image, error=True), empty_error='Error: tool "t" failed.')
    assert empty.content == 'Error: tool "t" failed.'


def test_the_seam_bounds_an_imported_answer_like_any_other() -> None:
    """A huge text answer is cut at the content cap by the host's seam, as for any tool."""

    class Runner:
        timeout = 5.0

        def call(self, arguments: object, context: object, timeout: float) -> object:
            return tool_result(_answer(_text("x" * 200_000)), empty_error="e")

    from nr_llm_core import ToolSpec

    host = ToolHost()
    host.add_external("mcp:t", lambda: [(ToolSpec("t__big", "big", None), Runner())])
    result = host.invoke("t__big", {})
    assert len(result.content.encode()) == 50_000
    assert result.content.endswith("[tool result truncated at 50000 bytes]")
    assert host.distribution("t__big") == "mcp:t" and not host.is_isolated("t__big")
