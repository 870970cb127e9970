"""A real distribution whose tools tell where they run, and helpers to run ``nr-llm`` on it.

``nr-llm-probe`` is written into a site folder with ``.dist-info`` metadata (as pip would) and
found through the ``nr_llm.tool`` entry-point group. Its tools answer with the process they ran
in (``pid=… ppid=… main=…``), so a test compares that with the pid of the ``nr-llm`` process
it started: a tool that ran in a worker has another pid, and the CLI as its parent.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import attrs

from tests.loading.distributions import add_distribution

PROBE_DIST = "nr-llm-probe"
PROBE_MODULE = "nr_llm_probe"

PROBE = """
import json, os, subprocess, sys, time
from nr_llm_core import ToolResult, ToolSpec, hookimpl


def where():
    main = getattr(sys.modules.get("__main__"), "__spec__", None)
    return f"pid={os.getpid()} ppid={os.getppid()} main={main.name if main else None}"


def tool(name, run, *, approval=False, parameters=None):
    class Tool:
        @hookimpl
        def tool_spec(self):
            return ToolSpec(name, "a probe", parameters, requires_approval=approval)

        @hookimpl
        def execute(self, arguments):
            return run(arguments)

    return Tool


Probe = tool("probe", lambda arguments: ToolResult.text(where()))
ProbeGated = tool("probe_gated", lambda arguments: ToolResult.text(where()), approval=True)


def _spawn(arguments):
    # A child in the tool's own process group, as a tool that starts a helper has.
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    return ToolResult.text(f"child={child.pid} " + where())


ProbeSpawn = tool("probe_spawn", _spawn)
ProbeSpawnGated = tool("probe_spawn_gated", _spawn, approval=True)


def _hang(arguments):
    time.sleep(3600)


ProbeHang = tool("probe_hang", _hang)


def _nap(arguments):
    time.sleep(arguments["seconds"])
    return ToolResult.text("rested")


ProbeNap = tool(
    "probe_nap",
    _nap,
    parameters={"type": "object", "properties": {"seconds": {"type": "number"}}},
)
"""

PROBE_TOOLS = {
    "probe": "Probe",
    "probe_gated": "ProbeGated",
    "probe_spawn": "ProbeSpawn",
    "probe_spawn_gated": "ProbeSpawnGated",
    "probe_hang": "ProbeHang",
    "probe_nap": "ProbeNap",
}

_WHERE = re.compile(r"pid=(\d+) ppid=(\d+) main=([\w.]+)")
_CHILD = re.compile(r"child=(\d+) pid=(\d+)")


def write_probe_site(site: Path) -> Path:
    """``site`` with ``nr-llm-probe`` installed in it."""
    add_distribution(
        site,
        PROBE_DIST,
        {name: f"{PROBE_MODULE}:{attr}" for name, attr in PROBE_TOOLS.items()},
        {PROBE_MODULE: PROBE},
    )
    return site


def where(text: str) -> list[tuple[int, int, str]]:
    """Every ``(pid, ppid, main module)`` a probe reported in ``text``."""
    return [(int(p), int(pp), m) for p, pp, m in _WHERE.findall(text)]


def spawned(text: str) -> tuple[int, int]:
    """``(child pid, worker pid)`` from a ``probe_spawn`` result in ``text``."""
    match = _CHILD.search(text)
    assert match, text
    return int(match.group(1)), int(match.group(2))


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (read from ``/proc``)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def in_a_worker_of(cli_pid: int, text: str) -> bool:
    """Whether ``text`` holds probe reports, each from a worker process of ``cli_pid``."""
    found = where(text)
    return bool(found) and all(
        pid != cli_pid and ppid == cli_pid and main == "nr_llm_core.isolation.worker"
        for pid, ppid, main in found
    )


def cli_env(site: Path, **extra: str) -> dict[str, str]:
    """The environment of an ``nr-llm`` subprocess: ``site`` importable, only the probe's
    entry points loaded (fast, and independent of what else is installed)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NR_LLM_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH", "")) if p)
    env["NR_LLM_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env["NR_LLM_PLUGINS"] = ",".join(PROBE_TOOLS)
    env.update(extra)
    return env


def write_user_config(text: str) -> Path:
    """Write the user's config file (under the test's ``XDG_CONFIG_HOME``)."""
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "nr-llm" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# Runs the CLI as `python -m nr_llm_core` does, and writes the names of every module the CLI
# process imported (by any means: entry points are loaded with importlib) when it exits.
_LAUNCH = """
import atexit, runpy, sys
out = sys.argv.pop(1)
def dump():
    with open(out, "w") as fh:
        fh.write("\\n".join(sorted(sys.modules)))
atexit.register(dump)
sys.argv[0] = "nr-llm"
runpy.run_module("nr_llm_core", run_name="__main__", alter_sys=True)
"""


@attrs.frozen
class Ran:
    """One finished ``nr-llm`` process."""

    pid: int
    code: int
    out: str
    err: str
    modules: frozenset[str]


def nr_llm(
    *args: str, env: dict[str, str], modules: Path, cwd: Path | None = None, **kwargs: Any
) -> subprocess.Popen[str]:
    """Start ``nr-llm ARGS``; at its exit it writes the modules it imported to ``modules``."""
    return subprocess.Popen(
        [sys.executable, "-c", _LAUNCH, str(modules), *args],
        env=env,
        cwd=cwd,
        text=True,
        **kwargs,
    )


def imported(modules: Path) -> frozenset[str]:
    """The modules the process that wrote ``modules`` had imported when it exited."""
    return frozenset(modules.read_text().split())


def run_nr_llm(
    *args: str, env: dict[str, str], cwd: Path | None = None, timeout: float = 120
) -> Ran:
    """Run ``nr-llm ARGS`` to its end."""
    with tempfile.TemporaryDirectory() as tmp:
        modules = Path(tmp) / "modules"
        with nr_llm(
            *args,
            env=env,
            modules=modules,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as proc:
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise
        return Ran(proc.pid, proc.returncode, out, err, imported(modules))
