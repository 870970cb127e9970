"""The test certificate authorities, made once per session."""

from __future__ import annotations

import pytest

from ._pki import Pki


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki(tmp_path_factory.mktemp("pki"))
