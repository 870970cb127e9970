"""Paths an attacker can hand the trusted-file reader: red-team of ADR 0031.

Each refusal is a :class:`PrivateFileError` (the callers word it as theirs): a path with a NUL
byte (which the Python API, unlike argv or the environment, can carry) escaped as the
``ValueError`` of ``os.stat``, so the configuration reader raised that instead of a
``ConfigurationError``. The rest held and are pinned here: a configuration that is a symbolic
link to a FIFO is refused without opening it (no writer: an open would block without
``O_NONBLOCK``), and a ``/proc/self/fd`` path is judged as a link.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nr_llm_core._private_files import PrivateFileError, Refusal, read_private_file
from nr_llm_core.config import load_config
from nr_llm_core.errors import ConfigurationError


def _read(path: str | Path, *, follow: bool = False) -> bytes:
    return read_private_file(
        path, limit=4096, owner="self or root", forbidden_mode=0o022, follow_symlinks=follow
    )


@pytest.mark.parametrize("follow", [False, True])
def test_a_path_with_a_nul_byte_is_a_refusal(tmp_path: Path, follow: bool) -> None:
    """Tries: a path with an embedded NUL (``name\\0suffix``) next to a real file."""
    (tmp_path / "name").write_text("x = 1\n")
    with pytest.raises(PrivateFileError) as info:
        _read(f"{tmp_path}/name\0suffix", follow=follow)
    assert info.value.reason is Refusal.UNREADABLE
    assert "suffix" not in str(info.value)


def test_a_configuration_path_with_a_nul_byte_is_a_configuration_error(tmp_path: Path) -> None:
    """Tries: ``load_config`` with a NUL in the path it is given."""
    with pytest.raises(ConfigurationError):
        load_config(tmp_path / "config\0.toml")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_a_configuration_linked_to_a_fifo_is_refused_without_opening_it(tmp_path: Path) -> None:
    """Tries: the configuration reader follows links; a link to a FIFO that nobody writes
    (an open without O_NONBLOCK would wait forever; this test would hang)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    link = tmp_path / "config.toml"
    link.symlink_to(fifo)
    with pytest.raises(PrivateFileError) as info:
        _read(link, follow=True)
    assert info.value.reason is Refusal.NOT_REGULAR
    with pytest.raises(ConfigurationError):
        load_config(link)


def test_a_proc_self_fd_path_is_a_link(tmp_path: Path) -> None:
    """Tries: ``/proc/self/fd/N`` for a descriptor on a trusted-looking file, where links
    are not followed."""
    target = tmp_path / "secret"
    target.write_text("s")
    target.chmod(0o600)
    fd = os.open(target, os.O_RDONLY)
    try:
        proc = f"/proc/self/fd/{fd}"
        if not os.path.islink(proc):
            pytest.skip("no /proc")
        with pytest.raises(PrivateFileError) as info:
            _read(proc)
        assert info.value.reason is Refusal.SYMLINK
    finally:
        os.close(fd)
