"""The wire between the host and an isolated worker: length-prefixed JSON frames on pipes.

A frame is a 4-byte big-endian length and that many bytes of compact UTF-8 JSON. The reading
side never trusts the other end: a length over the cap is refused before a byte of the body is
read, a read that does not finish by its deadline stops, and a body that does not parse (deep
nesting included: the C decoder raises ``RecursionError`` at the interpreter's recursion limit,
quickly) is a :class:`FrameError`. Writing has a deadline too, so that a reader that stopped
reading cannot hold the writer. After any error the stream is out of step and the worker is
discarded.
"""

from __future__ import annotations

import os
import select
import struct
import time
from typing import Any, Final

from nr_llm_core.encoding import EncodeError, decode_json, encode_json

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "PIPE_CLOSED",
    "FrameError",
    "FrameTimeout",
    "decode_frame",
    "encode_frame",
    "read_frame",
    "write_frame",
]

#: A bounded result is at most 50,000 bytes of content (up to six times that once JSON-escaped)
#: and 50,000 bytes of artifacts; 4 MiB leaves room for a large spec and refuses anything wild.
DEFAULT_MAX_FRAME_BYTES: Final = 4 * 1024 * 1024

#: The text of the :class:`FrameError` raised at end of file.
PIPE_CLOSED: Final = "the pipe was closed"

_HEADER: Final = struct.Struct(">I")
_CHUNK: Final = 1 << 16


class FrameError(Exception):
    """The other end sent something that is not a valid frame, or closed the pipe."""


class FrameTimeout(FrameError):
    """No whole frame arrived before the deadline."""


def encode_frame(message: Any) -> bytes:
    """The bytes of one frame carrying ``message`` (plain JSON values)."""
    body = encode_json(message)
    return _HEADER.pack(len(body)) + body


def write_frame(fd: int, message: Any, *, deadline: float | None = None) -> None:
    """Write one whole frame to ``fd``.

    ``deadline`` is a :func:`time.monotonic` instant (``None``: wait for ever). With one, the
    write waits for room in the pipe only until then and raises :class:`FrameTimeout` (the
    frame may be half written: the stream is out of step); give it a non-blocking ``fd``, so
    that a reader that stopped reading cannot hold the writer inside ``os.write``.
    """
    try:
        data = memoryview(encode_frame(message))
    except EncodeError as exc:
        raise FrameError("message is not encodable") from exc
    while data:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise FrameTimeout("the frame was not taken before the deadline")
            _, ready, _ = select.select([], [fd], [], left)
            if not ready:
                raise FrameTimeout("the frame was not taken before the deadline")
        try:
            written = os.write(fd, data)
        except BlockingIOError:  # no room after all (or a non-blocking fd and no deadline)
            if deadline is None:
                select.select([], [fd], [], None)
            continue
        data = data[written:]


def read_frame(fd: int, *, deadline: float | None, max_bytes: int) -> Any:
    """Read and decode one frame from ``fd``.

    ``deadline`` is a :func:`time.monotonic` instant (``None``: wait for ever). Raises
    :class:`FrameTimeout` when it passes, :class:`FrameError` on end of file, a length over
    ``max_bytes``, or a body that is not JSON.
    """
    header = _read_exactly(fd, _HEADER.size, deadline)
    (length,) = _HEADER.unpack(header)
    if length > max_bytes:
        raise FrameError(f"frame of {length} bytes exceeds the {max_bytes}-byte cap")
    return decode_frame(_read_exactly(fd, length, deadline))


def decode_frame(body: bytes) -> Any:
    """Decode a frame's body, turning every way it can be bad into :class:`FrameError`."""
    try:
        return decode_json(body)
    except RecursionError:
        raise FrameError("frame nests too deeply") from None
    except (ValueError, UnicodeDecodeError):
        raise FrameError("frame is not valid JSON") from None


def _read_exactly(fd: int, count: int, deadline: float | None) -> bytes:
    parts: list[bytes] = []
    missing = count
    while missing:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise FrameTimeout("no frame before the deadline")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                raise FrameTimeout("no frame before the deadline")
        chunk = os.read(fd, min(missing, _CHUNK))
        if not chunk:
            raise FrameError(PIPE_CLOSED)
        parts.append(chunk)
        missing -= len(chunk)
    return b"".join(parts)
