"""A hostile or broken isolated tool gets an error result; the host survives, and the next
call runs on a fresh worker."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nr_llm_core import ToolHost

from .conftest import isolated_host


@pytest.fixture
def hostile(on_path: Path) -> Iterator[ToolHost]:
    with isolated_host(timeout=20.0, memory_bytes=768 * 1024 * 1024, cpu_seconds=1) as host:
        yield host


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _calm_pid(host: ToolHost) -> int:
    result = host.invoke("calm", {})
    assert not result.is_error, result.content
    return int(result.content)


def test_a_tool_printing_a_gigabyte_to_stdout_does_not_corrupt_the_protocol(
    hostile: ToolHost,
) -> None:
    started = time.monotonic()
    result = hostile.invoke("loud", {})
    assert result.content == "still speaking the protocol"
    assert not result.is_error
    assert time.monotonic() - started < 20


@pytest.mark.parametrize("depth", [10**7, 10**6])
def test_a_deeply_nested_reply_is_an_error_not_a_crash(hostile: ToolHost, depth: int) -> None:
    # 10**7: refused by the frame cap before parsing; 10**6: under the cap, refused by the
    # decoder's recursion limit.
    before = _calm_pid(hostile)
    assert hostile.invoke("deep", {"depth": depth}).content == 'Error: tool "deep" failed.'
    assert not _alive(before)
    assert _calm_pid(hostile) != before


def test_garbage_on_the_reply_stream_is_an_error(hostile: ToolHost) -> None:
    assert hostile.invoke("garbage", {}).content == 'Error: tool "garbage" failed.'
    _calm_pid(hostile)


def test_a_tool_that_never_returns_is_killed_at_the_timeout(hostile: ToolHost) -> None:
    before = _calm_pid(hostile)
    started = time.monotonic()
    result = hostile.invoke("hang", {}, timeout=1.0)
    assert result.content == 'Error: tool "hang" timed out.'
    assert result.is_error
    assert time.monotonic() - started < 5
    assert not _alive(before)  # killed, not abandoned
    after = _calm_pid(hostile)
    assert after != before


def test_the_policy_timeout_applies_without_a_call_timeout(on_path: Path) -> None:
    with isolated_host(timeout=1.0) as host:
        assert host.invoke("hang", {}).content == 'Error: tool "hang" timed out.'


def test_os_exit_mid_call(hostile: ToolHost) -> None:
    assert hostile.invoke("exits", {}).content == 'Error: tool "exits" failed.'
    _calm_pid(hostile)


def test_memory_exhaustion_hits_the_rlimit(hostile: ToolHost) -> None:
    started = time.monotonic()
    assert hostile.invoke("hog", {}).content == 'Error: tool "hog" failed.'
    assert time.monotonic() - started < 15
    _calm_pid(hostile)


def test_a_segfault(hostile: ToolHost) -> None:
    before = _calm_pid(hostile)
    assert hostile.invoke("segv", {}).content == 'Error: tool "segv" failed.'
    assert _calm_pid(hostile) != before


def test_a_cpu_spin_hits_the_cpu_rlimit_before_the_timeout(hostile: ToolHost) -> None:
    started = time.monotonic()
    assert hostile.invoke("spin", {}).content == 'Error: tool "spin" failed.'
    assert time.monotonic() - started < 19  # the 20 s timeout did not have to act
    _calm_pid(hostile)


def test_a_reply_over_the_frame_cap_is_refused(on_path: Path) -> None:
    with isolated_host(max_frame_bytes=4096) as host:
        assert host.invoke("iso_huge", {}).content == 'Error: tool "iso_huge" failed.'
        assert host.invoke("iso_echo", {"text": "small"}).content == "echo: small"


def test_every_worker_is_gone_after_close(hostile: ToolHost) -> None:
    pid = _calm_pid(hostile)
    hostile.close()
    assert not _alive(pid)
