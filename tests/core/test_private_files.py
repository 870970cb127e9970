"""Every file the host trusts, under the same attacks: the host secret (``$NR_LLM_SECRET_FILE``),
the keys file, the configuration file and a suspended run's state file, each read through its
real entry point from a real entry in ``tmp_path``.

Each reader has its own rules (the table ``EXPECT``): the secret and the keys are private
(nothing for group or others), the configuration only must not be writable by others (and
a symbolic link to it is followed), a state file is anyone's bytes whose hash the row records.
What they share: only a regular file is ever opened (a FIFO, a directory or a device never is),
every decision is taken on the opened descriptor (an entry swapped between the check and the
open is judged as what was opened), and no reader reads past its limit: a sparse 1 GiB file is
refused without a byte of it read, one that grows after the check no further than the limit.
Bytes read are the kernel's count for this process (``rchar`` in ``/proc/self/io``), never a
clock.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import platformdirs  # noqa: F401  # imported now: no lazy import counts as bytes a reader read
import pytest

from nr_llm_core import _audit_states, _signing
from nr_llm_core._private_files import PrivateFileError, Refusal, read_private_file
from nr_llm_core.config import load_config
from nr_llm_core.errors import ConfigurationError
from nr_llm_core.keys import find_key, keys_path

pytestmark = pytest.mark.skipif(os.name != "posix", reason="FIFOs, devices, owners and modes")
ROOT_ONLY = pytest.mark.skipif(
    os.name != "posix" or os.geteuid() != 0,
    reason="giving a file to another user, or making a device node, needs root",
)
GIB = 1 << 30
# What reading /proc/self/io itself and the interpreter's own bookkeeping may add to the count.
SLACK = 64 * 1024


# -- the four readers -----------------------------------------------------------------------


class Reader:
    """One trusted-file reader: where it reads, what it accepts and what it returns."""

    name: ClassVar[str]
    limit: ClassVar[int]
    valid: ClassVar[bytes]
    value: ClassVar[object]
    too_big: ClassVar[str]  # the words of its refusal of a file over the limit

    def place(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        """The path this reader reads (its directory made, owner-only)."""
        raise NotImplementedError

    def read(self, path: Path) -> object:
        """Read through the real entry point."""
        raise NotImplementedError

    def wrote(self, data: bytes) -> None:
        """``data`` was written as this reader's own program writes it (see States)."""


