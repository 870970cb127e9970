"""Who runs a run: the process recorded with it, and whether that process is provably gone.

A run is ``running`` while a process drives it. A process killed outright (SIGKILL, an OOM
kill, a power cut) never settles its run: the row says ``running`` forever. The store records
the runner when a run begins or is claimed (:func:`this_runner`: host name, pid and the
process's start time), so that an operator can end such a run, and only such a run
(:func:`runner_state`, ADR 0042).

A pid alone proves nothing: the system reuses pids, and a pid names a process only in its
own pid namespace (a container's pid 1 is not the host's). On Linux the start is recorded as
``<boot id>:<pid namespace>:<start ticks>`` (the ticks are field 22 of ``/proc/<pid>/stat``):
a reused pid has other ticks, a reboot another boot id, and a runner in another pid namespace
(a container with the host's name, ``unshare -p``) cannot be looked up from here at all, so
nothing is said of it. Whatever cannot be read proves nothing either: a ``/proc`` that hides
other users' processes (``hidepid``) is asked with signal 0, and a process whose first thread
has ended while others run (its ``stat`` says zombie) is alive while any thread is. Without
``/proc`` the start is :data:`UNKNOWN_START`: a dead pid still proves the runner gone, a live
one proves nothing.
"""

from __future__ import annotations

import enum
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = [
    "UNKNOWN_START",
    "Runner",
    "RunnerState",
    "process_start",
    "refusal",
    "runner_state",
    "this_runner",
]

#: The start time recorded where the system does not say when a process started.
UNKNOWN_START: Final = "unknown"
_PROC: Final = Path("/proc")
_MAX_HOST: Final = 255


@dataclass(frozen=True, slots=True)
class Runner:
    """The process recorded as driving a run: ``host`` (``socket.gethostname()``), ``pid``,
    and ``started`` (``<boot id>:<start ticks>`` on Linux, else :data:`UNKNOWN_START`)."""

    host: str
    pid: int
    started: str

    def __str__(self) -> str:
        return f"pid {self.pid} on {self.host}"


class RunnerState(enum.StrEnum):
    """What can be said of a run's recorded runner from this process.

    ``gone``: same host, and the pid is dead or now another process (its start time differs),
    or the host has booted since: provably nobody drives the run. ``alive``: the runner still
    runs. ``other_host``: it ran on another host, and ``other_namespace`` in another pid
    namespace of this one, where this process cannot look. ``unknown``: no runner is recorded,
    or what would prove it gone cannot be read here."""

    GONE = "gone"
    ALIVE = "alive"
    OTHER_HOST = "other_host"
    OTHER_NAMESPACE = "other_namespace"
    UNKNOWN = "unknown"


def _has_proc() -> bool:
    return (_PROC / "self" / "stat").exists()


def _identity() -> tuple[str, str] | None:
    """This process's boot id and pid namespace (the inode number of ``/proc/self/ns/pid``);
    ``None`` when either cannot be read."""
    try:
        boot = (_PROC / "sys/kernel/random/boot_id").read_text().strip()
        namespace = os.readlink(_PROC / "self/ns/pid")  # "pid:[4026531836]"
    except OSError:
        return None
    inode = namespace.rpartition("[")[2].rstrip("]")
    if not boot or ":" in boot or not inode.isdigit():
        return None
    return boot, inode


def process_start(pid: int) -> str | None:
    """When process ``pid`` (of this pid namespace) started, as :class:`Runner` records it;
    ``None`` when no such process lives; :data:`UNKNOWN_START` when this system does not say."""
    if type(pid) is not int or pid <= 0:  # 0 and negatives name process groups, not a process
        return None
    if not _has_proc():
        return _start_elsewhere(pid)
    ticks = _ticks(pid)
    if ticks is None:
        return None
    identity = _identity()
    if ticks == UNKNOWN_START or identity is None:
        return UNKNOWN_START
    return f"{identity[0]}:{identity[1]}:{ticks}"


