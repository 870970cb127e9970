"""Copies of the checkout's own projects for pip to build, so that no test writes into it."""

from __future__ import annotations

import shutil
from pathlib import Path

__all__ = ["project_copy"]

# What a copy leaves out: build output, caches, environments, the tests' own leftovers.
_LEFT_OUT = shutil.ignore_patterns(
    ".git",
    ".venv",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
    ".nr-llm",
    "test-artifacts",
)


def project_copy(project: Path, into: Path) -> Path:
    """``project`` copied to ``into/<its name>``, for pip to build there: pip builds a local
    project in its own folder, where setuptools writes ``build/`` and ``*.egg-info``, so
    installing the checkout's folders directly would leave files in the checkout."""
    return Path(shutil.copytree(project, into / project.name, ignore=_LEFT_OUT))
