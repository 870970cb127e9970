"""A hostile or broken isolated tool gets an error result; the host survives, and the next
call runs on a fresh worker.

Each test asserts why the worker stopped (the host logs the exit status and the reason), not
only that the call failed: a worker can fail in many ways, and a test that accepts any of them
passes for the wrong reason.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nr_llm_core import ToolHost, ToolResult

from .conftest import isolated_host


@pytest.fixture
def hostile(on_path: Path) -> Iterator[ToolHost]:
    with isolated_host(timeout=20.0, memory_bytes=768 * 1024 * 1024, cpu_seconds=1) as host:
        yield host


def _stopped(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "nr_llm.isolation" and r.getMessage().startswith("worker of ")
    ]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _gone(pid: int) -> bool:
    """No process ``pid`` runs: none at all, or only its zombie waiting for init to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return not _alive(pid)  # no /proc (not Linux), or it went between the two looks
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def _wait_until_gone(pid: int, guard: float = 30.0) -> bool:
    """Poll until ``pid`` is gone; ``guard`` only keeps a broken kill from hanging the test."""
    end = time.monotonic() + guard
    while not _gone(pid):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def _calm_pid(host: ToolHost) -> int:
    result = host.invoke("calm", {})
    assert not result.is_error, result.content
    return int(result.content)


def test_a_tool_printing_a_gigabyte_to_stdout_does_not_corrupt_the_protocol(
    hostile: ToolHost,
) -> None:
    result = hostile.invoke("loud", {})
    assert result.content == "still speaking the protocol"
    assert not result.is_error


@pytest.mark.parametrize(
    ("depth", "reason"),
    [
        (10**7, "frame of 20000000 bytes exceeds the 4194304-byte cap"),  # before parsing
        (10**6, "frame nests too deeply"),  # under the cap: the decoder's recursion limit
    ],
)
def test_a_deeply_nested_reply_is_an_error_not_a_crash(
    hostile: ToolHost, caplog: pytest.LogCaptureFixture, depth: int, reason: str
) -> None:
    before = _calm_pid(hostile)
    with caplog.at_level(logging.ERROR, logger="nr_llm.isolation"):
        assert hostile.invoke("deep", {"depth": depth}).content == 'Error: tool "deep" failed.'
    assert [line.split(": ", 1)[1] for line in _stopped(caplog)] == [reason]
    assert not _alive(before)
    assert _calm_pid(hostile) != before


def test_garbage_on_the_reply_stream_is_an_error(
    hostile: ToolHost, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="nr_llm.isolation"):
        assert hostile.invoke("garbage", {}).content == 'Error: tool "garbage" failed.'
    # b"xxxx" read as a length
    assert _stopped(caplog)[0].endswith(": frame of 2021161080 bytes exceeds the 4194304-byte cap")
    _calm_pid(hostile)


def test_a_tool_that_never_returns_is_killed_at_the_timeout(
    hostile: ToolHost, caplog: pytest.LogCaptureFixture
) -> None:
    before = _calm_pid(hostile)
    with caplog.at_level(logging.ERROR, logger="nr_llm.isolation"):
        result = hostile.invoke("hang", {}, timeout=1.0)
    assert result.content == 'Error: tool "hang" timed out.'
    assert result.is_error
    assert _stopped(caplog) == [
        "worker of 'iso-hostile' stopped (signal SIGKILL): did not answer within 1.0 s"
    ]
    assert not _alive(before)  # killed, not abandoned
    after = _calm_pid(hostile)
    assert after != before


def test_the_policy_timeout_applies_without_a_call_timeout(on_path: Path) -> None:
    with isolated_host(timeout=1.0) as host:
        assert host.invoke("hang", {}).content == 'Error: tool "hang" timed out.'


def test_a_timeout_kills_the_grandchildren_in_the_worker_process_group(
    hostile: ToolHost, tmp_path: Path
) -> None:
    """The tool starts a child that ignores SIGTERM, then hangs. After the timeout nothing of
    it runs: the host kills the worker's whole process group, not only the worker (killing
    only the worker leaves this grandchild running, and this test fails)."""
    pid_file = tmp_path / "grandchild.pid"
    _calm_pid(hostile)  # the worker is up: the timeout is spent in the tool
    result = hostile.invoke("spawner", {"pid_file": str(pid_file)}, timeout=3.0)
    assert result.content == 'Error: tool "spawner" timed out.'
    grandchild = int(pid_file.read_text())
    gone = _wait_until_gone(grandchild)
    if not gone:
        os.kill(grandchild, signal.SIGKILL)
    assert gone


def test_a_grandchild_that_leaves_the_process_group_survives_the_kill(
    hostile: ToolHost, tmp_path: Path
) -> None:
    """Pins a documented limit (SECURITY.md, "What is not defended"; ADR 0012): a process the
    tool starts in a session of its own is out of the worker's process group and outlives the
    timeout's kill. When this test fails, the limit is gone: update the documentation."""
    pid_file = tmp_path / "escaped.pid"
    _calm_pid(hostile)
    result = hostile.invoke(
        "spawner", {"pid_file": str(pid_file), "leave_group": True}, timeout=3.0
    )
    assert result.content == 'Error: tool "spawner" timed out.'
    escaped = int(pid_file.read_text())
    try:
        assert not _gone(escaped)
    finally:
        os.kill(escaped, signal.SIGKILL)


