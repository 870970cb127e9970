"""Linux hardening that keeps an isolated worker out of the host: ``prctl`` and ``capset``.

Two locks, one on each side, because the kernel asks two questions before it lets one process
read another's ``/proc/<pid>/environ`` or ``/mem``, attach with ``ptrace``, or call
``process_vm_readv`` (its "ptrace access mode" check):

- **Does the reader hold every capability the target holds?** A worker that keeps root's
  capabilities (``CAP_SYS_PTRACE`` among them) may read anything. :func:`lock_down_worker`
  empties the worker's capability sets (bounding, ambient, effective, permitted, inheritable)
  and sets ``no_new_privs``, so that no ``execve`` (a setuid binary, file capabilities, uid 0's
  implicit ones) gives any back. Against a root host this alone refuses the worker.
- **Is the target dumpable?** Between processes of one user without capabilities the kernel
  allows it unless the target is non-dumpable. :func:`protect_host` makes the host
  non-dumpable before its first worker starts, for the rest of its life (see ADR 0012: a
  worker's descendant may outlive the worker, so the flag is never restored).

The worker makes itself non-dumpable too, so that one isolated distribution cannot read
another's worker. Elsewhere than Linux both functions do nothing (see ``docs/trust-model.md``
for what holds there). Only the standard library is used: the worker calls this before any
plugin is imported.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
import threading
from typing import Final

__all__ = ["LOCKDOWN_FAILED", "LockdownError", "lock_down_worker", "protect_host"]

logger = logging.getLogger("nr_llm.isolation")

#: The exit code of a worker that could not drop its privileges (it runs no plugin).
LOCKDOWN_FAILED: Final = 78

_PR_GET_DUMPABLE: Final = 3
_PR_SET_DUMPABLE: Final = 4
_PR_CAPBSET_DROP: Final = 24
_PR_SET_NO_NEW_PRIVS: Final = 38
_PR_GET_NO_NEW_PRIVS: Final = 39
_PR_CAP_AMBIENT: Final = 47
_PR_CAP_AMBIENT_CLEAR_ALL: Final = 4
_CAPABILITY_VERSION_3: Final = 0x20080522
_EINVAL: Final = 22
_EPERM: Final = 1


class LockdownError(OSError):
    """A hardening step the kernel refused; the process must not go on to run plugins."""


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    # All five arguments, always: some options refuse unused ones that are not zero.
    libc.prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
    libc.prctl.restype = ctypes.c_int
    return libc


def _prctl(libc: ctypes.CDLL, option: int, arg: int, arg3: int = 0) -> int:
    """``prctl(option, arg, arg3, 0, 0)``; the result, or ``-errno`` on failure."""
    ctypes.set_errno(0)
    result = int(libc.prctl(option, arg, arg3, 0, 0))
    return -ctypes.get_errno() if result < 0 else result


def _last_capability() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as fh:
            return int(fh.read())
    except (OSError, ValueError):
        return 63  # every bit a 64-bit capability set can hold; unknown ones answer EINVAL


_host_lock = threading.Lock()
_host_protected = False


def protect_host() -> bool:
    """Make this process non-dumpable, once, before it starts a worker.

    From then on a process of the same user without ``CAP_SYS_PTRACE`` can neither read this
    process's ``/proc/<pid>/environ``, ``mem``, ``maps`` or ``fd/``, nor attach to it, nor read
    its memory with ``process_vm_readv``; it also writes no core dump. Returns whether the flag
    is set (``False`` off Linux); raises :class:`LockdownError` when Linux refuses.
    """
    global _host_protected
    if not sys.platform.startswith("linux"):
        return False
    with _host_lock:
        if not _host_protected:
            libc = _libc()
            if _prctl(libc, _PR_SET_DUMPABLE, 0) < 0 or _prctl(libc, _PR_GET_DUMPABLE, 0) != 0:
                raise LockdownError("this process could not be made non-dumpable")
            _host_protected = True
            logger.info(
                "this process is non-dumpable from now on, so that isolated workers cannot "
                "read it (no core dumps; debuggers need CAP_SYS_PTRACE)"
            )
    return True


def lock_down_worker() -> bool:
    """Drop every capability of this process for good, set ``no_new_privs``, and make it
    non-dumpable.

    Called first thing in a worker. Returns ``False`` off Linux; raises
    :class:`LockdownError` when a step is refused or the capability sets are not empty after.
    """
    if not sys.platform.startswith("linux"):
        return False
    libc = _libc()
    if _prctl(libc, _PR_SET_NO_NEW_PRIVS, 1) < 0:
        raise LockdownError("no_new_privs could not be set")
    for cap in range(_last_capability() + 1):
        # Needs CAP_SETPCAP: a process without it (an ordinary user's) has nothing to drop
        # that no_new_privs does not already keep it from gaining.
        failed = _prctl(libc, _PR_CAPBSET_DROP, cap)
        if failed < 0 and failed not in (-_EINVAL, -_EPERM):
            raise LockdownError(f"capability {cap} could not be dropped from the bounding set")
    _prctl(libc, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL)  # EINVAL before Linux 4.3
    header = _CapHeader(_CAPABILITY_VERSION_3, 0)
    empty = (_CapData * 2)()
    ctypes.set_errno(0)
    if libc.capset(ctypes.byref(header), empty) != 0:
        raise LockdownError("the capability sets could not be emptied")
    if _prctl(libc, _PR_SET_DUMPABLE, 0) < 0:
        raise LockdownError("the worker could not be made non-dumpable")
    _check_no_capabilities()
    return True


def _check_no_capabilities() -> None:
    """Read back what the kernel says this process holds: trust the result, not the calls."""
    fields = {}
    with open(f"/proc/{os.getpid()}/status", encoding="ascii", errors="replace") as fh:
        for line in fh:
            name, _, value = line.partition(":")
            fields[name] = value.strip()
    for name in ("CapEff", "CapPrm", "CapInh", "CapAmb"):
        if int(fields.get(name, "0"), 16):
            raise LockdownError(f"{name} is not empty after the drop")
    if fields.get("NoNewPrivs") != "1":
        raise LockdownError("no_new_privs is not set after the drop")
