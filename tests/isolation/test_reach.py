"""What an isolated worker can and cannot reach of its host, each claim tried by a real worker.

A host runs in its own process (``_probe_host.py``) with a canary provider key in its
environment, in a provider object, and in a file it holds open; the isolated ``probe`` tool
tries every way to the host the kernel offers a process of the same user and reports what it
got. ``docs/trust-model.md`` lists the same claims, each naming its test here.

Two hosts: one with the capabilities of the test process (root in CI: there the worker's
dropped capabilities are what refuses it) and one without any (as an ordinary user's host:
there only the host's non-dumpable flag does).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from ._probe import CANARY, write_probe_site
from .conftest import isolated_host

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")

DENIED = {"EACCES", "EPERM"}
HOST_SCRIPT = Path(__file__).with_name("_probe_host.py")


class _Listener:
    """A loopback port that records the bytes of the one connection it accepts."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(120)  # a hang guard: the probe connects within seconds
        self.port = self.sock.getsockname()[1]
        self.received = b""
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(30)
            while chunk := conn.recv(4096):
                self.received += chunk

    def close(self) -> None:
        self.sock.close()
        self.thread.join(30)


@pytest.fixture(scope="module", params=["as-started", "none"])
def reach(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """Run the host once per capability setting; the probe's report and the host's checks."""
    base = tmp_path_factory.mktemp("reach")
    site = write_probe_site(base / "site")
    key = f"sk-{CANARY}-{os.urandom(6).hex()}"
    held = base / "held-open.txt"
    held.write_text(f"a secret the host holds open: {key}\n")
    readable = base / "same-uid.txt"
    readable.write_text("a file of the same user")
    listener = _Listener()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NR_LLM_")}
    env.update(
        OPENAI_API_KEY=key,
        NR_LLM_PLUGINS="probe",
        PYTHONPATH=os.pathsep.join([str(site), env.get("PYTHONPATH", "")]),
    )
    bystander = subprocess.Popen(
        [sys.executable, str(HOST_SCRIPT), "bystander"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert bystander.stdout is not None
    assert bystander.stdout.readline() == b"ready\n"
    options = {
        "capabilities": request.param,
        "held_file": str(held),
        "readable_file": str(readable),
        "port": listener.port,
        "bystander_pid": bystander.pid,
    }
    try:
        run = subprocess.run(
            [sys.executable, str(HOST_SCRIPT), json.dumps(options)],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,  # a hang guard only
            check=False,
        )
    finally:
        listener.close()
        bystander.kill()
        bystander.communicate()  # waits, and closes its pipes
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert not out["is_error"], out["content"]
    # The canary is where the probe looks: a refusal cannot pass for "nothing there".
    assert out["canary_in_own_environ"] and out["canary_in_held_file"] and out["key_held"]
    assert out["host_before"]["dumpable"] == 1  # the host was readable before its first worker
    if request.param == "none":
        assert int(out["host_before"]["CapEff"], 16) == 0
    report = json.loads(out["content"])
    assert report["ppid_is_host"]
    return {"report": report, "host": out, "received": listener.received, "key": key}


# -- what a worker cannot reach ----------------------------------------------------------------


def test_the_worker_cannot_read_the_host_environment_block(reach: dict[str, Any]) -> None:
    """``/proc/<host>/environ`` holds the environment the host started with, keys included,
    whatever the host later removed from ``os.environ``: the worker is refused, found through
    its parent pid and through the pid the host passed."""
    assert reach["report"]["environ_ppid"] in DENIED
    assert reach["report"]["environ_host"] in DENIED


def test_the_worker_cannot_read_the_host_memory(reach: dict[str, Any]) -> None:
    """Through ``/proc/<host>/mem`` at the environment's address (which ``/proc/<host>/stat``
    does not even show it) and through ``process_vm_readv``."""
    report = reach["report"]
    assert report["stat_env_address"] == "hidden"
    assert report["mem"] in DENIED
    assert report["process_vm_readv"] in DENIED


def test_the_worker_cannot_attach_to_the_host(reach: dict[str, Any]) -> None:
    """``ptrace`` ``PTRACE_SEIZE`` and ``PTRACE_ATTACH`` on the host are refused."""
    assert reach["report"]["ptrace_seize"] in DENIED
    assert reach["report"]["ptrace_attach"] in DENIED


def test_the_worker_cannot_reach_the_host_open_files(reach: dict[str, Any]) -> None:
    """The host's descriptors are neither inherited (only the pipes and stderr are) nor
    reachable through ``/proc/<host>/fd`` (a root worker may list their numbers, since the
    directory then belongs to root; it can open none of them)."""
    assert reach["report"]["own_fds"] == "clean"
    assert reach["report"]["host_fds"] in DENIED


def test_the_worker_holds_no_capability_and_cannot_gain_one(reach: dict[str, Any]) -> None:
    """Every capability set is empty (bounding set included when the worker started with
    ``CAP_SETPCAP``) and ``no_new_privs`` is set, so no ``execve`` gives any back."""
    status = reach["report"]["status"]
    for name in ("CapEff", "CapPrm", "CapInh"):
        assert int(status[name], 16) == 0, (name, status)
    assert status["NoNewPrivs"] == "1"
    if os.geteuid() == 0 and reach["host"]["host_before"]["CapEff"] != "0000000000000000":
        assert int(status["CapBnd"], 16) == 0


def test_the_host_stays_non_dumpable_after_its_workers_stop(reach: dict[str, Any]) -> None:
    """Set before the first worker starts, never restored: a worker's descendant may outlive
    the worker (ADR 0012)."""
    assert reach["host"]["host_after"]["dumpable"] == 0


# -- what a worker can reach (documented; the test asserts that it did) -------------------------


def test_the_worker_can_read_the_host_command_line(reach: dict[str, Any]) -> None:
    """``/proc/<pid>/cmdline`` is readable by every process on Linux: never put a key on a
    command line. nr-llm's own command line takes keys only from the environment."""
    assert reach["report"]["cmdline"] == "read"


def test_the_worker_can_read_files_of_the_same_user(reach: dict[str, Any]) -> None:
    """The worker runs as the host's user: the audit database, ``~/.aws``, a ``.env`` file."""
    assert reach["report"]["same_uid_file"] == "a file of the same user"


def test_the_worker_can_connect_to_the_network(reach: dict[str, Any]) -> None:
    """Here to a port on 127.0.0.1 the test listens on; anywhere the host can."""
    assert reach["report"]["loopback"] == "connected"
    assert reach["received"] == b"the probe was here"


def test_the_worker_can_read_other_processes_of_the_same_user(reach: dict[str, Any]) -> None:
    """The locks protect the host, not every process of its user: a dumpable one that holds
    no more capabilities than the worker (none), such as the shell that exported the key and
    started the host, is open to the worker like a file of that user."""
    assert reach["report"]["bystander_environ"] == "CANARY"


def test_the_worker_can_signal_the_host(reach: dict[str, Any]) -> None:
    """A process of the same user may signal the host (``kill(pid, 0)`` shows the permission
    without using it): a worker can kill its host."""
    assert reach["report"]["signal_host"] == "allowed"


# -- the worker fails closed --------------------------------------------------------------------


def test_a_worker_that_cannot_drop_its_privileges_runs_no_plugin(
    on_path: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A ``sitecustomize`` in the worker's environment breaks its ``capset`` call (a kernel
    that refuses, as some sandboxes do): the worker exits before it imports a plugin, and the
    tool is a load error whose cause the host logs."""
    (tmp_path / "sitecustomize.py").write_text(
        "import nr_llm_core.isolation.lockdown as lockdown\n"
        "lockdown._CAPABILITY_VERSION_3 = 1  # not a version: capset answers EINVAL\n"
    )
    marker = tmp_path / "imported-by"
    path = os.pathsep.join([str(tmp_path), *sys.path])
    with caplog.at_level(logging.ERROR, logger="nr_llm.isolation"):
        host = isolated_host(env={"PYTHONPATH": path, "NR_LLM_TEST_MARKER": str(marker)})
        with host:
            errors = {e.entry_point: e.reason for e in host.load_errors}
    assert errors["iso_echo"] == "its worker failed while loading it"
    assert errors["iso_broken"] == "its worker failed while loading it"
    assert not marker.exists()  # iso_broken's module was never imported
    # (then "the pipe was closed", or a broken pipe if it was gone before the request)
    assert any(
        r.getMessage().startswith(
            "worker of 'iso-good' stopped (exit code 78: it could not drop its privileges): "
        )
        for r in caplog.records
    )


def test_the_worker_trusts_what_the_kernel_reports_not_its_own_calls() -> None:
    """After its calls, the worker reads its capability sets back from ``/proc``: a process
    that still holds any (this test process, when it runs with capabilities) is refused."""
    from nr_llm_core.isolation.lockdown import LockdownError, _check_no_capabilities

    with open("/proc/self/status") as fh:
        held = any(line.startswith("CapEff:") and int(line.split()[1], 16) for line in fh)
    if not held:
        pytest.skip("this test process holds no capability to find")
    with pytest.raises(LockdownError, match="CapEff is not empty"):
        _check_no_capabilities()


def test_every_reach_claim_in_the_trust_model_names_a_test_that_exists() -> None:
    """The documented claims and these tests cannot drift apart: every ``file::test`` the
    reach tables of ``docs/trust-model.md`` name is a test function of that module."""
    import importlib
    import re

    doc = (Path(__file__).parents[2] / "docs" / "trust-model.md").read_text()
    section = doc.split("### What an isolated worker can and cannot reach", 1)[1]
    section = section.split("\n## ", 1)[0]
    named = re.findall(r"`(test_\w+)\.py::(test_\w+)`", section)
    assert len(named) >= 15
    for module, test in named:
        loaded = importlib.import_module(f"tests.isolation.{module}")
        assert callable(getattr(loaded, test, None)), f"{module}.py::{test}"
