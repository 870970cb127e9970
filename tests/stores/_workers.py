"""Real ``nr-llm worker`` processes on a real PostgreSQL server, and a real tool distribution
whose every call appends ``<run id> <tool> <pid>`` to a log file: what the worker tests count."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from nr_llm_core.stores import open_store

from .conftest import SECRET

LOG_VAR = "STORE_TEST_WORKER_LOG"
RELEASE_VAR = "STORE_TEST_WORKER_RELEASE"

TOOLS = '''
import os, time
from nr_llm_core import Artifact, ToolResult, ToolSpec, hookimpl

def log(context, tool):
    with open(os.environ["STORE_TEST_WORKER_LOG"], "a", encoding="utf-8") as out:
        out.write(f"{context.run_id} {tool} {os.getpid()}\\n")

def spec(name, approval, data_class="public"):
    return ToolSpec(name, name, {"type": "object", "properties": {}}, data_class=data_class,
                    requires_approval=approval)

class Note:
    @hookimpl
    def tool_spec(self):
        return spec("note", False)

    @hookimpl
    def execute(self, arguments, context):
        log(context, "note")
        return ToolResult.text("noted")

class InternalNote:
    """Internal data: a provider in the external zone is never offered it, nor shown its
    output (a canary in its content, another in its artifact)."""
    @hookimpl
    def tool_spec(self):
        return spec("internal_note", False, "internal")

    @hookimpl
    def execute(self, arguments, context):
        log(context, "internal_note")
        return ToolResult(
            content="internal INTERNAL-OUTPUT-CANARY-7c1d",
            artifacts=[Artifact.text("report", "INTERNAL-ARTIFACT-CANARY-9e4b")],
        )

class Append:
    @hookimpl
    def tool_spec(self):
        return spec("append_line", True)

    @hookimpl
    def execute(self, arguments, context):
        log(context, "append_line")
        return ToolResult.text("appended")

class Block:
    """Logs, then waits until the release file exists (a run to kill a worker in)."""
    @hookimpl
    def tool_spec(self):
        return spec("block", False)

    @hookimpl
    def execute(self, arguments, context):
        log(context, "block")
        release = os.environ["STORE_TEST_WORKER_RELEASE"]
        deadline = time.monotonic() + 120
        while not os.path.exists(release) and time.monotonic() < deadline:
            time.sleep(0.05)
        return ToolResult.text("released")

class BlockApproved(Block):
    @hookimpl
    def tool_spec(self):
        return spec("block_approved", True)

    @hookimpl
    def execute(self, arguments, context):
        log(context, "block_approved")
        return Block.execute(self, arguments, context)
'''


def call(name: str, call_id: str) -> dict[str, Any]:
    """One assistant turn that calls ``name``."""
    return {"content": "", "tool_calls": [{"id": call_id, "name": name, "arguments": {}}]}


def make_site(root: Path) -> Path:
    """A site folder with the distribution of the four logging tools."""
    site = root / "site"
    info = site / "nr_llm_worker_tools-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: nr-llm-worker-tools\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text(
        "[nr_llm.tool]\n"
        "note = nr_llm_worker_tools:Note\n"
        "append_line = nr_llm_worker_tools:Append\n"
        "block = nr_llm_worker_tools:Block\n"
        "block_approved = nr_llm_worker_tools:BlockApproved\n"
        "internal_note = nr_llm_worker_tools:InternalNote\n"
    )
    (info / "RECORD").write_text("")
    (site / "nr_llm_worker_tools.py").write_text(textwrap.dedent(TOOLS))
    return site


class Fleet:
    """Workers and CLI commands sharing one store, one log, one script and one secret."""

    def __init__(self, root: Path, site: Path, url: str, turns: list[Any]) -> None:
        self.root = root
        self.url = url
        self.log = root / "calls.log"
        self.release = root / "release"
        self.script = root / "script.json"
        self.script.write_text(json.dumps(turns))
        env = {k: v for k, v in os.environ.items() if not k.startswith("NR_LLM_")}
        env.update(
            {
                "PYTHONPATH": str(site),
                LOG_VAR: str(self.log),
                RELEASE_VAR: str(self.release),
                "NR_LLM_SECRET": SECRET,
                "NR_LLM_DB": url,
            }
        )
        self.env = env
        self.workers: dict[str, subprocess.Popen[str]] = {}

    def start_worker(
        self, name: str, *extra: str, scripted: bool = True, env: dict[str, str] | None = None
    ) -> subprocess.Popen[str]:
        """``nr-llm worker --name NAME EXTRA…``: with the fleet's scripted provider, or
        (``scripted=False``) with the provider ``extra`` names; ``env`` adds variables."""
        out = open(self.root / f"{name}.out", "w")  # noqa: SIM115  # closed with the process
        script = ["--script", str(self.script)] if scripted else []
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "nr_llm_core",
                "worker",
                "--name",
                name,
                *script,
                "--heartbeat",
                "0.5",
                "--stalled-after",
                "3",
                *extra,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            env={**self.env, **(env or {})},
        )
        out.close()
        self.workers[name] = proc
        return proc

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``nr-llm ARGS``, run to its end."""
        return subprocess.run(
            [sys.executable, "-m", "nr_llm_core", *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=180,
            check=False,
        )

    def start_cli(self, *args: str) -> subprocess.Popen[str]:
        """``nr-llm ARGS``, not waited for (``communicate()`` it)."""
        return subprocess.Popen(
            [sys.executable, "-m", "nr_llm_core", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
        )

    def lines(self) -> list[tuple[str, str, int]]:
        """(run id, tool, pid) per call, in order."""
        if not self.log.exists():
            return []
        out = []
        for line in self.log.read_text().splitlines():
            run_id, tool, pid = line.split()
            out.append((run_id, tool, int(pid)))
        return out

    def output(self, name: str) -> str:
        return (self.root / f"{name}.out").read_text()

    def stop(self) -> None:
        for proc in self.workers.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.workers.values():
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@contextmanager
def fleet(root: Path, site: Path, url: str, turns: list[Any]) -> Iterator[Fleet]:
    """A :class:`Fleet`, its workers stopped however the test ends."""
    made = Fleet(root, site, url, turns)
    try:
        yield made
    finally:
        made.stop()


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 120) -> Any:
    """Poll ``condition`` until it is truthy (bounded in time); its value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def statuses(url: str, run_ids: list[str]) -> dict[str, str]:
    with open_store(url) as store:
        return {r: (store.get_run(r) or {"status": "?"})["status"] for r in run_ids}
