"""Sources of the real distributions the isolation tests install into a site folder.

Each hostile tool does one thing a buggy or malicious plugin could do to the process it runs
in. They are written to disk as modules with ``.dist-info`` metadata (see
``tests/loading/distributions.py``) and loaded through the ``nr_llm.tool`` entry-point group.
"""

from __future__ import annotations

from pathlib import Path

from tests.loading.distributions import add_distribution

HEADER = """
import os, sys, time
from nr_llm_core import Artifact, ToolResult, ToolSpec, hookimpl

def _worker_reply_fd():
    # The worker runs as __main__; its reply descriptor is the stream a hostile tool targets.
    return sys.modules["__main__"].reply_fd

def tool(name, run, parameters=None):
    class Tool:
        @hookimpl
        def tool_spec(self):
            return ToolSpec(name, "an isolation test tool", parameters)

        @hookimpl
        def execute(self, arguments, context):
            return run(arguments, context)
    Tool.__name__ = name
    return Tool
"""

GOOD = (
    HEADER
    + """
IMPORTED_IN = os.getpid()

def _echo(arguments, context):
    print("this line must not corrupt the protocol")  # goes to the worker's stderr
    os.write(1, b"neither must this raw write to fd 1")
    rows = [[arguments["text"], str(i)] for i in range(3)]
    return ToolResult.text(
        "echo: " + arguments["text"],
        Artifact.table("rows", ["text", "i"], rows),
        Artifact.text("context", repr(context.run_id if context else None)),
    )

Echo = tool("iso_echo", _echo, {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
    "additionalProperties": False,
})

def _env(arguments, context):
    names = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MY_SERVICE_TOKEN", "DB_SECRET_X",
             "UNRELATED_HOST_VAR", "PATH", "EXPLICIT_FOR_TOOL"]
    present = sorted(n for n in names if n in os.environ)
    return ToolResult.text(",".join(present))

Env = tool("iso_env", _env)

def _pid(arguments, context):
    return ToolResult.text(str(os.getpid()))

Pid = tool("iso_pid", _pid)

def _huge(arguments, context):
    # Bounded twice: in the worker (small frame) and again in the host.
    return ToolResult.text("y" * 200_000, Artifact.text("big", "z" * 200_000))

Huge = tool("iso_huge", _huge)

def _not_a_result(arguments, context):
    return {"content": "a dict is not a ToolResult"}

NotAResult = tool("iso_invalid", _not_a_result)

def _raises(arguments, context):
    raise RuntimeError("CANARY-worker-exception-4242")

Raises = tool("iso_raises", _raises)
"""
)

HOSTILE = (
    HEADER
    + """
import ctypes, struct

def _loud(arguments, context):
    chunk = "x" * (1 << 20)
    for _ in range(arguments.get("mib", 1024)):  # 1 GiB by default
        sys.stdout.write(chunk)
    sys.stdout.flush()
    return ToolResult.text("still speaking the protocol")

Loud = tool("loud", _loud)

def _deep(arguments, context):
    depth = arguments["depth"]
    body = b"[" * depth + b"]" * depth
    os.write(_worker_reply_fd(), struct.pack(">I", len(body)) + body)
    time.sleep(3600)

Deep = tool("deep", _deep)

def _garbage(arguments, context):
    fd = _worker_reply_fd()
    chunk = b"x" * (1 << 20)
    for _ in range(1024):
        os.write(fd, chunk)
    time.sleep(3600)

Garbage = tool("garbage", _garbage)

def _hang(arguments, context):
    time.sleep(3600)

Hang = tool("hang", _hang)

def _exits(arguments, context):
    os._exit(3)

Exits = tool("exits", _exits)

def _hog(arguments, context):
    hoard = []
    while True:
        hoard.append(bytearray(64 << 20))

Hog = tool("hog", _hog)

def _segv(arguments, context):
    ctypes.string_at(0)

Segv = tool("segv", _segv)

def _spin(arguments, context):
    while True:
        pass

Spin = tool("spin", _spin)

def _calm(arguments, context):
    return ToolResult.text(str(os.getpid()))

Calm = tool("calm", _calm)

_deaf_fds = []

def _deaf(arguments, context):
    # The worker reads its requests from fd 0. Point fd 0 at a pipe no one writes, and keep
    # the host's pipe open behind it: the host's next request fills that pipe and is never
    # read (closing it instead would fail the host's write at once).
    _deaf_fds.append(os.dup(0))
    r, w = os.pipe()
    _deaf_fds.append(w)
    os.dup2(r, 0)
    return ToolResult.text(str(os.getpid()))

Deaf = tool("deaf", _deaf)

def _spawner(arguments, context):
    # A grandchild that ignores SIGTERM and writes down its pid; the call then hangs.
    import subprocess
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(3600)"
    child = subprocess.Popen(
        [sys.executable, "-c", code], start_new_session=arguments.get("leave_group", False)
    )
    with open(arguments["pid_file"], "w") as fh:
        fh.write(str(child.pid))
    time.sleep(3600)

Spawner = tool("spawner", _spawner)

def _peek(arguments, context):
    # Another process's environment block and memory: an errno name, or "read".
    pid, found = arguments["pid"], []
    for name in ("environ", "mem"):
        try:
            with open(f"/proc/{pid}/{name}", "rb") as fh:
                fh.read(1) if name == "environ" else None
            found.append("read")
        except OSError as exc:
            import errno
            found.append(errno.errorcode.get(exc.errno, str(exc.errno)))
    return ToolResult.text(",".join(found))

Peek = tool("peek", _peek)
"""
)

BROKEN = """
import os
with open(os.environ.get("NR_LLM_TEST_MARKER", os.devnull), "a") as fh:
    fh.write(str(os.getpid()) + "\\n")
raise RuntimeError("CANARY-import-secret-in-worker")
"""

GOOD_TOOLS = {
    "iso_echo": "Echo",
    "iso_env": "Env",
    "iso_pid": "Pid",
    "iso_huge": "Huge",
    "iso_invalid": "NotAResult",
    "iso_raises": "Raises",
}
HOSTILE_TOOLS = {
    "loud": "Loud",
    "deep": "Deep",
    "garbage": "Garbage",
    "hang": "Hang",
    "exits": "Exits",
    "hog": "Hog",
    "segv": "Segv",
    "spin": "Spin",
    "calm": "Calm",
    "deaf": "Deaf",
    "spawner": "Spawner",
    "peek": "Peek",
}


def write_site(site: Path) -> Path:
    """Three distributions: well-behaved tools, hostile tools, and one that fails to import."""
    add_distribution(
        site,
        "iso-good",
        {name: f"iso_good_mod:{cls}" for name, cls in GOOD_TOOLS.items()},
        {"iso_good_mod": GOOD},
    )
    add_distribution(
        site,
        "iso-hostile",
        {name: f"iso_hostile_mod:{cls}" for name, cls in HOSTILE_TOOLS.items()},
        {"iso_hostile_mod": HOSTILE},
    )
    add_distribution(
        site, "iso-broken", {"iso_broken": "iso_broken_mod:Tool"}, {"iso_broken_mod": BROKEN}
    )
    return site
