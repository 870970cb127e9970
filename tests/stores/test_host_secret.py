"""Where the host secret comes from, and what is refused (ADR 0024)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from nr_llm_core import _signing
from nr_llm_core.errors import ConfigurationError


def test_the_environment_comes_first_then_the_file_then_the_user_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = _signing.host_key()  # none named: the user's secret, made on first use
    path = _signing.user_secret_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert _signing.host_key() == made  # and read back after
    secret_file = tmp_path / "secret"
    secret_file.write_text("f" * 40 + "\n")
    secret_file.chmod(0o600)
    monkeypatch.setenv("NR_LLM_SECRET_FILE", str(secret_file))
    assert _signing.host_key() == b"f" * 40
    monkeypatch.setenv("NR_LLM_SECRET", "e" * 40)
    assert _signing.host_key(shared=True) == b"e" * 40


def test_a_shared_store_needs_a_named_secret() -> None:
    with pytest.raises(ConfigurationError, match="NR_LLM_SECRET or NR_LLM_SECRET_FILE"):
        _signing.host_key(shared=True)


@pytest.mark.parametrize("problem", ["short", "group-readable", "missing"])
def test_a_bad_secret_is_refused_without_showing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, problem: str
) -> None:
    path = tmp_path / "secret"
    if problem == "short":
        monkeypatch.setenv("NR_LLM_SECRET", "SHORT-SECRET-CANARY")
    else:
        if problem == "group-readable":
            path.write_text("SECRET-FILE-CANARY" * 3)
            os.chmod(path, 0o640)
        monkeypatch.setenv("NR_LLM_SECRET_FILE", str(path))
    with pytest.raises(ConfigurationError) as refused:
        _signing.host_key()
    assert "CANARY" not in str(refused.value)


def test_macs_bind_their_purpose_and_every_part(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NR_LLM_SECRET", "k" * 40)
    one = _signing.mac("p", b"ab", b"c")
    assert _signing.mac_matches(one, "p", b"ab", b"c")
    assert not _signing.mac_matches(one, "p", b"a", b"bc")  # parts are length-prefixed
    assert not _signing.mac_matches(one, "q", b"ab", b"c")
    assert not _signing.mac_matches("é" + one[1:], "p", b"ab", b"c")  # any str, no TypeError
    assert not _signing.mac_matches(None, "p", b"ab", b"c")