def _ticks(pid: int) -> str | None:
    """Field 22 of ``/proc/<pid>/stat``; ``None`` when no such process lives."""
    try:
        raw = (_PROC / str(pid) / "stat").read_bytes()
    except FileNotFoundError:
        # No such process, or one that a hidepid /proc hides (another user's): signal 0 tells.
        return _start_elsewhere(pid)
    except OSError:
        return UNKNOWN_START
    # The command name (field 2) is in parentheses and may hold spaces and parentheses:
    # the fields after the last ')' are fixed. Field 3 is the state, field 22 the start.
    fields = raw[raw.rfind(b")") + 1 :].split()
    if len(fields) < 20:
        return UNKNOWN_START
    if fields[0] in (b"Z", b"X", b"x") and not _other_threads(pid):
        return None  # a zombie runs nothing
    return fields[19].decode("ascii", "replace")


def _other_threads(pid: int) -> bool:
    """Whether ``pid`` has a thread besides its first: a process whose first thread has ended
    (``pthread_exit``) shows as a zombie while the others still run. Unreadable: assumed."""
    try:
        return len(os.listdir(_PROC / str(pid) / "task")) > 1
    except FileNotFoundError:
        return False
    except OSError:
        return True


def _start_elsewhere(pid: int) -> str | None:
    """Whether ``pid`` lives (signal 0 sends nothing), its start unknown."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except OSError:  # PermissionError: it lives, as another user's process
        return UNKNOWN_START
    return UNKNOWN_START


_this: Runner | None = None


def this_runner() -> Runner:
    """This process, as recorded with a run it begins or claims (read once per process: a
    forked child is another process and reads its own)."""
    global _this
    pid = os.getpid()
    if _this is None or _this.pid != pid:
        _this = Runner(socket.gethostname()[:_MAX_HOST], pid, process_start(pid) or UNKNOWN_START)
    return _this


def refusal(run_id: str, runner: Runner | None, state: RunnerState) -> str:
    """Why run ``run_id``, which is ``running``, cannot be ended as abandoned, and what to do:
    the message of :class:`~nr_llm_core._audit_records.RunnerNotGoneError`."""
    shown = repr(run_id[:80])
    if runner is None:
        return (
            f"run {shown} has no recorded runner (it began before nr-llm recorded one), so "
            "nothing proves that it stopped; nothing was changed. Once you are sure no process "
            "still drives it, settle it through the API (docs/operating.md says how)"
        )
    if state is RunnerState.OTHER_HOST:
        return (
            f"run {shown} is run by {runner}, another host, where this process cannot tell "
            "whether it still runs; nothing was changed. Run the command on that host"
        )
    if state is RunnerState.OTHER_NAMESPACE:
        return (
            f"run {shown} is run by {runner} in another pid namespace of this host (a "
            "container, say), where this process cannot tell whether it still runs; nothing "
            "was changed. Run the command in that namespace"
        )
    if state is RunnerState.ALIVE:
        return (
            f"run {shown} is still running: its runner, {runner}, is alive; nothing was "
            "changed. Let it end, or stop that process and try again"
        )
    return (
        f"run {shown} is run by {runner}, and that pid is in use, but this system does not "
        "say when a process started, so nothing proves it is another process; nothing was "
        "changed. Stop that process, or try again once it has ended"
    )


def runner_state(runner: Runner | None) -> RunnerState:
    """What this process can prove of ``runner`` (``None``: none recorded); see
    :class:`RunnerState`."""
    if runner is None:
        return RunnerState.UNKNOWN
    if runner.host != socket.gethostname()[:_MAX_HOST]:
        return RunnerState.OTHER_HOST
    if not _has_proc():
        now = _start_elsewhere(runner.pid)
        return RunnerState.GONE if now is None else RunnerState.UNKNOWN
    recorded = runner.started.split(":")
    here = _identity()
    if len(recorded) != 3 or "" in recorded or here is None:
        return RunnerState.UNKNOWN  # recorded or read here without what would prove it gone
    boot, namespace, ticks = recorded
    if boot != here[0]:
        return RunnerState.GONE  # the host has booted since: every process of then has ended
    if namespace != here[1]:
        return RunnerState.OTHER_NAMESPACE
    now = _ticks(runner.pid)
    if now is None:
        return RunnerState.GONE
    if now == UNKNOWN_START:
        return RunnerState.UNKNOWN
    return RunnerState.ALIVE if now == ticks else RunnerState.GONE
