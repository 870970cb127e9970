"""A fresh virtual environment with nr-llm and the example plugins installed by pip."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests._copies import project_copy

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ROOT / "plugins"


class Venv:
    """A virtual environment: its interpreter, its scripts, and a clean environment."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.bin = path / ("Scripts" if os.name == "nt" else "bin")
        self.python = self.bin / "python"

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("NR_LLM_", "PYTHON", "VIRTUAL_ENV"))
        }
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '')}"
        env.update(extra)
        return env

    def run(
        self, *args: str | Path, cwd: Path | None = None, **env: str
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(a) for a in args],
            capture_output=True,
            text=True,
            env=self.env(**env),
            cwd=cwd,
            timeout=600,
            check=False,
        )

    def pip_install(self, *args: str | Path) -> None:
        proc = self.run(
            self.python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *args
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr


def build(path: Path) -> Venv:
    """``python -m venv`` + ``pip install --no-build-isolation`` of the repository root and
    the plugins (their dependencies come from the package index)."""
    proc = subprocess.run(
        [sys.executable, "-m", "venv", str(path)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    venv = Venv(path)
    # --no-build-isolation builds with the environment's own setuptools: bring a recent one.
    venv.pip_install("--upgrade", "setuptools>=77", "wheel", "pytest>=8")
    # Copies, so that the in-folder builds leave nothing in the checkout.
    sources = path.parent / f"{path.name}-sources"
    sources.mkdir()
    projects = [project_copy(p, sources) for p in (ROOT, PLUGINS / "nr-llm-hello")]
    projects.append(project_copy(PLUGINS / "nr-llm-git", sources))
    venv.pip_install("--no-build-isolation", *projects)
    return venv
