"""The state folder ``<db>-suspended/`` under attack: what someone who can put entries in it
(another user, when the folder is shared or was made before the store; any process of the
same user) can make the store do.

- A FIFO where the store expects a state file: the sweep on every open, and a claim, open it
  for writing or reading and wait for ever for the other end; the claim does so holding the
  database's write lock, so every other writer of the file stalls too.
- A hard link in the folder to a file outside it: the sweep overwrites "its" orphan with
  zeros, so the other file's bytes are destroyed.
- A folder that exists already and that others can write to or own: the conversation is
  written into it.

Each held on the code before ``nr_llm_core/_audit_states.py`` opened entries without following
or blocking (``O_NOFOLLOW | O_NONBLOCK``), checked what it opened (a regular file; zeroed only
with one link and our owner) and refused a folder that is not ours alone.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from nr_llm_core import AgentRunPersister, _audit_states
from nr_llm_core.audit import AuditStoreError, SuspendedStateError
from nr_llm_core.errors import NrLlmError
from tests.core.test_private_files import bytes_read

from ._support import owned_files

POSIX_ONLY = pytest.mark.skipif(os.name != "posix", reason="FIFOs, links and modes")
CANARY = "STATE-DIR-CANARY-7c31"
STATE = {"messages": [{"role": "user", "content": CANARY}], "pending": []}
# A generous bound on something that takes milliseconds: only a call blocked for ever (on a
# FIFO nobody opens) reaches it. Not a timing claim.
HANG_BOUND = 15.0


def _state_dir(db: Path) -> Path:
    return db.with_name(db.name + "-suspended")


def _finishes(action: Callable[[], object], fifo: Path) -> bool:
    """Whether ``action`` returns (or raises) without blocking on ``fifo``; a blocked call
    is released (both ends of the FIFO opened) before this returns, so no thread is left."""
    done = threading.Event()

    def run() -> None:
        try:
            action()
        except (NrLlmError, OSError):
            pass
        finally:
            done.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    finished = done.wait(HANG_BOUND)
    if not finished:
        # Open the other end: a reader frees a blocked writer and a writer a blocked reader.
        ends = []
        for flags in (os.O_RDONLY | os.O_NONBLOCK, os.O_WRONLY | os.O_NONBLOCK):
            with contextlib.suppress(OSError):
                ends.append(os.open(fifo, flags))
        thread.join(HANG_BOUND)
        for fd in ends:
            os.close(fd)
    return finished


@POSIX_ONLY
def test_a_fifo_in_the_state_folder_does_not_hang_the_store_open(tmp_path: Path) -> None:
    """An entry no run names is swept by every store that opens the database; a FIFO there
    must be removed (or left), not opened for writing and waited on for ever."""
    db = tmp_path / "audit.db"
    AgentRunPersister(db).close()
    folder = _state_dir(db)
    folder.mkdir(mode=0o700, exist_ok=True)
    fifo = folder / ("0" * 32 + ".json")
    os.mkfifo(fifo)
    stores: list[AgentRunPersister] = []
    assert _finishes(lambda: stores.append(AgentRunPersister(db)), fifo)
    for store in stores:
        store.close()


@POSIX_ONLY
def test_a_fifo_in_place_of_a_state_file_does_not_hang_a_claim(tmp_path: Path) -> None:
    """A waiting run's state file replaced by a FIFO: the claim (which holds the write lock
    while it reads) must refuse it as lost, not wait for a writer that never comes."""
    db = tmp_path / "audit.db"
    with AgentRunPersister(db) as store:
        run = store.begin()
        store.suspend(run, STATE)
    (name,) = os.listdir(_state_dir(db))
    state = _state_dir(db) / name
    state.unlink()
    os.mkfifo(state)
    store = AgentRunPersister(db)
    try:
        assert _finishes(lambda: store.claim_suspended(run), state)
    finally:
        store.close()


@POSIX_ONLY
def test_the_sweep_never_zeroes_a_file_linked_from_outside_the_folder(tmp_path: Path) -> None:
    """A hard link in the state folder to a file elsewhere is not a state file the store
    wrote: removing the orphan entry must leave the other file's bytes as they were."""
    db = tmp_path / "audit.db"
    AgentRunPersister(db).close()
    precious = tmp_path / "precious.txt"
    precious.write_text("the user's own data\n", encoding="utf-8")
    folder = _state_dir(db)
    folder.mkdir(mode=0o700, exist_ok=True)
    os.link(precious, folder / ("1" * 32 + ".json"))
    AgentRunPersister(db).close()  # the open sweeps orphans
    assert precious.read_text(encoding="utf-8") == "the user's own data\n"


