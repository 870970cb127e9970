"""Reading a file the host trusts: judged on its open descriptor, never followed or waited on.

The host secret, the keys file, the configuration file and the suspended states are read
here, each with its own rules (:func:`read_private_file`'s parameters). The order is the
point: a ``stat`` of the path first only refuses what is not a regular file, so a FIFO,
a device or a directory is never opened (opening a device can act); then the path is opened
without following a symbolic link (unless asked) and without blocking (``O_NONBLOCK``: a FIFO
swapped in after that ``stat`` cannot hang the open); then everything that admits the file
(its type, owner, mode, links, size) is read from ``fstat`` on the descriptor, which names the
file that will be read whatever happens to the path meanwhile. The read asks for at most
``limit + 1`` bytes in all, so a file that grows after the check is refused, not read whole.

Each refusal is a :class:`PrivateFileError` with a :class:`Refusal` code; the callers word
their own messages. Owner and mode rules apply on POSIX only (elsewhere the file inherits its
directory's ACL).
"""

from __future__ import annotations

import enum
import errno
import os
import stat
from typing import Final, Literal

from nr_llm_core.errors import NrLlmError

__all__ = ["Owner", "PrivateFileError", "Refusal", "open_regular", "read_private_file"]

#: Whose file is trusted: this process's user only, that user or root, or anyone's (when the
#: bytes are checked otherwise, as a state file's hash is).
Owner = Literal["self", "self or root", "anyone"]

_POSIX: Final = os.name == "posix"
# O_NOCTTY: a terminal swapped in after the stat never becomes this process's terminal.
_OPEN_FLAGS: Final = (
    getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
)
_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_CHUNK: Final = 64 * 1024


class Refusal(enum.Enum):
    """Why a trusted file was not read."""

    MISSING = "missing"  #: nothing at the path
    UNREADABLE = "unreadable"  #: the open or a read failed (``PrivateFileError.why`` says how)
    SYMLINK = "symbolic link"  #: a symbolic link where links are not followed
    NOT_REGULAR = "not a regular file"  #: a FIFO, a directory, a device, a socket
    OWNER = "another user's"  #: the owner is not one the caller trusts
    MODE = "permissions"  #: a permission bit the caller forbids is set
    LINKS = "another name"  #: a hard link: the file has more than one name
    TOO_BIG = "over the limit"  #: more bytes than the caller's limit


class PrivateFileError(NrLlmError):
    """A trusted file was refused. ``reason`` is the :class:`Refusal`; ``info`` the status
    that decided it (from ``fstat`` on the descriptor, or from the ``stat`` before the open for
    what was never opened), else ``None``; ``why`` the system's words for ``UNREADABLE`` and
    ``MISSING``, and ``errno`` the system's error number where there was one. The message is
    the reason alone: never the path's bytes or the file's."""

    def __init__(
        self,
        reason: Refusal,
        info: os.stat_result | None = None,
        why: str = "",
        errno: int | None = None,
    ) -> None:
        super().__init__(reason.value)
        self.reason = reason
        self.info = info
        self.why = why
        self.errno = errno


def _refusal(exc: OSError, *, follow_symlinks: bool) -> PrivateFileError:
    why = exc.strerror or type(exc).__name__
    if exc.errno == errno.ENOENT:
        return PrivateFileError(Refusal.MISSING, why=why, errno=exc.errno)
    if exc.errno == errno.ELOOP and not follow_symlinks:  # O_NOFOLLOW met a link
        return PrivateFileError(Refusal.SYMLINK, why=why, errno=exc.errno)
    return PrivateFileError(Refusal.UNREADABLE, why=why, errno=exc.errno)


def open_regular(
    path: str | os.PathLike[str], flags: int, *, follow_symlinks: bool = False
) -> tuple[int, os.stat_result]:
    """A descriptor on ``path`` opened with ``flags`` (``os.O_RDONLY``, ``os.O_WRONLY``) and
    its ``fstat``, when ``path`` is a regular file; else :class:`PrivateFileError`
    (``MISSING``, ``UNREADABLE``, ``SYMLINK`` or ``NOT_REGULAR``). The caller closes it."""
    try:
        # Refuses only: what this says of the path may change before the open below.
        before = os.stat(path) if follow_symlinks else os.lstat(path)
    except OSError as exc:
        raise _refusal(exc, follow_symlinks=follow_symlinks) from None
    except ValueError:  # a NUL byte in the path: no file has that name
        raise PrivateFileError(Refusal.UNREADABLE, why="a NUL byte in the path") from None
    if stat.S_ISLNK(before.st_mode):
        raise PrivateFileError(Refusal.SYMLINK, before)
    if not stat.S_ISREG(before.st_mode):
        raise PrivateFileError(Refusal.NOT_REGULAR, before)
    try:
        fd = os.open(path, flags | _OPEN_FLAGS | (0 if follow_symlinks else _NOFOLLOW))
    except OSError as exc:
        raise _refusal(exc, follow_symlinks=follow_symlinks) from None
    try:
        info = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise _refusal(exc, follow_symlinks=follow_symlinks) from None
    if not stat.S_ISREG(info.st_mode):  # swapped since the stat above
        os.close(fd)
        raise PrivateFileError(Refusal.NOT_REGULAR, info)
    return fd, info


def read_private_file(
    path: str | os.PathLike[str],
    *,
    limit: int,
    owner: Owner,
    forbidden_mode: int,
    follow_symlinks: bool = False,
    single_link: bool = False,
) -> bytes:
    """The bytes of the regular file at ``path``, or :class:`PrivateFileError`.

    Refused, in this order: not a regular file (or a symbolic link, unless
    ``follow_symlinks``); an owner ``owner`` does not admit; a mode with any bit of
    ``forbidden_mode`` (``0o077``: anything for group or others; ``0o022``: writable by
    them); more than one name, with ``single_link``; more than ``limit`` bytes, said by
    ``fstat`` or found by reading at most ``limit + 1``."""
    fd, info = open_regular(path, os.O_RDONLY, follow_symlinks=follow_symlinks)
    try:
        _admit(info, owner=owner, forbidden_mode=forbidden_mode, single_link=single_link)
        if info.st_size > limit:
            raise PrivateFileError(Refusal.TOO_BIG, info)
        return _read_at_most(fd, limit, info)
    finally:
        os.close(fd)


def _admit(info: os.stat_result, *, owner: Owner, forbidden_mode: int, single_link: bool) -> None:
    if _POSIX and owner != "anyone":
        trusted = (os.geteuid(), 0) if owner == "self or root" else (os.geteuid(),)
        if info.st_uid not in trusted:
            raise PrivateFileError(Refusal.OWNER, info)
    if _POSIX and info.st_mode & forbidden_mode:
        raise PrivateFileError(Refusal.MODE, info)
    if single_link and info.st_nlink != 1:
        raise PrivateFileError(Refusal.LINKS, info)


def _read_at_most(fd: int, limit: int, info: os.stat_result) -> bytes:
    chunks: list[bytes] = []
    total = 0
    try:
        while total <= limit:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise PrivateFileError(Refusal.UNREADABLE, info, why) from None
    if total > limit:  # it grew after the fstat
        raise PrivateFileError(Refusal.TOO_BIG, info)
    return b"".join(chunks)
