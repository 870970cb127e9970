"""Importing MCP servers' tools into a host: connections, tool specs, and calls with a deadline.

Each ``[mcp.servers.<name>]`` of the configuration becomes the tools ``<name>__<tool>`` of a
:class:`~nr_llm_core.ToolHost` (:func:`attach`), added with
:meth:`~nr_llm_core.ToolHost.add_external`: they are offered, checked, approved, bounded,
traced and audited like every other tool. The SDK is asynchronous and the host is not: one
event loop in a background thread holds every server's connection, and a call waits for its
answer until its deadline. A call past it kills the server (a stdio server's whole process
group) and is ``timed out.``; the next call reconnects. A server that dies, refuses, answers
with a protocol error, or sends what the SDK cannot read is a ``failed.`` call, never an
exception in the host. What a server declares is untrusted: tool names that are not tool
names, descriptions beyond a bound, and schemas too large, too deep or unreadable as JSON
Schema 2020-12 (no ``$ref`` is ever fetched) are refused at load, each one a load error.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import json
import logging
import os
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any, Final, final

import anyio
import httpx2
from anyio.from_thread import BlockingPortal
from mcp import Client
from mcp import types as mcp_types
from mcp.shared.exceptions import MCPError

from nr_llm_core.bounding import coerce_utf8
from nr_llm_core.config import DEFAULT_TOOL_TIMEOUT, Config, McpServerSettings
from nr_llm_core.errors import TimedOut, ToolLoadError
from nr_llm_core.hooks import ToolContext
from nr_llm_core.host import ToolHost
from nr_llm_core.isolation.lockdown import protect_host
from nr_llm_core.isolation.policy import IsolationPolicy, worker_environment
from nr_llm_core.mcp._stdio import StdioProcess, kill_group
from nr_llm_core.mcp.content import tool_result
from nr_llm_core.results import TOOL_NAME_RE, ToolSpec

if TYPE_CHECKING:
    from mcp.client._transport import TransportStreams

__all__ = [
    "MAX_DESCRIPTION_CHARS",
    "MAX_SCHEMA_BYTES",
    "MAX_SCHEMA_DEPTH",
    "McpCallFailed",
    "McpTimedOut",
    "ServerConnection",
    "attach",
    "source_name",
]

logger = logging.getLogger("nr_llm.mcp")

#: The separator between a server's name and its tool's: ``everything__echo``. A dot would be
#: refused by the providers' function-name rule (ADR 0023).
SEPARATOR: Final = "__"
#: The most characters of a server's tool description kept (it goes to providers).
MAX_DESCRIPTION_CHARS: Final = 2000
#: The largest imported input schema, as compact JSON.
MAX_SCHEMA_BYTES: Final = 64 * 1024
#: The deepest imported input schema (containers counted from the schema object).
MAX_SCHEMA_DEPTH: Final = 32
_MAX_TOOLS: Final = 500
_MAX_PAGES: Final = 20
#: The most bytes of one HTTP answer read from a server (an SSE stream counts as one answer).
MAX_HTTP_RESPONSE_BYTES: Final = 16 * 1024 * 1024
#: Seconds a server has to start and answer the handshake and the tool list.
CONNECT_TIMEOUT: Final = 60.0
_LAUNCHER: Final = "nr_llm_core.mcp._launch"


class McpCallFailed(Exception):
    """A call that did not produce an answer: the server died, refused, or sent nonsense
    (host words only; the seam answers ``failed.``)."""


class McpTimedOut(TimedOut):
    """The server did not answer in time and was stopped (the seam answers ``timed out.``)."""


def source_name(server: str) -> str:
    """The distribution a server's tools are listed under: ``mcp:<name>``."""
    return f"mcp:{server}"


