"""The frame reader refuses before it reads or parses: size cap, deadline, depth, end of file."""

from __future__ import annotations

import contextlib
import os
import struct
import threading
import time
from collections.abc import Iterator

import pytest

from nr_llm_core.isolation.frames import (
    FrameError,
    FrameTimeout,
    decode_frame,
    encode_frame,
    read_frame,
    write_frame,
)


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    r, w = os.pipe()
    yield r, w
    for fd in (r, w):
        with contextlib.suppress(OSError):
            os.close(fd)


def test_round_trip(pipe: tuple[int, int]) -> None:
    r, w = pipe
    write_frame(w, {"a": [1, "é", None]})
    assert read_frame(r, deadline=None, max_bytes=100) == {"a": [1, "é", None]}


def test_a_length_over_the_cap_is_refused_before_the_body_is_read(pipe: tuple[int, int]) -> None:
    r, w = pipe
    os.write(w, struct.pack(">I", 2**31))  # no body at all: it is never waited for
    with pytest.raises(FrameError, match="exceeds"):
        read_frame(r, deadline=time.monotonic() + 5, max_bytes=1024)


def test_the_deadline(pipe: tuple[int, int]) -> None:
    r, w = pipe
    os.write(w, encode_frame([1, 2, 3])[:5])  # a frame that never finishes
    started = time.monotonic()
    with pytest.raises(FrameTimeout):
        read_frame(r, deadline=time.monotonic() + 0.2, max_bytes=1024)
    assert time.monotonic() - started < 2


def test_a_write_stops_at_its_deadline_when_no_one_reads(pipe: tuple[int, int]) -> None:
    """1 MiB into a pipe no one reads: the pipe fills, and the write gives up at the deadline
    instead of blocking in ``os.write`` for ever."""
    _, w = pipe
    os.set_blocking(w, False)
    with pytest.raises(FrameTimeout, match="not taken"):
        write_frame(w, "x" * (1 << 20), deadline=time.monotonic() + 0.2)


def test_a_write_with_a_deadline_delivers_a_frame_larger_than_the_pipe(
    pipe: tuple[int, int],
) -> None:
    """Partial writes on a non-blocking descriptor add up to the whole frame."""
    r, w = pipe
    os.set_blocking(w, False)
    message = "é" * (1 << 20)
    got: list[object] = []
    reader = threading.Thread(
        target=lambda: got.append(read_frame(r, deadline=None, max_bytes=1 << 23))
    )
    reader.start()
    write_frame(w, message, deadline=time.monotonic() + 60)
    reader.join(60)
    assert got == [message]


@pytest.mark.parametrize(
    "body",
    [b"[" * 1_000_000 + b"]" * 1_000_000, b'{"a":' * 10_000, b"{", b"NaN", b"[Infinity]", b"\xff"],
)
def test_bodies_that_are_not_plain_json(body: bytes) -> None:
    with pytest.raises(FrameError):
        decode_frame(body)


def test_end_of_file(pipe: tuple[int, int]) -> None:
    r, w = pipe
    os.write(w, b"\x00\x00")
    os.close(w)
    with pytest.raises(FrameError, match="closed"):
        read_frame(r, deadline=None, max_bytes=1024)
