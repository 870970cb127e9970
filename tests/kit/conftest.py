"""The one fresh virtual environment the slow kit tests share."""

from __future__ import annotations

import pytest

from .fresh_env import Venv, build


@pytest.fixture(scope="session")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """nr-llm, nr-llm-hello and nr-llm-git pip-installed into a new virtual environment."""
    return build(tmp_path_factory.mktemp("venv") / "env")