@final
class _Loop:
    """One event loop in a daemon thread, for every connection of one host (a daemon: a host
    that was never closed must not keep the interpreter from exiting)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._portal: BlockingPortal | None = None
        self._thread: threading.Thread | None = None

    def portal(self) -> BlockingPortal:
        with self._lock:
            if self._portal is None:
                ready: concurrent.futures.Future[BlockingPortal] = concurrent.futures.Future()

                async def serve() -> None:
                    async with BlockingPortal() as portal:
                        ready.set_result(portal)
                        await portal.sleep_until_stopped()

                self._thread = threading.Thread(
                    target=anyio.run, args=(serve,), name="nr-llm-mcp", daemon=True
                )
                self._thread.start()
                self._portal = ready.result(CONNECT_TIMEOUT)
            return self._portal

    def close(self) -> None:
        with self._lock:
            portal, self._portal = self._portal, None
            thread, self._thread = self._thread, None
        if portal is not None:
            with contextlib.suppress(Exception):
                portal.call(portal.stop, True)
        if thread is not None:
            thread.join(10)


@final
class ServerConnection:
    """One imported server: its connection, opened on first use and after a failure, and the
    calls of its tools, each within its deadline."""

    def __init__(self, settings: McpServerSettings, *, timeout: float, loop: _Loop) -> None:
        self.settings = settings
        self.timeout = timeout
        self._loop = loop
        self._lock = threading.Lock()
        self._client: Client | None = None
        self._holder: concurrent.futures.Future[None] | None = None
        self._stop: anyio.Event | None = None
        self._process: StdioProcess | None = None
        #: How many times the connection was opened (a test reads it).
        self.connects = 0

    # -- the connection -------------------------------------------------------------------

    def _connected(self) -> Client:
        with self._lock:
            holder = self._holder
            if self._client is not None and holder is not None and not holder.done():
                return self._client
            self._drop("reconnecting")
            portal = self._loop.portal()
            ready: concurrent.futures.Future[Client] = concurrent.futures.Future()
            self._holder = portal.start_task_soon(self._hold, ready)
            try:
                client = ready.result(CONNECT_TIMEOUT)
            except concurrent.futures.TimeoutError:
                self._drop("did not start in time")
                raise McpTimedOut from None
            except Exception as exc:
                self._drop(None)
                logger.error(
                    "MCP server %r could not be reached (%s)",
                    self.settings.name,
                    type(exc).__name__,
                )
                raise McpCallFailed("the server could not be reached") from None
            self._client = client
            self.connects += 1
            return client

    async def _hold(self, ready: concurrent.futures.Future[Client]) -> None:
        """Open the connection, hand the client over, and keep it open until told to stop."""
        client = Client(
            self._transport(),
            client_info=mcp_types.Implementation(name="nr-llm", version="1"),
        )
        try:
            async with client:
                self._stop = anyio.Event()
                ready.set_result(client)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else McpCallFailed())
            if not isinstance(exc, Exception):
                raise
        finally:
            if self._client is client:  # a newer connection may have replaced this one
                self._client = None

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[TransportStreams]:
        if self.settings.command is not None:
            self._process = self._stdio()
            async with self._process() as streams:
                yield streams
            return
        async with _http_streams(self.settings) as streams:
            yield streams

    def _stdio(self) -> StdioProcess:
        settings = self.settings
        assert settings.command is not None
        command = list(settings.command)
        if settings.isolation:
            env = worker_environment(IsolationPolicy(env=dict(settings.env)))
            config = {"memory_bytes": settings.memory_mb * 1024 * 1024 or None}
            argv = [sys.executable, "-m", _LAUNCHER, json.dumps(config), "--", *command]
            protect_host()  # before the first server: from then on none can read this process
        else:
            env = {**os.environ, **settings.env}
            argv = command
        for name in settings.env_pass:  # the operator's explicit choice, secret-shaped or not
            if name in os.environ:
                env[name] = os.environ[name]
        return StdioProcess(argv, env=env)

    def _drop(self, why: str | None) -> None:
        """Close the connection (kill a stdio server's process group at once)."""
        process, self._process = self._process, None
        if process is not None and process.pid is not None:
            kill_group(process.pid)
        holder, self._holder = self._holder, None
        stop, self._stop = self._stop, None
        self._client = None
        if holder is not None and not holder.done():
            holder.cancel()
        elif stop is not None:
            with contextlib.suppress(Exception):
                self._loop.portal().call(stop.set)
        if why is not None and holder is not None:
            logger.warning("MCP server %r: connection closed (%s)", self.settings.name, why)

    def close(self) -> None:
        """Close the connection (the next call opens it again)."""
        with self._lock:
            self._drop(None)

    # -- requests -------------------------------------------------------------------------

    def _request(self, what: str, timeout: float, make: Any, *args: Any) -> Any:
        """Run ``make(client, *args)`` on the loop, waiting at most ``timeout`` seconds."""
        client = self._connected()
        future = self._loop.portal().start_task_soon(make, client, *args)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            with self._lock:
                self._drop(f"{what} took longer than {timeout:g} s")
            raise McpTimedOut from None
        except MCPError as exc:
            # The server's own error object (or the SDK's for a closed connection): its code
            # is a number; its message is the server's bytes. The connection is not kept: a
            # server that answers with an error where a result belongs may be going away.
            logger.error("MCP server %r refused a %s (code %s)", self.settings.name, what, exc.code)
            with self._lock:
                self._drop(None)
            raise McpCallFailed("the server refused the request") from None
        except Exception as exc:
            with self._lock:
                self._drop(f"{what} failed: {type(exc).__name__}")
            raise McpCallFailed("the connection to the server failed") from None

    def list_tools(self) -> list[mcp_types.Tool]:
        """Every tool the server lists (paged; bounded in pages and tools)."""

        async def page(client: Client, cursor: str | None) -> mcp_types.ListToolsResult:
            return await client.list_tools(cursor=cursor)

        found: list[mcp_types.Tool] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            result = self._request("tool listing", CONNECT_TIMEOUT, page, cursor)
            found.extend(result.tools)
            cursor = result.next_cursor
            if not cursor or len(found) >= _MAX_TOOLS:
                break
        return found[:_MAX_TOOLS]

    def call(
        self, tool: str, arguments: dict[str, Any], timeout: float
    ) -> mcp_types.CallToolResult:
        """The server's answer to one call of its tool ``tool``."""

        async def call(client: Client, name: str, args: dict[str, Any]) -> mcp_types.CallToolResult:
            return await client.call_tool(name, args)

        answer = self._request("call", timeout, call, tool, arguments)
        if type(answer) is not mcp_types.CallToolResult:
            raise McpCallFailed("the server sent something that is not a tool result")
        return answer


@final
class _ImportedTool:
    """The :class:`~nr_llm_core._registry.OutOfProcess` runner of one imported tool."""

    def __init__(self, connection: ServerConnection, name: str, remote_name: str) -> None:
        self.connection = connection
        self.name = name
        self.remote_name = remote_name

    @property
    def timeout(self) -> float:
        """The server's per-call limit."""
        return self.connection.timeout

    def call(
        self, arguments: dict[str, Any], context: ToolContext | None, timeout: float
    ) -> object:
        """The call's ``ToolResult`` (the seam bounds it)."""
        answer = self.connection.call(self.remote_name, arguments, timeout)
        return tool_result(answer, empty_error=f'Error: tool "{self.name}" failed.')


def _depth(schema: Any) -> int:
    """How deeply ``schema`` nests containers, iteratively (no recursion on server data)."""
    deepest, stack = 0, [(schema, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            deepest = max(deepest, depth)
            if depth > MAX_SCHEMA_DEPTH:
                return depth
            children = value.values() if isinstance(value, dict) else value
            stack.extend((child, depth + 1) for child in children)
    return deepest


def _spec(settings: McpServerSettings, tool: mcp_types.Tool) -> ToolSpec:
    """The nr-llm spec of one of the server's tools; :class:`ToolLoadError` when its name,
    description or schema cannot be one."""
    raw = tool.name if type(tool.name) is str else ""
    name = f"{settings.name}{SEPARATOR}{raw}"
    if TOOL_NAME_RE.fullmatch(name) is None:
        shown = coerce_utf8(raw)[:80]
        raise ToolLoadError(
            f"its tool {shown!r} has no name nr-llm can offer ({settings.name}{SEPARATOR}<tool> "
            "must be 1-64 letters, digits, '_' or '-')"
        )
    schema = tool.input_schema
    try:
        encoded = json.dumps(schema, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        raise ToolLoadError("its input schema is not plain JSON", entry_point=name) from None
    if len(encoded.encode("utf-8", "surrogatepass")) > MAX_SCHEMA_BYTES:
        raise ToolLoadError(f"its input schema is over {MAX_SCHEMA_BYTES} bytes", entry_point=name)
    if _depth(schema) > MAX_SCHEMA_DEPTH:
        raise ToolLoadError(
            f"its input schema nests deeper than {MAX_SCHEMA_DEPTH}", entry_point=name
        )
    description = coerce_utf8(tool.description or "")
    if len(description) > MAX_DESCRIPTION_CHARS:
        description = description[: MAX_DESCRIPTION_CHARS - 1] + "…"
    try:
        return ToolSpec(
            name,
            description,
            schema,
            group=f"mcp-{settings.name}",
            data_class=settings.data_class,
            requires_approval=settings.requires_approval,
        )
    except (TypeError, ValueError):
        raise ToolLoadError("its input schema is not an object schema", entry_point=name) from None


def _load(
    connection: ServerConnection,
) -> Iterator[tuple[ToolSpec, _ImportedTool] | ToolLoadError]:
    settings = connection.settings
    try:
        tools = connection.list_tools()
    except McpTimedOut:
        raise ToolLoadError("the MCP server did not list its tools in time") from None
    except McpCallFailed as exc:
        raise ToolLoadError(f"the MCP server could not list its tools: {exc}") from None
    for tool in tools:
        if settings.tools is not None and tool.name not in settings.tools:
            continue
        try:
            spec = _spec(settings, tool)
        except ToolLoadError as exc:
            yield exc
            continue
        yield spec, _ImportedTool(connection, spec.name, tool.name)


def attach(host: ToolHost, config: Config, *, strict: bool = False) -> list[ServerConnection]:
    """Add the tools of every MCP server ``config`` declares to ``host``; return the
    connections (closed by ``host.close()``)."""
    loop = _Loop()
    connections = [
        ServerConnection(
            settings,
            timeout=settings.timeout or config.tool_timeout or DEFAULT_TOOL_TIMEOUT,
            loop=loop,
        )
        for settings in config.mcp_servers
    ]

    def close() -> None:
        for connection in connections:
            connection.close()
        loop.close()

    for index, connection in enumerate(connections):
        host.add_external(
            source_name(connection.settings.name),
            functools.partial(_load, connection),
            close=close if index == 0 else None,  # one closer: every connection, then the loop
            strict=strict,
        )
    return connections


@contextlib.asynccontextmanager
async def _http_streams(settings: McpServerSettings) -> AsyncIterator[TransportStreams]:
    """Streamable HTTP with the providers' rules: certifi's roots plus a named CA bundle,
    only a named proxy (never the environment's), no redirects (a token must not follow
    one); the bearer token from the variable the configuration names."""
    from mcp.client.streamable_http import streamable_http_client

    from nr_llm_core.providers._settings import check_proxy_url, tls_context

    assert settings.url is not None
    tls = tls_context(settings.ca_bundle)
    proxy: Any = None
    if settings.proxy is not None:
        proxy = check_proxy_url(settings.proxy)
        if proxy.lower().startswith("https:"):
            proxy = httpx2.Proxy(proxy, ssl_context=tls)
    headers = {}
    if settings.token_env is not None:
        token = os.environ.get(settings.token_env, "")
        if token:
            headers["Authorization"] = f"Bearer {token}"
    # A transport given to the client replaces its verify= and proxy=: both are set on it.
    transport = _CappedTransport(
        httpx2.AsyncHTTPTransport(verify=tls, proxy=proxy, trust_env=False),
        MAX_HTTP_RESPONSE_BYTES,
    )
    async with (
        httpx2.AsyncClient(
            transport=transport,
            trust_env=False,
            follow_redirects=False,
            headers=headers,
            timeout=httpx2.Timeout(30.0, read=300.0),
        ) as http,
        streamable_http_client(settings.url, http_client=http) as streams,
    ):
        yield streams


class _CappedTransport(httpx2.AsyncBaseTransport):
    """An httpx2 transport whose responses end with an error past ``cap`` bytes: the SDK reads
    a JSON answer whole, and a server must not be able to fill the host's memory with one."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, cap: int) -> None:
        self._inner = inner
        self._cap = cap

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        response.stream = _CappedStream(response.stream, self._cap)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


class _CappedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: Any, cap: int) -> None:
        self._inner = inner
        self._cap = cap

    async def __aiter__(self) -> AsyncIterator[bytes]:
        total = 0
        async for chunk in self._inner:
            total += len(chunk)
            if total > self._cap:
                logger.error("an MCP server's HTTP answer passed %d bytes; it is cut", self._cap)
                raise httpx2.ReadError("the answer is larger than nr-llm reads")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()