def test_a_worker_that_stops_reading_cannot_hold_the_host(
    hostile: ToolHost, caplog: pytest.LogCaptureFixture
) -> None:
    """The tool makes its worker stop reading requests; the next call's arguments (1 MiB, far
    more than a pipe holds) cannot all be written. The write stops at the call's deadline: the
    call is "timed out.", the worker is killed, and a call waiting for the worker's lock in
    another thread then runs on a fresh worker."""
    deaf = int(hostile.invoke("deaf", {}).content)
    worker = hostile._table["calm"].remote.worker  # type: ignore[union-attr]
    results: dict[str, ToolResult] = {}

    def call(key: str, arguments: dict[str, str], timeout: float) -> None:
        results[key] = hostile.invoke("calm", arguments, timeout=timeout)

    with caplog.at_level(logging.ERROR, logger="nr_llm.isolation"):
        big = threading.Thread(target=call, args=("big", {"blob": "x" * (1 << 20)}, 2.0))
        big.start()
        guard = time.monotonic() + 60
        while not worker._lock.locked() and big.is_alive() and time.monotonic() < guard:
            time.sleep(0.01)
        waiting = threading.Thread(target=call, args=("waiting", {}, 60.0))
        waiting.start()
        for thread in (big, waiting):
            thread.join(60)  # a hang guard only
        hung = big.is_alive() or waiting.is_alive()
        if hung:  # unblock the threads before failing, so the host can be closed
            os.kill(deaf, signal.SIGKILL)
            big.join(60)
            waiting.join(60)
    assert not hung, "a worker that stopped reading held the host"
    assert results["big"].content == 'Error: tool "calm" timed out.'
    assert _stopped(caplog) == [
        "worker of 'iso-hostile' stopped (signal SIGKILL): did not take its request within 2.0 s"
    ]
    assert not _alive(deaf)
    assert not results["waiting"].is_error
    assert int(results["waiting"].content) != deaf


def test_os_exit_mid_call(hostile: ToolHost, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="nr_llm.isolation"):
        assert hostile.invoke("exits", {}).content == 'Error: tool "exits" failed.'
    assert _stopped(caplog) == [
        "worker of 'iso-hostile' stopped (exit code 3): the pipe was closed"
    ]
    _calm_pid(hostile)


def test_memory_exhaustion_hits_the_rlimit(
    hostile: ToolHost, caplog: pytest.LogCaptureFixture
) -> None:
    """The worker's RLIMIT_AS turns the hog's allocation into a ``MemoryError`` inside the
    worker: the call fails, the host logs that it was memory, and the same worker answers the
    next call (a kill, by the OOM killer or a signal, would have ended it)."""
    before = _calm_pid(hostile)
    with caplog.at_level(logging.ERROR, logger="nr_llm.isolation"):
        assert hostile.invoke("hog", {}).content == 'Error: tool "hog" failed.'
    assert (
        "tool 'hog' ran out of memory in its worker (MemoryError; RLIMIT_AS 805306368 bytes)"
        in [r.getMessage() for r in caplog.records]
    )
    assert _stopped(caplog) == []
    assert _calm_pid(hostile) == before


def test_a_segfault(hostile: ToolHost, caplog: pytest.LogCaptureFixture) -> None:
    before = _calm_pid(hostile)
    with caplog.at_level(logging.ERROR, logger="nr_llm.isolation"):
        assert hostile.invoke("segv", {}).content == 'Error: tool "segv" failed.'
    assert _stopped(caplog) == [
        "worker of 'iso-hostile' stopped (signal SIGSEGV): the pipe was closed"
    ]
    assert _calm_pid(hostile) != before


def test_a_cpu_spin_hits_the_cpu_rlimit_before_the_timeout(
    hostile: ToolHost, caplog: pytest.LogCaptureFixture
) -> None:
    """RLIMIT_CPU (1 s here) ends the worker with SIGXCPU long before the 20 s timeout would
    kill it with SIGKILL."""
    with caplog.at_level(logging.ERROR, logger="nr_llm.isolation"):
        assert hostile.invoke("spin", {}).content == 'Error: tool "spin" failed.'
    assert _stopped(caplog) == [
        "worker of 'iso-hostile' stopped (signal SIGXCPU): the pipe was closed"
    ]
    _calm_pid(hostile)


def test_a_reply_over_the_frame_cap_is_refused(
    on_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with isolated_host(max_frame_bytes=4096) as host:
        with caplog.at_level(logging.ERROR, logger="nr_llm.isolation"):
            assert host.invoke("iso_huge", {}).content == 'Error: tool "iso_huge" failed.'
        (line,) = _stopped(caplog)
        assert line.startswith("worker of 'iso-good' stopped (signal SIGKILL): frame of ")
        assert line.endswith(" bytes exceeds the 4096-byte cap")
        assert host.invoke("iso_echo", {"text": "small"}).content == "echo: small"


def test_a_worker_cannot_read_another_distribution_s_worker(hostile: ToolHost) -> None:
    """Workers make themselves non-dumpable and hold no capability: the worker of one
    isolated distribution cannot read the environment or the memory of another's."""
    other = int(hostile.invoke("iso_pid", {}).content)  # the worker of iso-good
    assert hostile.invoke("peek", {"pid": other}).content == "EACCES,EACCES"
    assert int(hostile.invoke("iso_pid", {}).content) == other  # it was alive all along


def test_every_worker_is_gone_after_close(hostile: ToolHost) -> None:
    pid = _calm_pid(hostile)
    hostile.close()
    assert not _alive(pid)
