"""``nr-llm playground`` from a shell: it prints a tokened loopback URL and serves it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
from click.testing import CliRunner

from nr_llm_core.cli import main


def test_help_lists_the_options() -> None:
    result = CliRunner().invoke(main, ["playground", "--help"])
    assert result.exit_code == 0
    for option in ("--host", "--port", "--db", "--no-open"):
        assert option in result.output


def test_the_command_serves_the_printed_url(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "nr_llm_core", "playground", "--no-open"]
    command += ["--db", str(tmp_path / "audit.db")]
    env = dict(os.environ)  # the autouse fixture removed every NR_LLM_* variable
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=tmp_path, env=env
    ) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            match = re.search(
                r"(http://127\.0\.0\.1:\d+)/\?token=([A-Za-z0-9_-]{43})$", line.strip()
            )
            assert match, line
            origin, token = match.groups()
            assert httpx.get(f"{origin}/?token={token}").status_code == 200
            assert httpx.get(f"{origin}/").status_code == 401
            headers = {"X-NR-LLM-Token": token}
            groups = httpx.get(f"{origin}/api/tools", headers=headers).json()["groups"]
            names = {t["name"] for g in groups for t in g["tools"]}
            assert {"read_records", "calculate"} <= names
            run = httpx.post(
                f"{origin}/api/runs",
                json={"prompt": "demo"},
                headers={**headers, "Accept": "application/json"},
                timeout=60,
            ).json()
            assert run["events"][-1]["event"] == "done"
            assert (tmp_path / "audit.db").exists()
        finally:
            proc.terminate()
            proc.wait(10)
