"""The one mapping between a ``ToolResult`` and MCP tool-call content, in both directions.

Serving (:func:`call_result`): an MCP client receives one text block holding ``content`` and
``isError`` from ``is_error``; never ``structuredContent``, never a block built from an
artifact. Importing (:func:`tool_result`): the text blocks of an MCP server's answer, joined,
are the ``content``; everything else it sent becomes a run-only artifact that no provider
request can carry: ``structuredContent`` as a TABLE (a list of flat records) or a TEXT artifact
holding its JSON, and images, audio, embedded resources and resource links as one TABLE that
records each block's type, MIME type and size, never its bytes. ``isError`` is an error result.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from mcp import types

from nr_llm_core.results import Artifact, ToolResult

__all__ = [
    "NON_TEXT_LABEL",
    "STRUCTURED_LABEL",
    "call_result",
    "tool_result",
]

#: The label of the artifact that lists the blocks kept out of the conversation.
NON_TEXT_LABEL: Final = "MCP content kept out of the conversation"
#: The label of the artifact that holds an answer's ``structuredContent``.
STRUCTURED_LABEL: Final = "MCP structured content"
_NON_TEXT_COLUMNS: Final = ("type", "mime_type", "bytes", "uri")
# Host words for the block types the SDK's models know (a closed set: pydantic refused others).
_KINDS: Final = {
    "image": ("image", "images"),
    "audio": ("audio block", "audio blocks"),
    "resource": ("embedded resource", "embedded resources"),
    "resource_link": ("resource link", "resource links"),
}


def call_result(result: ToolResult) -> types.CallToolResult:
    """What an MCP client receives for a bounded ``result``: its ``content`` in one text block.

    Built from ``content`` and ``is_error`` alone: artifacts are run-only data, and this
    function does not read them.
    """
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=result.content)],
        is_error=result.is_error,
    )


def tool_result(answer: types.CallToolResult, *, empty_error: str) -> ToolResult:
    """The ``ToolResult`` of an MCP server's answer (the host's seam bounds it afterwards).

    ``empty_error`` is the content of an error answer that holds no text (host words).
    """
    texts: list[str] = []
    others: list[list[str]] = []
    counts: dict[str, int] = {}
    for block in answer.content:
        if isinstance(block, types.TextContent):
            texts.append(block.text)
            continue
        kind = str(block.type)
        counts[kind] = counts.get(kind, 0) + 1
        others.append(_describe(block))
    content = "\n".join(texts)
    if answer.is_error:
        # An error result carries no artifacts (DESIGN.md): what else the server sent is
        # dropped with it.
        return ToolResult.error(content or empty_error)
    note = _kept_out_note(counts)
    if note:
        content = f"{content}\n{note}" if content else note
    artifacts: list[Artifact] = []
    if answer.structured_content is not None:
        artifacts.append(_structured(answer.structured_content))
    if others:
        artifacts.append(Artifact.table(NON_TEXT_LABEL, _NON_TEXT_COLUMNS, others))
    return ToolResult.text(content, *artifacts)


def _kept_out_note(counts: Mapping[str, int]) -> str:
    """A host sentence telling the model that blocks were kept out (counts and kinds only)."""
    if not counts:
        return ""
    parts = []
    for kind in sorted(counts):
        one, many = _KINDS.get(kind, ("other block", "other blocks"))
        parts.append(f"{counts[kind]} {one if counts[kind] == 1 else many}")
    return f"[nr-llm: the tool also returned {', '.join(parts)}, kept out of the conversation]"


def _describe(block: Any) -> list[str]:
    """One row of the kept-out table: type, MIME type, size in bytes, URI (never the bytes)."""
    kind = str(block.type)
    mime = ""
    size: int | None = None
    uri = ""
    if isinstance(block, types.ImageContent | types.AudioContent):
        mime, size = block.mime_type, _base64_size(block.data)
    elif isinstance(block, types.EmbeddedResource):
        resource = block.resource
        mime, uri = resource.mime_type or "", resource.uri
        if isinstance(resource, types.BlobResourceContents):
            size = _base64_size(resource.blob)
        else:
            size = len(resource.text.encode("utf-8", "surrogatepass"))
    elif isinstance(block, types.ResourceLink):
        mime, uri, size = block.mime_type or "", block.uri, block.size
    return [kind, mime, "" if size is None else str(size), uri]


def _base64_size(data: str) -> int:
    """The decoded size of base64 text, counted without decoding it."""
    text = data.strip()
    padding = len(text) - len(text.rstrip("="))
    return max(len(text) * 3 // 4 - min(padding, 2), 0)


def _structured(value: Any) -> Artifact:
    """A TABLE when ``value`` is (or holds under its one key) a list of flat records, else a
    TEXT artifact holding its JSON."""
    records = _records(value)
    if records is not None:
        columns: dict[str, None] = {}
        for record in records:
            columns.update(dict.fromkeys(record))
        names = list(columns)
        rows = [[_cell(record.get(name)) for name in names] for record in records]
        return Artifact.table(STRUCTURED_LABEL, names, rows)
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, indent=2)
    except (TypeError, ValueError, RecursionError):
        text = "(not valid JSON)"
    return Artifact.text(STRUCTURED_LABEL, text)


def _records(value: Any) -> Sequence[Mapping[str, Any]] | None:
    if type(value) is dict and len(value) == 1:
        (value,) = value.values()
    if type(value) is not list or not value:
        return None
    for record in value:
        if type(record) is not dict or not record:
            return None
        for cell in record.values():
            if cell is not None and type(cell) not in (str, int, float, bool):
                return None
    return value


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if type(value) is str:
        return value
    return json.dumps(value, allow_nan=True)
