"""A host process for the reach tests: ``python _probe_host.py '<json options>'``.

The test process cannot put a key into its own original environment block, so it starts this
host with ``OPENAI_API_KEY`` set to a canary. The host reads the key into a provider (a secret
held in memory, as a real host does), keeps a file with the canary open (a descriptor a worker
must not get), runs the isolated ``probe`` tool once, and prints one JSON line: the probe's
report and what the host checked about itself (that the canary really is where the probe
looks, so a refusal cannot pass for "there was nothing to find").

``python _probe_host.py bystander`` plays another process of the same user instead (see
:func:`bystander`). ``"capabilities": "none"`` makes this host drop its own capabilities
first (uid unchanged): a host as an ordinary user runs it, for which only the host's
non-dumpable flag stands between a worker and the host (the worker's dropped capabilities
decide only against a root host).
"""

from __future__ import annotations

import ctypes
import json
import os
import sys


def _status() -> dict[str, str]:
    fields = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            name, _, value = line.partition(":")
            fields[name] = value.strip()
    return fields


def _drop_own_capabilities() -> None:
    """Empty this process's effective, permitted and inheritable sets (test-side ctypes, so
    the scenario does not depend on the library's own lockdown code)."""

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [(n, ctypes.c_uint32) for n in ("effective", "permitted", "inheritable")]

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.capset(ctypes.byref(Header(0x20080522, 0)), (Data * 2)()) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def _dumpable() -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.prctl(3, 0, 0, 0, 0))  # PR_GET_DUMPABLE


def bystander() -> None:
    """Another process of the same user, as a shell that exported the key is: no capabilities,
    dumpable, the key in its environment. It says it is ready and waits to be killed."""
    _drop_own_capabilities()
    print("ready", flush=True)
    sys.stdin.read()


def main() -> None:
    if sys.argv[1] == "bystander":
        bystander()
        return
    options = json.loads(sys.argv[1])
    if options["capabilities"] == "none":
        _drop_own_capabilities()
    from nr_llm_core import OpenAIChatProvider, ToolHost

    canary = os.environ["OPENAI_API_KEY"]
    provider = OpenAIChatProvider("http://127.0.0.1:9", "m")  # holds the key, never sends it
    held = open(options["held_file"], "rb")  # noqa: SIM115  # held open on purpose, for the probe
    with open("/proc/self/environ", "rb") as fh:
        own_environ = fh.read()
    before = {"dumpable": _dumpable(), "CapEff": _status()["CapEff"]}
    with ToolHost.discover(isolate=["iso-probe"], autoload=False) as host:
        result = host.invoke(
            "probe",
            {
                "host_pid": os.getpid(),
                "held_file": options["held_file"],
                "readable_file": options["readable_file"],
                "port": options["port"],
                "bystander_pid": options["bystander_pid"],
            },
        )
    after = {"dumpable": _dumpable()}
    print(
        json.dumps(
            {
                "content": result.content,
                "is_error": result.is_error,
                "host_before": before,
                "host_after": after,
                "canary_in_own_environ": canary.encode() in own_environ,
                "canary_in_held_file": canary.encode() in held.read(),
                "key_held": provider._api_key == canary,
            }
        )
    )


if __name__ == "__main__":
    main()
