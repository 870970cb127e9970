"""The stdio transport to an imported MCP server: its own process group, bounded lines, a hard kill.

The SDK's ``stdio_client`` would keep reading a line that never ends into memory, and stops a
server with a grace period of seconds; an imported server is untrusted. Here a line longer
than ``max_line_bytes`` ends the connection (the server is killed: its stream can no longer be
trusted), a line that is not JSON-RPC is handed to the session as an error, and leaving the
context kills the server's whole process group at once. The server's stderr goes where the
isolation policy sends a worker's (discarded by default: it is tool bytes).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Final

import anyio
import anyio.abc
from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage
from mcp.types import jsonrpc_message_adapter

__all__ = ["DEFAULT_MAX_LINE_BYTES", "StdioProcess", "kill_group"]

logger = logging.getLogger("nr_llm.mcp")

#: The longest line (one JSON-RPC message) read from a server.
DEFAULT_MAX_LINE_BYTES: Final = 8 * 1024 * 1024


def kill_group(pid: int) -> None:
    """SIGKILL the process group ``pid`` leads (the server and whatever it started in it)."""
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)


class StdioProcess:
    """``argv`` as an MCP server over its stdin and stdout, entered with ``async with``.

    :attr:`pid` is set once it runs (the process group to kill from any thread).
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        inherit_stderr: bool = False,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> None:
        self.argv = list(argv)
        self.env = dict(env)
        self.inherit_stderr = inherit_stderr
        self.max_line_bytes = max_line_bytes
        self.pid: int | None = None

    @contextlib.asynccontextmanager
    async def _streams(self) -> AsyncIterator[TransportStreams]:
        process = await anyio.open_process(
            self.argv,
            env=self.env,
            stderr=None if self.inherit_stderr else subprocess.DEVNULL,
            start_new_session=True,  # its own process group: one kill reaches all of it
        )
        self.pid = process.pid
        to_session, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_stream, from_session = anyio.create_memory_object_stream[SessionMessage](0)
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._read, process, to_session)
                group.start_soon(self._write, process, from_session)
                try:
                    yield read_stream, write_stream
                finally:
                    group.cancel_scope.cancel()
        finally:
            kill_group(process.pid)
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await process.aclose()
            for stream in (read_stream, write_stream, to_session, from_session):
                stream.close()

    def __call__(self) -> contextlib.AbstractAsyncContextManager[TransportStreams]:
        """A fresh connection (one process) each time it is entered."""
        return self._streams()

    async def _read(
        self,
        process: anyio.abc.Process,
        to_session: anyio.abc.ObjectSendStream[SessionMessage | Exception],
    ) -> None:
        assert process.stdout is not None
        buffer = bytearray()
        async with to_session:
            try:
                async for chunk in process.stdout:
                    buffer += chunk
                    while (end := buffer.find(b"\n")) >= 0:
                        line = bytes(buffer[:end])
                        del buffer[: end + 1]
                        if line.strip():
                            await to_session.send(_parse(line))
                    if len(buffer) > self.max_line_bytes:
                        logger.error(
                            "MCP server sent a line over %d bytes; it is stopped",
                            self.max_line_bytes,
                        )
                        kill_group(process.pid)
                        return
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                return

    async def _write(
        self,
        process: anyio.abc.Process,
        from_session: anyio.abc.ObjectReceiveStream[SessionMessage],
    ) -> None:
        assert process.stdin is not None
        async with from_session:
            try:
                async for message in from_session:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode("utf-8") + b"\n")
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                return


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        return exc
