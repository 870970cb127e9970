"""Serving a host's tools to MCP clients: which tools a client sees, and each call through the seam.

:class:`ToolServer` builds the SDK's low-level ``Server`` over a :class:`~nr_llm_core.ToolHost`.
The client is a consumer in a trust zone: a tool whose data class that zone may not see is not
listed, and neither is one that requires approval unless the operator opted in. A call of a
tool that is not listed is a protocol error (``-32602``), as for a name nobody installed, so a
client cannot tell a hidden tool from a missing one. Every other call goes through
:meth:`~nr_llm_core.ToolHost.invoke_traced`, and the answer is built by
:func:`~nr_llm_core.mcp.content.call_result` from its ``content`` alone. Each call is one run
in the audit store (when one is given): its tool step through the privacy filter, the MCP
client's name as its origin.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections.abc import Collection
from importlib import metadata
from typing import Any, Final, final

import anyio.to_thread
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from nr_llm_core._logging import log_exception
from nr_llm_core.encoding import EncodeError, json_copy
from nr_llm_core.failures import FailureKind, error_result
from nr_llm_core.hooks import ToolContext
from nr_llm_core.host import ToolHost
from nr_llm_core.mcp.content import call_result
from nr_llm_core.privacy import PrivacyLevel
from nr_llm_core.providers.base import TrustZone
from nr_llm_core.results import ToolResult
from nr_llm_core.run_result import RunRecorder
from nr_llm_core.trace import RunStep, ToolInvocation

__all__ = ["ORIGIN", "ToolServer", "client_label"]

logger = logging.getLogger("nr_llm.mcp")

#: The ``origin`` recorded with every run an MCP client started.
ORIGIN: Final = "mcp"
_UNKNOWN_CLIENT: Final = "unknown"
# A client's name is its own bytes: only a short run of plain characters is kept.
_CLIENT_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._@/+-]{0,63}")
_MAX_NAME_CHARS: Final = 80


def client_label(name: object) -> str:
    """The MCP client's name as a run records it: plain characters, at most 64, else
    ``unknown`` (it is what the client says, not something the host checked)."""
    if type(name) is str and _CLIENT_NAME.fullmatch(name):
        return name
    return _UNKNOWN_CLIENT


def _version() -> str:
    try:
        return metadata.version("nr-llm")
    except metadata.PackageNotFoundError:  # running from a tree that was never installed
        return "0"


@final
class ToolServer:
    """The MCP server of ``host``'s tools for a client in ``trust_zone``.

    ``allowed`` narrows the tools (``None``: every enabled tool); ``approval_tools`` lists the
    tools that require approval too (the client's own confirmation is then the only one);
    ``recorder`` (an audit store) gets one run per call at ``privacy`` (the stricter of it and
    the store's own level applies); ``timeout`` is each call's limit (``None``: the host's).
    """

    def __init__(
        self,
        host: ToolHost,
        *,
        trust_zone: TrustZone = TrustZone.EXTERNAL,
        allowed: Collection[str] | None = None,
        approval_tools: bool = False,
        recorder: RunRecorder | None = None,
        privacy: PrivacyLevel | None = None,
        timeout: float | None = None,
        transport: str = "stdio",
    ) -> None:
        self.host = host
        self.trust_zone = TrustZone(trust_zone)
        self.allowed = None if allowed is None else frozenset(allowed)
        self.approval_tools = approval_tools
        self.recorder = recorder
        self.privacy = privacy
        self.timeout = timeout
        self.transport = transport
        self.server: Server[Any] = Server(
            "nr-llm",
            version=_version(),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        # The SDK's OpenTelemetry middleware would open a span per message, with the tool's
        # name and arguments: what leaves the process is built from content or from a
        # privacy-filtered record, so it is dropped.
        self.server.middleware.clear()

    # -- what a client sees ---------------------------------------------------------------

    def served(self) -> list[str]:
        """The tools this client may list and call, sorted."""
        ceiling = self.trust_zone.ceiling.rank
        names = []
        for name in self.host.permitted(self.allowed):
            spec = self.host.spec(name)
            if spec.effective_data_class.rank > ceiling:
                continue
            if spec.requires_approval and not self.approval_tools:
                continue
            names.append(name)
        return names

    def tools(self) -> list[types.Tool]:
        """The ``tools/list`` entries: nr-llm's names and descriptions, ``inputSchema`` exactly
        the tool's ``ToolSpec.parameters``."""
        listed = []
        for name in self.served():
            spec = self.host.spec(name)
            listed.append(
                types.Tool(
                    name=spec.name,
                    description=spec.description,
                    input_schema=dict(spec.parameters),
                )
            )
        return listed

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools())

    # -- calls ----------------------------------------------------------------------------

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        origin = _origin(ctx, self.transport)
        arguments: Any = {} if params.arguments is None else params.arguments
        # A worker thread: a slow tool must not stop this connection's pings and other calls.
        result = await anyio.to_thread.run_sync(self.call, params.name, arguments, origin)
        if result is None:
            raise MCPError(code=types.INVALID_PARAMS, message=_unknown(params.name))
        return call_result(result)

    def call(self, name: str, arguments: Any, origin: dict[str, str]) -> ToolResult | None:
        """Run one call through the seam and record it; ``None`` for a tool this client does
        not see (the caller answers with a protocol error)."""
        started = time.perf_counter()
        run_id = self._begin(origin)
        served = name in self.served()
        if served:
            try:
                given = json_copy(arguments)  # the tool's own copy; the record keeps the call's
            except EncodeError:
                given = None  # not plain JSON: the seam answers invalid arguments
            result, failure = self.host.invoke_traced(
                name,
                given,
                allowed=(name,),
                context=ToolContext(run_id=run_id, call_id=None, round=1),
                timeout=self.timeout,
            )
        else:
            result, failure = error_result(FailureKind.UNKNOWN_TOOL, _display(name))
        if run_id is not None:
            invocation = ToolInvocation(
                name=name, arguments=arguments, result=result, call_id=None, failure=failure
            )
            elapsed = (time.perf_counter() - started) * 1000
            self._record(run_id, RunStep.tool(round=1, duration_ms=elapsed, invocation=invocation))
        return result if served else None

    def _begin(self, origin: dict[str, str]) -> str | None:
        if self.recorder is None:
            return None
        meta: dict[str, Any] = {**origin, "trust_zone": self.trust_zone.value}
        if self.privacy is not None:
            meta["privacy"] = self.privacy.value
        try:
            return self.recorder.begin(None, meta=meta)
        except Exception as exc:
            log_exception(logger, "the audit store could not open a run; unrecorded", exc=exc)
            return None

    def _record(self, run_id: str, step: RunStep) -> None:
        assert self.recorder is not None
        self.recorder.record_step(run_id, step)  # never raises
        try:
            self.recorder.settle(
                run_id,
                "completed",
                termination_reason="completed",
                iterations=0,
                truncated=False,
                usage={"input_tokens": 0, "output_tokens": 0},
            )
        except Exception as exc:
            log_exception(logger, "the audit store could not settle run %s", run_id, exc=exc)


def _display(name: object) -> str:
    text = name if type(name) is str else "?"
    return text if len(text) <= _MAX_NAME_CHARS else text[: _MAX_NAME_CHARS - 1] + "…"


def _unknown(name: object) -> str:
    """The protocol error's message: the seam's wording for an unknown tool."""
    return error_result(FailureKind.UNKNOWN_TOOL, _display(name))[0].content


def _origin(ctx: ServerRequestContext[Any], transport: str) -> dict[str, str]:
    """What a run records of who called: the origin, the client's name, the transport and,
    over HTTP, a digest of the session id (never the id, which lets its holder use the
    session)."""
    params = ctx.session.client_params
    name = None if params is None else params.client_info.name
    origin = {"origin": ORIGIN, "mcp_client": client_label(name), "mcp_transport": transport}
    request = ctx.request
    headers = getattr(request, "headers", None)
    session = headers.get("mcp-session-id") if headers is not None else None
    if type(session) is str and session:
        digest = hashlib.sha256(session.encode("utf-8", "replace")).hexdigest()[:16]
        origin["mcp_session"] = digest
    return origin
