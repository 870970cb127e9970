"""`nr-llm runs approve|deny` on a real terminal: a real `nr-llm` process on a pseudo-terminal
shows the pending calls (through the pager when they are taller than the terminal), then asks;
answering no leaves the run waiting, yes applies the decision, `--yes` does not ask.

Without a terminal (every other test) the command never asks: scripts keep working.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from nr_llm_core.audit import AgentRunPersister

from .test_cli_pending import NAME, audit, product_name, script, suspend

__all__ = ["audit", "script"]  # fixtures, imported to be used here

PROMPT = "resume the run? [y/N]"
HANG_GUARD_S = 120  # only ends a hung child; nothing here measures time


def run_on_pty(args: list[str], answer: str | None, *, rows: int = 24) -> tuple[int, str]:
    """Run ``nr-llm ARGS`` with stdin, stdout and stderr on a pty of ``rows`` x 100; type
    ``answer`` once the confirmation prompt is shown. The exit code and everything shown."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, 100, 0, 0))
    env = {
        **os.environ,
        "TERM": "xterm",
        # A pager that marks each line it shows: proves the text went through the pager.
        "PAGER": "sed s/^/PAGED:/",
        "COLUMNS": "",
        "LINES": "",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "nr_llm_core", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
    )
    os.close(slave)
    shown = b""
    answered = answer is None
    deadline = time.monotonic() + HANG_GUARD_S
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: every process on the terminal has closed it
                    break
                if not chunk:
                    break
                shown += chunk
            if not answered and PROMPT.encode() in shown:
                os.write(master, answer.encode() + b"\n")  # type: ignore[union-attr]
                answered = True
            if proc.poll() is not None and not ready:
                break
        else:
            proc.kill()
            pytest.fail(f"nr-llm did not finish on the pty:\n{shown.decode(errors='replace')}")
    finally:
        os.close(master)
    return proc.wait(30), shown.decode("utf-8", "replace").replace("\r\n", "\n")


def test_on_a_terminal_the_calls_are_paged_then_asked_for(
    shop: Path, script: Path, audit: Path
) -> None:
    run_id, digest, _ = suspend(script)
    decide = ["runs", "approve", run_id, "--digest", digest, "--script", str(script)]

    code, out = run_on_pty(decide, "n")
    assert code == 1, out
    assert "PAGED:  upd1  update_record  [needs approval]" in out
    assert 'PAGED:      "table": "products",' in out
    assert out.index("PAGED:") < out.index(PROMPT)
    assert "Approve the 1 call(s) marked needs approval" in out
    assert "Nothing decided: the run is still waiting." in out
    assert "\x1b" not in out and "\u202e" not in out
    assert product_name(shop) == "Mechanical keyboard"
    with AgentRunPersister(audit) as store:
        assert store.load_suspended(run_id) is not None

    code, out = run_on_pty(decide, "y")
    assert code == 0, out
    assert "Renamed." in out
    assert product_name(shop) == NAME


def test_short_pending_calls_are_not_paged_and_yes_does_not_ask(
    shop: Path, script: Path, audit: Path
) -> None:
    run_id, digest, _ = suspend(script, "--privacy", "none")  # no arguments: a few lines
    code, out = run_on_pty(
        ["runs", "deny", run_id, "--digest", digest, "--yes", "--script", str(script)], None
    )
    assert code == 0, out
    assert PROMPT not in out
    assert "PAGED:" not in out
    assert "  upd1  update_record  [needs approval]" in out
    assert "(arguments not shown at privacy level none)" in out
    assert product_name(shop) == "Mechanical keyboard"