class Secret(Reader):
    name = "secret"
    limit = 4096
    valid = b"host-secret-" + b"s" * 40 + b"\n"
    value = valid.strip()
    too_big = "a secret file is at most 4 KiB"

    def place(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        path = tmp_path / "secret"
        monkeypatch.setenv(_signing.SECRET_FILE_ENV_VAR, str(path))
        return path

    def read(self, path: Path) -> object:
        return _signing.host_key()


class Keys(Reader):
    name = "keys"
    limit = 64 * 1024
    valid = b'{"OPENAI_API_KEY": "sk-test-private-files"}\n'
    value = "sk-test-private-files"
    too_big = "is not a keys file (over 65536 bytes)"

    def place(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        path = keys_path()
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        return path

    def read(self, path: Path) -> object:
        assert path == keys_path()
        return find_key("OPENAI_API_KEY", {})


class Config(Reader):
    name = "config"
    limit = 1 << 20
    valid = b'[providers]\ndefault = "openai"\n'
    value = "openai"
    too_big = "a configuration file is at most 1 MiB"

    def place(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        return tmp_path / "config.toml"

    def read(self, path: Path) -> object:
        return load_config(path, environ={})["providers.default"]


class States(Reader):
    name = "state"
    limit = 64 << 20
    valid = b'{"messages": [], "pending": []}'
    value = valid
    too_big = "over the size of a state"

    def __init__(self) -> None:
        self.sha256 = hashlib.sha256(self.valid).hexdigest()

    def place(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        directory = tmp_path / "audit.db-suspended"
        directory.mkdir(mode=0o700)
        return directory / ("ab" * 16 + ".json")

    def read(self, path: Path) -> object:
        return _audit_states.read(path.parent, path.name, self.sha256)

    def wrote(self, data: bytes) -> None:
        # The store records the hash of what it wrote: as if it had written these bytes.
        self.sha256 = hashlib.sha256(data).hexdigest()


READERS = [Secret, Keys, Config, States]


def outcome(reader: Reader, path: Path) -> object:
    """What the reader returns, or ``Refused`` with its message."""
    try:
        return reader.read(path)
    except (ConfigurationError, _audit_states.StateFileError) as exc:
        return Refused(str(exc))


class Refused:
    """A refusal with the message ``words``; as an expectation, with ``words`` in it."""

    def __init__(self, words: str) -> None:
        self.words = words

    def __repr__(self) -> str:
        return f"Refused({self.words!r})"


def assert_outcome(reader: Reader, got: object, expected: object) -> None:
    """``got`` is ``expected`` (``READ``: the reader's value for valid content)."""
    if isinstance(expected, Refused):
        assert isinstance(got, Refused), f"read {got!r}, expected {expected!r}"
        assert expected.words in got.words
    else:
        assert got == (reader.value if expected is READ else expected)


def put(reader: Reader, path: Path, data: bytes, mode: int = 0o600) -> None:
    """Write ``data`` at ``path`` with ``mode``, as the reader's own program would."""
    path.write_bytes(data)
    path.chmod(mode)
    reader.wrote(data)


def sparse(reader: Reader, path: Path, size: int, *, recorded: bool) -> None:
    """A sparse file of ``size`` zero bytes (nothing on disk); ``recorded``: its hash is the
    state row's (so only its size can refuse it)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.ftruncate(fd, size)
    os.close(fd)
    if recorded:
        digest = hashlib.sha256()
        chunk = bytes(1 << 20)
        for _ in range(size >> 20):
            digest.update(chunk)
        digest.update(bytes(size & ((1 << 20) - 1)))
        if isinstance(reader, States):
            reader.sha256 = digest.hexdigest()


def bytes_read() -> int:
    """Bytes this process has read through system calls so far (``rchar``)."""
    with open("/proc/self/io", "rb") as fh:
        for line in fh:
            if line.startswith(b"rchar:"):
                return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


@pytest.fixture(params=READERS, ids=lambda r: r.name)
def reader(request: pytest.FixtureRequest) -> Reader:
    made: Reader = request.param()
    return made


@pytest.fixture
def path(reader: Reader, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return reader.place(tmp_path, monkeypatch)


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every ``os.open`` of this test, as (path, flags): the call itself goes through."""
    calls: list[tuple[str, int]] = []
    real = os.open

    def spy(file: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        calls.append((os.fsencode(file).decode("utf-8", "surrogateescape"), flags))
        return real(file, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    return calls


# -- what each reader makes of each entry ---------------------------------------------------

READ = object()  # the reader's value for its valid content


def _elsewhere(tmp_path: Path, reader: Reader, mode: int = 0o600) -> Path:
    other = tmp_path / "elsewhere"
    put(reader, other, reader.valid, mode)
    return other


def regular(r: Reader, p: Path, t: Path) -> None:
    put(r, p, r.valid)


def symlink(r: Reader, p: Path, t: Path) -> None:
    p.symlink_to(_elsewhere(t, r))


def symlink_to_group_writable(r: Reader, p: Path, t: Path) -> None:
    p.symlink_to(_elsewhere(t, r, 0o660))


def hard_link(r: Reader, p: Path, t: Path) -> None:
    os.link(_elsewhere(t, r), p)


def fifo(r: Reader, p: Path, t: Path) -> None:
    os.mkfifo(p, 0o600)


def directory(r: Reader, p: Path, t: Path) -> None:
    p.mkdir(mode=0o700)


def missing(r: Reader, p: Path, t: Path) -> None:
    pass


def empty(r: Reader, p: Path, t: Path) -> None:
    put(r, p, b"")


def not_utf8(r: Reader, p: Path, t: Path) -> None:
    put(r, p, b"\xff\xfe" + r.valid)


def mode(bits: int) -> Callable[[Reader, Path, Path], None]:
    def loosen(r: Reader, p: Path, t: Path) -> None:
        put(r, p, r.valid, bits)

    loosen.__name__ = f"mode_{bits:04o}"
    return loosen


def another_users(r: Reader, p: Path, t: Path) -> None:
    put(r, p, r.valid)
    os.chown(p, 65534, 65534)


def char_device(r: Reader, p: Path, t: Path) -> None:
    os.mknod(p, 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero's numbers


def null_device(r: Reader, p: Path, t: Path) -> None:
    os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers


NOT_REGULAR = {
    "secret": Refused("the secret file is not a regular file"),
    "keys": Refused("is not a regular file: remove it"),
    "config": Refused("is not a regular file: name the configuration file"),
    "state": Refused("missing or not a regular file"),
}
SYMLINK = {
    "secret": Refused("the secret file is a symbolic link"),
    "keys": Refused("is a symbolic link: nr-llm reads keys only from a regular file there"),
    "state": Refused("missing or not a regular file"),
}
PRIVATE = {
    "secret": Refused("the secret file must be readable by its owner only"),
    "config": READ,
    "state": READ,
}
ANOTHER_USER = {
    "secret": Refused("the secret file belongs to another user"),
    "keys": Refused("belongs to another user: nr-llm reads only a keys file of yours"),
    "config": Refused("belongs to another user, who could change where your API keys are sent"),
    "state": READ,  # the row's hash decides: the bytes are the ones the store wrote
}
KEYS_READABLE = Refused("can be read by other users (permissions 0")
KEYS_WRITABLE = Refused("can be changed by other users (permissions 0")
CONFIG_WRITABLE = Refused("can be changed by other users (permissions 0")

#: entry -> reader -> what the reader makes of it (``READ``: its value for valid content).
EXPECT: dict[Callable[[Reader, Path, Path], None], dict[str, object]] = {
    regular: dict.fromkeys(("secret", "keys", "config", "state"), READ),
    symlink: {**SYMLINK, "config": READ},  # a dotfile manager's link is followed
    symlink_to_group_writable: {**SYMLINK, "config": CONFIG_WRITABLE},
    hard_link: {
        "secret": READ,
        "keys": Refused("has another name (a hard link)"),
        "config": READ,
        "state": READ,
    },
    fifo: NOT_REGULAR,
    directory: NOT_REGULAR,
    missing: {
        "secret": Refused("cannot read the secret file (No such file or directory)"),
        "keys": None,
        "config": Refused("cannot read the configuration file (No such file or directory)"),
        "state": Refused("missing or not a regular file"),
    },
    empty: {
        "secret": Refused("the host secret needs at least 32 characters"),
        "keys": None,
        "config": "scripted",  # an empty file says nothing: the default
        "state": b"",  # bytes as the row recorded them; the store decodes them
    },
    not_utf8: {
        "secret": Refused("the secret file is not UTF-8 text"),
        "keys": Refused("is not a keys file (not a JSON object)"),
        "config": Refused("not UTF-8 text"),
        "state": b"\xff\xfe" + States.valid,
    },
    mode(0o640): {**PRIVATE, "keys": KEYS_READABLE},
    mode(0o604): {**PRIVATE, "keys": KEYS_READABLE},
    mode(0o620): {**PRIVATE, "keys": KEYS_WRITABLE, "config": CONFIG_WRITABLE},
    mode(0o602): {**PRIVATE, "keys": KEYS_WRITABLE, "config": CONFIG_WRITABLE},
    mode(0o610): {**PRIVATE, "keys": Refused("is open to other users (permissions 0610)")},
    another_users: ANOTHER_USER,
    char_device: NOT_REGULAR,
    null_device: {**NOT_REGULAR, "config": "scripted"},  # NR_LLM_CONFIG=/dev/null: no file
}
NEEDS_ROOT = {another_users, char_device, null_device}
NEVER_OPENED = {fifo, directory, char_device, null_device}


CASES = [
    pytest.param(entry, marks=[ROOT_ONLY] * (entry in NEEDS_ROOT), id=entry.__name__)
    for entry in EXPECT
]


@pytest.mark.parametrize("entry", CASES)
def test_what_each_reader_makes_of_an_entry(
    reader: Reader,
    path: Path,
    tmp_path: Path,
    entry: Callable[[Reader, Path, Path], None],
    opened: list[tuple[str, int]],
) -> None:
    """Put the entry where the reader reads and read: each reader's rule (``EXPECT``) holds,
    a refusal names the path (every reader but the state's, whose message is for the store),
    and what is not a regular file is refused without being opened, so a FIFO cannot block it
    and a device's open cannot act."""
    entry(reader, path, tmp_path)
    expected = EXPECT[entry][reader.name]
    got = outcome(reader, path)
    assert_outcome(reader, got, expected)
    if isinstance(got, Refused) and reader.name in ("keys", "config"):
        assert str(path) in got.words
    if entry in NEVER_OPENED:
        assert [flags for name, flags in opened if name == str(path)] == []


# -- the limit ------------------------------------------------------------------------------


def test_a_sparse_gigabyte_is_refused_without_reading_it(reader: Reader, path: Path) -> None:
    """1 GiB (sparse: nothing on disk) where the reader reads: refused on the size the
    descriptor reports, before a byte of it is read."""
    sparse(reader, path, GIB, recorded=False)
    before = bytes_read()
    got = outcome(reader, path)
    spent = bytes_read() - before
    assert_outcome(reader, got, Refused(reader.too_big))
    assert spent < SLACK, f"{spent} bytes read to refuse a 1 GiB file"


def test_exactly_the_limit_is_read_and_one_byte_more_is_refused(reader: Reader, path: Path) -> None:
    """The limit is inclusive: a file of exactly ``limit`` bytes is read (padded valid
    content), one of ``limit + 1`` is refused, whatever else it holds."""
    pad = b" " if reader.name in ("keys", "config") else b"s"
    if isinstance(reader, States):
        sparse(reader, path, reader.limit, recorded=True)
        assert outcome(reader, path) == bytes(reader.limit)
    else:
        put(reader, path, reader.valid.strip().ljust(reader.limit, pad))
        got = outcome(reader, path)
        assert got == (
            reader.valid.strip().ljust(reader.limit, pad)
            if reader.name == "secret"
            else reader.value
        )
    path.unlink()
    if isinstance(reader, States):
        sparse(reader, path, reader.limit + 1, recorded=True)
    else:
        put(reader, path, reader.valid.strip().ljust(reader.limit + 1, pad))
    assert_outcome(reader, outcome(reader, path), Refused(reader.too_big))


def test_a_file_that_grows_after_the_check_is_read_no_further_than_the_limit(
    reader: Reader, path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file passes every check on the descriptor, then grows to 1 GiB before the read
    (``fstat`` is wrapped to extend it right after it answered): the reader stops after
    ``limit + 1`` bytes and refuses, rather than reading what the file became."""
    put(reader, path, reader.valid)
    real = os.fstat
    target = os.stat(path)

    def grows(fd: int) -> os.stat_result:
        info = real(fd)
        if (info.st_dev, info.st_ino) == (target.st_dev, target.st_ino):
            os.truncate(path, GIB)
        return info

    monkeypatch.setattr(os, "fstat", grows)
    before = bytes_read()
    got = outcome(reader, path)
    spent = bytes_read() - before
    assert_outcome(reader, got, Refused(reader.too_big))
    assert spent <= reader.limit + 1 + SLACK, f"{spent} bytes read, limit {reader.limit}"


# -- swapped between the check and the open -------------------------------------------------


def _to_fifo(p: Path) -> None:
    p.unlink()
    os.mkfifo(p, 0o600)


def _to_group_writable(p: Path) -> None:
    p.chmod(0o660)


def _to_another_user(p: Path) -> None:
    os.chown(p, 65534, 65534)


def _to_symlink(p: Path) -> None:
    p.rename(p.with_name("moved-away"))
    p.symlink_to(p.with_name("moved-away"))


SWAPS = {
    _to_fifo: NOT_REGULAR,
    _to_group_writable: {**PRIVATE, "keys": KEYS_READABLE, "config": CONFIG_WRITABLE},
    _to_another_user: ANOTHER_USER,
    _to_symlink: {**SYMLINK, "config": READ},
}


@pytest.mark.parametrize(
    "swap",
    [
        pytest.param(
            s, id=s.__name__.removeprefix("_"), marks=[ROOT_ONLY] * (s is _to_another_user)
        )
        for s in SWAPS
    ],
)
def test_an_entry_swapped_at_the_open_is_judged_as_what_was_opened(
    reader: Reader,
    path: Path,
    swap: Callable[[Path], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A private regular file passes any look at the path; at the moment the reader opens it
    (``os.open`` is wrapped to change the entry first) it becomes a FIFO, group-writable,
    another user's or a symbolic link. The reader judges what it opened: the same verdict
    as for that entry put there from the start, and a FIFO is opened without blocking (the
    wrapper holds its other end, so a blocking open would not hang this test, and fails it)."""
    put(reader, path, reader.valid)
    real = os.open
    flags_seen: list[int] = []
    ends: list[int] = []

    def swapping(file: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if os.fsencode(file) == os.fsencode(path) and not flags_seen:
            swap(path)
            if swap is _to_fifo:
                ends.append(real(path, os.O_RDWR | os.O_NONBLOCK))
        if os.fsencode(file) == os.fsencode(path):
            flags_seen.append(flags)
        return real(file, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", swapping)
    try:
        got = outcome(reader, path)
    finally:
        for fd in ends:
            os.close(fd)
    assert_outcome(reader, got, SWAPS[swap][reader.name])
    assert flags_seen, "the reader never opened the path"
    assert all(flags & os.O_NONBLOCK for flags in flags_seen)


# -- the one reader itself ------------------------------------------------------------------


def test_a_refusal_carries_its_reason_and_nothing_of_the_path_or_the_file(tmp_path: Path) -> None:
    """The one error type says why with a code; its message is the reason's words only, so a
    caller that forgot to word it would still show no path and no byte of the file."""
    path = tmp_path / "SECRET-NAME-CANARY"
    path.write_bytes(b"SECRET-BYTES-CANARY")
    path.chmod(0o640)
    with pytest.raises(PrivateFileError) as refused:
        read_private_file(path, limit=100, owner="self", forbidden_mode=0o077)
    assert refused.value.reason is Refusal.MODE
    assert refused.value.info is not None and stat.S_IMODE(refused.value.info.st_mode) == 0o640
    assert str(refused.value) == "permissions"
    path.chmod(0o600)
    assert read_private_file(path, limit=19, owner="self", forbidden_mode=0o077) == (
        b"SECRET-BYTES-CANARY"
    )
    with pytest.raises(PrivateFileError) as refused:
        read_private_file(path, limit=18, owner="self", forbidden_mode=0o077)
    assert refused.value.reason is Refusal.TOO_BIG
    assert "CANARY" not in str(refused.value)
