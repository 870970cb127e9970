"""The probe: a real isolated tool that tries to reach its host, and reports what it got.

It is installed as the distribution ``iso-probe`` in a site folder of its own and run by a host
in a separate process (``_probe_host.py``), whose environment holds a canary provider key. The
report maps each attempt to what happened: an errno name (``EACCES``, ``EPERM`` …) when the
kernel refused, ``"CANARY"`` when the canary key came back, ``"read"`` when something was read
without it, or the attempt's own result for what a worker is documented to be able to do.
"""

from __future__ import annotations

from pathlib import Path

from tests.loading.distributions import add_distribution

#: Part of the canary key the host process holds; the probe looks for it in what it reads.
CANARY = "CANARY-HOST-KEY"

PROBE = """
import ctypes, errno, json, os, signal, socket, stat
from nr_llm_core import ToolResult, ToolSpec, hookimpl

CANARY = "__CANARY__"
PTRACE_ATTACH, PTRACE_DETACH, PTRACE_SEIZE, PTRACE_INTERRUPT = 16, 17, 0x4206, 0x4207
WALL = 0x40000000

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.ptrace.restype = ctypes.c_long


class IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]


libc.process_vm_readv.argtypes = [
    ctypes.c_int, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong
]
libc.process_vm_readv.restype = ctypes.c_ssize_t


def errno_name(number):
    return errno.errorcode.get(number, str(number))


def verdict(data):
    return "CANARY" if CANARY.encode() in data else "read"


def read_file(path, offset=0, size=1 << 20):
    try:
        with open(path, "rb") as fh:
            if offset:
                fh.seek(offset)
            return verdict(fh.read(size))
    except OSError as exc:
        return errno_name(exc.errno)


def env_address(pid):
    # Fields 50 and 51 of stat; the kernel shows 0 to a process not allowed to trace pid.
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[47]), int(fields[48])


def ptrace(request, pid):
    ctypes.set_errno(0)
    if libc.ptrace(request, pid, None, None) == 0:
        return None
    return errno_name(ctypes.get_errno())


def try_seize(pid):
    refused = ptrace(PTRACE_SEIZE, pid)
    if refused:
        return refused
    ptrace(PTRACE_INTERRUPT, pid)  # leave the host as it was: stop, then detach
    os.waitpid(pid, WALL)
    ptrace(PTRACE_DETACH, pid)
    return "attached"


def try_attach(pid):
    refused = ptrace(PTRACE_ATTACH, pid)
    if refused:
        return refused
    os.waitpid(pid, WALL)
    ptrace(PTRACE_DETACH, pid)
    os.kill(pid, signal.SIGCONT)
    return "attached"


def try_vm_read(pid, start, end):
    size = max(16, min(end - start, 1 << 16))
    buf = ctypes.create_string_buffer(size)
    local = IoVec(ctypes.cast(buf, ctypes.c_void_p), size)
    remote = IoVec(start or 4096, size)
    ctypes.set_errno(0)
    count = libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    if count < 0:
        return errno_name(ctypes.get_errno())
    return verdict(buf.raw[:count])


def try_host_fds(pid):
    # Listing the numbers is decided by the directory's owner and mode (root's when the host
    # is non-dumpable); opening one is decided like reading the host's memory.
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError as exc:
        return errno_name(exc.errno)
    found = set()
    for name in names:
        path = f"/proc/{pid}/fd/{name}"
        try:
            regular = stat.S_ISREG(os.stat(path).st_mode)  # never block on one of its pipes
        except OSError as exc:
            found.add(errno_name(exc.errno))
            continue
        found.add(read_file(path, size=4096) if regular else "read")
    if "CANARY" in found:
        return "CANARY"
    return found.pop() if len(found) == 1 else "read"


def own_fds(held_path):
    targets = []
    for name in os.listdir("/proc/self/fd"):
        try:
            targets.append(os.readlink(f"/proc/self/fd/{name}"))
        except OSError:
            pass
    return "inherited" if held_path in targets else "clean"


def connect(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"the probe was here")
    except OSError as exc:
        return errno_name(exc.errno)
    return "connected"


def signal_host(pid):
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return errno_name(exc.errno)
    return "allowed"


def status():
    fields = {}
    for line in open("/proc/self/status"):
        name, _, value = line.partition(":")
        fields[name] = value.strip()
    return {n: fields.get(n) for n in ("CapEff", "CapPrm", "CapInh", "CapBnd", "NoNewPrivs")}


def probe(arguments):
    host = arguments["host_pid"]
    start, end = env_address(host)
    report = {
        "ppid_is_host": os.getppid() == host,
        "environ_ppid": read_file(f"/proc/{os.getppid()}/environ"),
        "environ_host": read_file(f"/proc/{host}/environ"),
        "stat_env_address": "shown" if start else "hidden",
        "mem": read_file(f"/proc/{host}/mem", offset=start, size=max(end - start, 1)),
        "cmdline": read_file(f"/proc/{host}/cmdline"),
        "ptrace_seize": try_seize(host),
        "ptrace_attach": try_attach(host),
        "process_vm_readv": try_vm_read(host, start, end),
        "host_fds": try_host_fds(host),
        "own_fds": own_fds(arguments["held_file"]),
        "same_uid_file": open(arguments["readable_file"]).read(),
        "loopback": connect(arguments["port"]),
        "signal_host": signal_host(host),
        "bystander_environ": read_file(f"/proc/{arguments['bystander_pid']}/environ"),
        "status": status(),
    }
    return ToolResult.text(json.dumps(report))


class Probe:
    @hookimpl
    def tool_spec(self):
        return ToolSpec("probe", "tries to reach the host that runs it")

    @hookimpl
    def execute(self, arguments):
        return probe(arguments)
""".replace("__CANARY__", CANARY)


def write_probe_site(site: Path) -> Path:
    """The ``iso-probe`` distribution, alone in ``site``."""
    add_distribution(site, "iso-probe", {"probe": "iso_probe_mod:Probe"}, {"iso_probe_mod": PROBE})
    return site
