"""What ``git add -A`` in a checkout must never stage: the virtual environment (a directory
or, as some setups make it, a symbolic link), caches, the demo's and the tests' databases.

A ``.venv`` that was a symbolic link was staged once (the pattern was ``.venv/``, which only
matches a directory), and merged, it replaced the checkout's environment with a link to
itself. The checkout's own ``.gitignore`` is copied into a fresh repository, the paths are
made there for real, and ``git add -A`` must leave them out.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[2]
GIT = shutil.which("git")


def _git(repo: Path, *args: str) -> str:
    assert GIT is not None, "git is needed by this test (Debian: apt-get install git)"
    return subprocess.run(
        [GIT, "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


@pytest.mark.parametrize("venv", ["directory", "symlink"])
def test_git_add_all_stages_no_environment_cache_or_database(tmp_path: Path, venv: str) -> None:
    """Tries: ``.venv`` as a directory and as a symbolic link to one, beside the caches and
    ``.nr-llm/`` databases a run leaves; only the one real source file may be staged."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    shutil.copy(CHECKOUT / ".gitignore", repo / ".gitignore")
    real_env = tmp_path / "elsewhere-venv"
    (real_env / "bin").mkdir(parents=True)
    (real_env / "bin" / "python").write_text("#!/bin/sh\n")
    if venv == "symlink":
        os.symlink(real_env, repo / ".venv")
    else:
        shutil.copytree(real_env, repo / ".venv")
    for left in (
        ".nr-llm/audit.db",
        ".nr-llm/demo.db",
        "pkg/__pycache__/mod.cpython-311.pyc",
        ".pytest_cache/v/cache/lastfailed",
        ".mypy_cache/3.11/x.json",
        ".ruff_cache/0.1/x",
        ".hypothesis/examples/x",
        "nr_llm.egg-info/PKG-INFO",
    ):
        (repo / left).parent.mkdir(parents=True, exist_ok=True)
        (repo / left).write_text("x")
    (repo / "pkg" / "mod.py").write_text("x = 1\n")
    _git(repo, "add", "-A")
    staged = set(_git(repo, "diff", "--cached", "--name-only").split())
    assert staged == {".gitignore", "pkg/mod.py"}
