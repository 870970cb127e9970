"""The MCP bridge: nr-llm tools served to MCP clients, and MCP servers' tools through the seam.

Everything here needs the ``mcp`` extra (``pip install 'nr-llm[mcp]'``); nothing outside this
subpackage imports it, and this module imports nothing, so ``import nr_llm_core`` works without
it. ``serve`` serves, ``client`` imports, and the two share only ``content``, the mapping between
a :class:`~nr_llm_core.ToolResult` and MCP content (docs/mcp.md, ADR 0023).
"""

from __future__ import annotations

__all__: list[str] = []
