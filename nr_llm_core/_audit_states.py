"""Suspended run states on disk: one owner-only file per suspension, beside the database.

A suspended run's state holds the conversation (the prompt, earlier tool output, the pending
arguments) at every privacy level: the run cannot resume without it. It is kept out of the
SQLite file on purpose. An UPDATE that clears a column leaves the old page image in the WAL
until a checkpoint, and a checkpoint cannot reset the WAL while another connection reads an
older snapshot; a file of its own can be overwritten and unlinked the moment the run is
resumed, settled or discarded, whoever else has the database open.

The directory is ``<database>-suspended/`` (0700). Each file (0600) has a random name chosen
here, never one derived from a run id, and is written under a temporary name, flushed and
renamed into place. The run's row holds the name and the SHA-256 of the bytes; the store
writes a file only inside a database write transaction, so a file that no row names is an
orphan of a crash and :func:`sweep` (run with the write lock held) removes it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
from collections.abc import Collection
from pathlib import Path
from typing import Final

__all__ = ["StateFileError", "has_files", "read", "state_dir", "sweep", "wipe", "write"]

_SUFFIX: Final = "-suspended"
_NAME_RE: Final = re.compile(r"[0-9a-f]{32}\.json")
_ZEROS: Final = bytes(65536)


class StateFileError(Exception):
    """The state file is missing, unreadable, or not the bytes its row recorded."""


def state_dir(db: Path) -> Path:
    """The directory holding the suspended states of the database at ``db``."""
    return db.with_name(db.name + _SUFFIX)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write(directory: Path, data: bytes) -> tuple[str, str]:
    """Write ``data`` to a new file in ``directory``; return its name and SHA-256."""
    directory.mkdir(mode=0o700, exist_ok=True)
    name = secrets.token_hex(16) + ".json"
    temporary = directory / f".{name}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb", closefd=False) as out:
            out.write(data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        wipe(directory, temporary.name)
        raise
    os.close(fd)
    os.replace(temporary, directory / name)
    _sync_directory(directory)
    return name, _sha256(data)


def read(directory: Path, name: str, sha256: str) -> bytes:
    """The bytes of state file ``name``; :class:`StateFileError` unless they hash to ``sha256``."""
    if not _NAME_RE.fullmatch(name):  # a row names only files this module made
        raise StateFileError("not a state file name")
    try:
        fd = os.open(directory / name, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        raise StateFileError("missing") from None
    with os.fdopen(fd, "rb") as source:
        data = source.read()
    if _sha256(data) != sha256:
        raise StateFileError("altered")
    return data


def wipe(directory: Path, name: str) -> None:
    """Overwrite file ``name`` with zeros, flush it, and unlink it; a missing file is fine.

    Zeros first: a process that still has the file open reads nothing of the state, and on an
    in-place filesystem the old blocks are overwritten too (a copy-on-write filesystem or an
    SSD may keep them: that is below what a file API can reach).
    """
    path = directory / name
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return
    except OSError:
        fd = -1  # not a regular file we can write (a symlink, a directory): just remove it
    if fd >= 0:
        try:
            remaining = os.fstat(fd).st_size
            while remaining > 0:
                remaining -= os.write(fd, _ZEROS[: min(remaining, len(_ZEROS))])
            os.fsync(fd)
        except OSError:
            pass  # unlinked below all the same
        finally:
            os.close(fd)
    with contextlib.suppress(FileNotFoundError, IsADirectoryError, PermissionError):
        os.unlink(path)


def sweep(directory: Path, keep: Collection[str]) -> int:
    """Wipe every file in ``directory`` whose name is not in ``keep``; return how many.

    Call it with the database's write lock held: only then is every file that a committed
    row names in ``keep``, and no other writer is between writing a file and committing."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return 0
    removed = 0
    for name in names:
        if name not in keep:
            wipe(directory, name)
            removed += 1
    return removed


def has_files(directory: Path) -> bool:
    """Whether ``directory`` exists and holds anything (a cheap test before a sweep)."""
    try:
        with os.scandir(directory) as entries:
            return any(True for _ in entries)
    except (FileNotFoundError, NotADirectoryError):
        return False


def _sync_directory(directory: Path) -> None:
    # The rename is durable once the directory entry is flushed.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
