"""A provider's retry warning during ``nr-llm run`` starts on a line of its own, on a terminal
(a real pseudo-terminal) and on a pipe, instead of inside the progress line."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import threading
from pathlib import Path

from ._wire import Reply, WireServer
from .test_openai_wire import text_reply

WARNING = "the OpenAI-compatible provider answered HTTP 503; retrying in 0.00 s"
PROGRESS = "Running the tool loop (OpenAIChatProvider) …"


def screen(raw: str) -> list[str]:
    """The lines a terminal shows for ``raw``: ``\\r`` returns to the line's start and what
    follows overwrites it; ``\\n`` starts a new line."""
    lines = [""]
    col = 0
    for ch in raw:
        if ch == "\r":
            col = 0
        elif ch == "\n":
            lines.append("")
            col = 0
        else:
            line = lines[-1].ljust(col)
            lines[-1] = line[:col] + ch + line[col + 1 :]
            col += 1
    return [line.rstrip() for line in lines if line.strip()]


def busy_then_fine() -> list[Reply]:
    # The 503 takes a moment to arrive, so the progress line is on screen before it.
    busy = Reply(503, b"busy...", {"retry-after": "0"}, trickle=0.1)
    return [busy, text_reply("fine")]


def command(server: WireServer, tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NR_LLM_")}
    env |= {"NR_LLM_DISABLE_PLUGIN_AUTOLOAD": "1", "NR_LLM_DB": str(tmp_path / "a.db")}
    args = [sys.executable, "-m", "nr_llm_core", "run", "hi", "--provider", "openai"]
    return [*args, "--base-url", f"{server.url}/v1"], env


def test_on_a_pipe_the_warning_has_its_own_line(tmp_path: Path) -> None:
    with WireServer(busy_then_fine()) as server:
        args, env = command(server, tmp_path)
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "fine" in done.stdout
    assert screen(done.stderr) == [PROGRESS, WARNING, f"{PROGRESS} done"]


def test_on_a_terminal_the_warning_has_its_own_line(tmp_path: Path) -> None:
    """stderr is a pseudo-terminal, so the spinner runs; the warning must not be written
    after the spinner's frame on the same line."""
    master, slave = pty.openpty()
    seen = bytearray()

    def read() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # the terminal closed with the process
                return
            if not data:
                return
            seen.extend(data)

    reader = threading.Thread(target=read, daemon=True)
    try:
        with WireServer(busy_then_fine()) as server:
            args, env = command(server, tmp_path)
            proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=slave)
            os.close(slave)
            slave = -1
            reader.start()
            out, _ = proc.communicate(timeout=60)
        reader.join(timeout=10)
    finally:
        if slave != -1:
            os.close(slave)
        os.close(master)
    assert proc.returncode == 0, seen.decode(errors="replace")
    assert b"fine" in out
    shown = screen(seen.decode())
    assert WARNING in shown, shown
    # The spinner drew before the warning (its frames are on the terminal), and the last
    # line says the block finished.
    assert any(ord(ch) in range(0x2800, 0x2900) for ch in seen.decode()), shown
    assert shown[-1] == f"{PROGRESS} done"