@POSIX_ONLY
@pytest.mark.parametrize("how", ["world-writable", "another user's"])
def test_a_state_folder_others_control_gets_no_conversation(tmp_path: Path, how: str) -> None:
    """The folder exists before the store made it: writable by everyone, or someone else's.
    Its owner can rename a state file out of the store's reach (it then outlives the
    suspension) or swap entries; the store must refuse to suspend into it rather than write
    the conversation there."""
    db = tmp_path / "audit.db"
    folder = _state_dir(db)
    folder.mkdir()
    if how == "another user's":
        if os.geteuid() != 0:
            pytest.skip("giving a folder to another user needs root")
        os.chown(folder, 65534, 65534)
        folder.chmod(0o755)
    else:
        folder.chmod(0o777)
    with AgentRunPersister(db) as store:
        run = store.begin()
        with pytest.raises(AuditStoreError):
            store.suspend(run, STATE)
    assert not [name for name, data in owned_files(db).items() if CANARY.encode() in data]


@POSIX_ONLY
def test_a_state_file_swapped_for_a_symlink_is_neither_followed_nor_zeroed(
    tmp_path: Path,
) -> None:
    """A waiting run's state file replaced by a symbolic link to a copy of the same bytes
    elsewhere (so its hash matches): the claim refuses it as lost, and discarding the run
    removes the link without writing to the file it points to. (Holds today.)"""
    db = tmp_path / "audit.db"
    with AgentRunPersister(db) as store:
        run = store.begin()
        store.suspend(run, STATE)
    (name,) = os.listdir(_state_dir(db))
    state = _state_dir(db) / name
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_bytes(state.read_bytes())
    state.unlink()
    state.symlink_to(elsewhere)
    with AgentRunPersister(db) as store:
        with pytest.raises(SuspendedStateError):
            store.claim_suspended(run)
        store.discard(run)
    assert not os.path.lexists(state)
    assert CANARY.encode() in elsewhere.read_bytes()  # the link's target was not wiped


@POSIX_ONLY
def test_a_state_file_grown_to_a_gigabyte_is_refused_unread(tmp_path: Path) -> None:
    """A waiting run's state file extended to 1 GiB (sparse: nothing on disk): the claim
    refuses it as lost on the size its descriptor reports, without reading it into memory
    (the kernel's count of bytes this process read, not a clock), and the run still waits."""
    db = tmp_path / "audit.db"
    with AgentRunPersister(db) as store:
        run = store.begin()
        store.suspend(run, STATE)
    (name,) = os.listdir(_state_dir(db))
    os.truncate(_state_dir(db) / name, 1 << 30)
    with AgentRunPersister(db) as store:
        before = bytes_read()
        with pytest.raises(SuspendedStateError):
            store.claim_suspended(run)
        spent = bytes_read() - before
        assert store.get_run(run)["status"] == "suspended"
    assert spent < 16 << 20, f"{spent} bytes read to refuse a 1 GiB state file"


def test_a_state_over_the_limit_is_not_written(tmp_path: Path) -> None:
    """A state the reader would refuse (over 64 MiB, ``MAX_STATE_BYTES``) is refused when
    written, with no file left behind, rather than saved and then lost at the claim."""
    folder = tmp_path / "audit.db-suspended"
    with pytest.raises(AuditStoreError, match="it is not saved"):
        _audit_states.write(folder, bytes((64 << 20) + 1))
    assert not folder.exists() or os.listdir(folder) == []
    assert _audit_states.MAX_STATE_BYTES == 64 << 20
    name, sha256 = _audit_states.write(folder, b"{}")
    assert _audit_states.read(folder, name, sha256) == b"{}"
