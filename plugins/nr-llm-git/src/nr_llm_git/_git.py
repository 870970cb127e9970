"""Running ``git`` safely: argument lists, one configured repository, bounded output, timeouts.

The model chooses revisions and paths, never the repository, the command or its options. A
revision is resolved to a commit id with ``rev-parse --verify --end-of-options`` before use; a
path is a relative path inside the repository. ``git`` runs with the user's and the system's
configuration ignored and with every option that could run a helper program switched off.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
from pathlib import Path, PurePosixPath
from typing import Final

__all__ = [
    "ENV_REPO",
    "MAX_OUTPUT_BYTES",
    "TIMEOUT_SECONDS",
    "GitError",
    "GitOutput",
    "check_path",
    "repository",
    "resolve_commit",
    "run_git",
]

#: The repository the tools read. Unset: the current working directory.
ENV_REPO: Final = "NR_LLM_GIT_REPO"
#: Output beyond this is not read (the command is stopped).
MAX_OUTPUT_BYTES: Final = 200_000
TIMEOUT_SECONDS: Final = 10.0

# Options that keep read-only commands from running helpers a repository's config may name.
_SAFE_CONFIG: Final = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.pager=cat",
    "-c",
    "diff.external=",
    "-c",
    "core.quotePath=false",
    "--no-pager",
    "--literal-pathspecs",
)
_REVISION_RE: Final = re.compile(r"[A-Za-z0-9_./@^~{}-]{1,200}")


class GitError(Exception):
    """A git call was refused or failed; the message is written for the model to read."""


class GitOutput:
    """The (possibly cut) standard output of one git call."""

    __slots__ = ("data", "truncated")

    def __init__(self, data: bytes, truncated: bool) -> None:
        self.data = data
        self.truncated = truncated

    def text(self) -> str:
        """The output as text (invalid UTF-8 replaced)."""
        return self.data.decode("utf-8", "replace")


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        GIT_OPTIONAL_LOCKS="0",  # status must not write the index: the tools are read-only
        LC_ALL="C",
    )
    return env


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):  # it has exited already
        os.killpg(proc.pid, signal.SIGKILL)


def _filter_overrides(repo: Path) -> list[str]:
    """``-c filter.X.clean=`` (and smudge, process) for every filter driver the repository's
    configuration names: an empty command switches the driver off, so ``status`` and ``diff``
    never run one. ``git config`` itself runs nothing."""
    out = _run(
        ["git", "-C", str(repo), "config", "--null", "--name-only", "--get-regexp", r"^filter\."],
        MAX_OUTPUT_BYTES,
        "config",
        allow_status=(0, 1),  # 1: no such key
    )
    options: list[str] = []
    for name in out.data.split(b"\0"):
        key = name.decode("utf-8", "replace")
        if key.endswith((".clean", ".smudge", ".process")):
            options += ["-c", f"{key}="]
    return options


def run_git(repo: Path, *args: str, limit: int = MAX_OUTPUT_BYTES) -> GitOutput:
    """Run ``git -C repo <safe options> args`` (no shell) and read at most ``limit`` bytes.

    Raises :class:`GitError` on a timeout or a non-zero exit status.
    """
    command = ["git", "-C", str(repo), *_SAFE_CONFIG, *_filter_overrides(repo), *args]
    return _run(command, limit, args[0])


def _run(
    command: list[str], limit: int, what: str, allow_status: tuple[int, ...] = (0,)
) -> GitOutput:
    try:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_environment(),
            start_new_session=True,  # a process group: a kill reaches git's children too
        )
    except OSError:
        raise GitError("git is not available") from None
    timed_out = threading.Event()

    def stop() -> None:
        timed_out.set()
        _kill(proc)

    timer = threading.Timer(TIMEOUT_SECONDS, stop)
    timer.start()
    try:
        assert proc.stdout is not None  # stdout=PIPE above
        data = proc.stdout.read(limit + 1)
        truncated = len(data) > limit
        if truncated:
            _kill(proc)  # stop a command whose output would be cut anyway
        status = proc.wait()
    finally:
        timer.cancel()
        proc.stdout.close()  # type: ignore[union-attr]  # set above
    if timed_out.is_set():
        raise GitError(f"git {what} took longer than {TIMEOUT_SECONDS:g} seconds")
    if status not in allow_status and not truncated:
        raise GitError(f"git {what} failed")
    return GitOutput(data[:limit], truncated)


def repository() -> Path:
    """The configured repository's top-level directory (``NR_LLM_GIT_REPO``, default cwd)."""
    configured = os.environ.get(ENV_REPO) or os.getcwd()
    path = Path(configured).resolve()
    if not path.is_dir():
        raise GitError("the configured repository does not exist")
    try:
        top = run_git(path, "rev-parse", "--show-toplevel").text().strip()
    except GitError:
        raise GitError("the configured directory is not a git repository") from None
    return Path(top).resolve()


def resolve_commit(repo: Path, revision: str) -> str:
    """The commit id ``revision`` names. Refuses option-like and malformed revisions."""
    if revision.startswith("-"):
        raise GitError(f"revision {revision!r} is refused: it starts with '-'")
    if _REVISION_RE.fullmatch(revision) is None or ".." in revision:
        raise GitError(f"revision {revision[:60]!r} is not a revision name")
    try:
        out = run_git(
            repo, "rev-parse", "--verify", "--quiet", "--end-of-options", revision + "^{commit}"
        )
    except GitError:
        raise GitError(f"unknown revision {revision!r}") from None
    return out.text().strip()


def check_path(path: str) -> str:
    """``path`` as a clean relative POSIX path inside the repository, or :class:`GitError`."""
    if not path or "\x00" in path or "\\" in path:
        raise GitError("the path is empty or malformed")
    if path.startswith("-"):
        raise GitError(f"path {path!r} is refused: it starts with '-'")
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts:
        raise GitError(f"path {path!r} is outside the repository")
    parts = [p for p in pure.parts if p != "."]
    if not parts or parts[0] == ".git":
        raise GitError(f"path {path!r} is outside the repository's files")
    return "/".join(parts)
