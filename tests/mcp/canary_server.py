"""An MCP server over stdio built with the official SDK's low-level server, whose one tool,
``report``, answers with a text block and, beside it, everything a model must not see, each
holding the canary given as argv[1]: ``structuredContent``, an image, audio, an embedded
resource and a resource link."""

from __future__ import annotations

import base64
import sys
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

CANARY = sys.argv[1]
DATA = base64.b64encode(f"PNG {CANARY} bytes".encode()).decode()


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    schema = {"type": "object", "properties": {"rows": {"type": "integer"}}}
    return types.ListToolsResult(
        tools=[types.Tool(name="report", description="A report.", input_schema=schema)]
    )


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    rows = (params.arguments or {}).get("rows", 2)
    return types.CallToolResult(
        content=[
            types.TextContent(type="text", text=f"{rows} rows found"),
            types.ImageContent(type="image", data=DATA, mime_type="image/png"),
            types.AudioContent(type="audio", data=DATA, mime_type="audio/wav"),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(
                    uri=f"file:///{CANARY}.txt", mime_type="text/plain", text=CANARY
                ),
            ),
            types.ResourceLink(
                type="resource_link", name=CANARY, uri=f"https://example.invalid/{CANARY}"
            ),
        ],
        structured_content={"rows": [{"id": i, "secret": f"{CANARY}-{i}"} for i in range(rows)]},
    )


server: Server[Any] = Server("canary", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
