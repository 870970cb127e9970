"""Who runs a run: the process recorded with it, and whether that process is provably gone.

A run is ``running`` while a process drives it. A process killed outright (SIGKILL, an OOM
kill, a power cut) never settles its run: the row says ``running`` forever. The store records
the runner when a run begins or is claimed (:func:`this_runner`: host name, pid and the
process's start time), so that an operator can end such a run, and only such a run
(:func:`runner_state`, ADR 0042).

A pid alone proves nothing: the system reuses pids. The start time tells a reused pid from
the runner. On Linux it is field 22 of ``/proc/<pid>/stat`` (clock ticks since boot) together
with the boot id, so that neither a reused pid nor a reboot is mistaken for the runner.
Elsewhere it is :data:`UNKNOWN_START`: a dead pid still proves the runner gone, a live one
proves nothing.
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

    ``gone``: same host, and the pid is dead or now another process (its start time differs):
    provably nobody drives the run. ``alive``: the runner still runs. ``other_host``: it ran
    on another host, where this process cannot look. ``unknown``: no runner is recorded, or
    the pid is in use and its start time cannot be read here."""

    GONE = "gone"
    ALIVE = "alive"
    OTHER_HOST = "other_host"
    UNKNOWN = "unknown"


def _boot_id() -> str:
    try:
        return (_PROC / "sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def process_start(pid: int) -> str | None:
    """When process ``pid`` started, as :class:`Runner` records it; ``None`` when no such
    process lives (a zombie is dead: it runs nothing); :data:`UNKNOWN_START` when this system
    does not say."""
    if type(pid) is not int or pid <= 0:  # 0 and negatives name process groups, not a process
        return None
    try:
        raw = (_PROC / str(pid) / "stat").read_bytes()
    except FileNotFoundError:
        if (_PROC / "self" / "stat").exists():  # Linux: no such process
            return None
        return _start_elsewhere(pid)
    except OSError:
        return UNKNOWN_START
    # The command name (field 2) is in parentheses and may hold spaces and parentheses:
    # the fields after the last ')' are fixed. Field 3 is the state, field 22 the start.
    fields = raw[raw.rfind(b")") + 1 :].split()
    if len(fields) < 20:
        return UNKNOWN_START
    if fields[0] in (b"Z", b"X", b"x"):
        return None
    return f"{_boot_id()}:{fields[19].decode('ascii', 'replace')}"


def _start_elsewhere(pid: int) -> str | None:
    """Without ``/proc``: whether ``pid`` lives (signal 0 sends nothing), its start unknown."""
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
    now = process_start(runner.pid)
    if now is None:
        return RunnerState.GONE
    if UNKNOWN_START in (now, runner.started):
        return RunnerState.UNKNOWN
    return RunnerState.ALIVE if now == runner.started else RunnerState.GONE
