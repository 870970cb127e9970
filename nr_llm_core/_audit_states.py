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

Anyone who can put entries in the directory is an adversary here: no entry is opened in a way
that can block (a FIFO), followed (a symbolic link), or zeroed unless it is a regular file of
ours with no other name (a hard link to a file elsewhere); and no state is written into a
directory that is not ours alone (:class:`StateFolderError`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import stat
from collections.abc import Collection
from pathlib import Path
from typing import Final

from nr_llm_core._audit_records import AuditStoreError
from nr_llm_core._private_files import PrivateFileError, Refusal, open_regular, read_private_file

__all__ = [
    "MAX_STATE_BYTES",
    "StateFileError",
    "StateFolderError",
    "has_files",
    "read",
    "state_dir",
    "sweep",
    "wipe",
    "write",
]

_SUFFIX: Final = "-suspended"
_NAME_RE: Final = re.compile(r"[0-9a-f]{32}\.json")
_ZEROS: Final = bytes(65536)
#: The most bytes a state file may hold: far above any conversation a provider accepts, and
#: what a claim reads at most (a larger file is refused unread, never loaded whole).
MAX_STATE_BYTES: Final = 64 << 20
# Never follow a link, never wait on a FIFO or a device (O_NONBLOCK: open returns at once;
# what it opened is then checked with fstat, on the descriptor, so it cannot be swapped).
_NO_SURPRISES: Final = os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class StateFileError(Exception):
    """The state file is missing, unreadable, or not the bytes its row recorded."""


class StateFolderError(AuditStoreError):
    """The state directory exists but is not ours alone (a symbolic link or not a directory,
    another user's, or writable by others): no state is written into it."""


def state_dir(db: Path) -> Path:
    """The directory holding the suspended states of the database at ``db``."""
    return db.with_name(db.name + _SUFFIX)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write(directory: Path, data: bytes) -> tuple[str, str]:
    """Write ``data`` to a new file in ``directory``; return its name and SHA-256.

    :class:`StateFolderError` when ``directory`` exists and is not ours alone;
    :class:`~nr_llm_core._audit_records.AuditStoreError` when ``data`` is over
    :data:`MAX_STATE_BYTES` (it could not be read back)."""
    if len(data) > MAX_STATE_BYTES:
        raise AuditStoreError(
            f"a suspended run's state is at most {MAX_STATE_BYTES} bytes, this one "
            f"{len(data)}: it is not saved"
        )
    with contextlib.suppress(FileExistsError):
        directory.mkdir(mode=0o700)
    _check_folder(directory)
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


def _check_folder(directory: Path) -> None:
    """Raise :class:`StateFolderError` unless ``directory`` is a real directory (not a link),
    owned by this process's user, that nobody else can write to. Its owner or a writer could
    rename a state out of the store's reach (so it outlives the suspension) or swap entries."""
    info = os.lstat(directory)
    where = f"the suspended-state folder {str(directory)!r}"
    if not stat.S_ISDIR(info.st_mode):
        raise StateFolderError(
            f"{where} is not a directory (a symbolic link or another file): remove it and the "
            "store makes its own"
        )
    if info.st_uid != os.geteuid():
        raise StateFolderError(
            f"{where} belongs to another user (uid {info.st_uid}): suspended conversations "
            "are not written into it; remove it, or use a database in a folder of your own"
        )
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise StateFolderError(
            f"{where} can be written by others (mode {stat.S_IMODE(info.st_mode):04o}): "
            f"suspended conversations are not written into it; make it private (chmod 700)"
        )


def read(directory: Path, name: str, sha256: str) -> bytes:
    """The bytes of state file ``name``; :class:`StateFileError` unless it is a regular file
    of at most :data:`MAX_STATE_BYTES` whose bytes hash to ``sha256``.

    Anyone's file is read: the hash the row recorded decides whether these are the bytes
    this module wrote, whoever owns them now."""
    if not _NAME_RE.fullmatch(name):  # a row names only files this module made
        raise StateFileError("not a state file name")
    try:
        data = read_private_file(
            directory / name, limit=MAX_STATE_BYTES, owner="anyone", forbidden_mode=0
        )
    except PrivateFileError as exc:
        if exc.reason is Refusal.TOO_BIG:
            raise StateFileError("over the size of a state") from None
        raise StateFileError("missing or not a regular file") from None
    if _sha256(data) != sha256:
        raise StateFileError("altered")
    return data


def wipe(directory: Path, name: str) -> None:
    """Overwrite file ``name`` with zeros, flush it, and unlink it; a missing file is fine.

    Zeros first: a process that still has the file open reads nothing of the state, and on an
    in-place filesystem the old blocks are overwritten too (a copy-on-write filesystem or an
    SSD may keep them: that is below what a file API can reach). Only a regular file of ours
    with this one name is zeroed: a link, a FIFO, a device, a directory, another user's file
    or a hard link to a file elsewhere (whose bytes are someone's data, not a state this
    module wrote) is only unlinked, never opened for writing in a way that follows or blocks.
    """
    path = directory / name
    try:
        fd, info = open_regular(path, os.O_WRONLY)
    except PrivateFileError:
        pass  # not a regular file by this name: only unlinked
    else:
        try:
            ours = info.st_nlink == 1 and info.st_uid == os.geteuid()
            remaining = info.st_size if ours else 0
            while remaining > 0:
                remaining -= os.write(fd, _ZEROS[: min(remaining, len(_ZEROS))])
            if ours:
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
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NO_SURPRISES)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
