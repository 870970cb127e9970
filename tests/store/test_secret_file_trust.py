"""The host secret file under attack: the same mistakes as in the state folder.

The host secret keys every approval digest (ADR 0024): whoever knows it can sign an altered
state. A FIFO where the file belongs hung every process that signs or checks a state (the open
waited for a writer); a file of another user's, which that user wrote and so knows, was used
as long as its mode was 0600 (a process running as root can read it).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from nr_llm_core import _signing
from nr_llm_core.errors import ConfigurationError

POSIX_ONLY = pytest.mark.skipif(os.name != "posix", reason="FIFOs and owners")
# A generous bound on something that takes microseconds: only an open blocked for ever on a
# FIFO reaches it. Not a timing claim.
HANG_BOUND = 15.0


@POSIX_ONLY
def test_a_fifo_named_as_the_secret_file_is_refused_without_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = tmp_path / "secret"
    os.mkfifo(fifo, 0o600)
    monkeypatch.setenv("NR_LLM_SECRET_FILE", str(fifo))
    outcome: list[object] = []

    def sign() -> None:
        try:
            outcome.append(_signing.host_key())
        except ConfigurationError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=sign, daemon=True)
    thread.start()
    thread.join(HANG_BOUND)
    if thread.is_alive():  # free the blocked open before failing
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        thread.join(HANG_BOUND)
        pytest.fail("host_key() waited on a FIFO")
    (refused,) = outcome
    assert isinstance(refused, ConfigurationError)
    assert "not a regular file" in str(refused)


@POSIX_ONLY
def test_another_users_secret_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A private file (0600) that someone else owns, and so wrote and knows."""
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    path = tmp_path / "secret"
    path.write_text("OTHER-USERS-SECRET-CANARY" * 2)
    path.chmod(0o600)
    os.chown(path, 65534, 65534)
    monkeypatch.setenv("NR_LLM_SECRET_FILE", str(path))
    with pytest.raises(ConfigurationError, match="belongs to another user") as refused:
        _signing.host_key()
    assert "CANARY" not in str(refused.value)
