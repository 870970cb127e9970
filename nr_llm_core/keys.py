"""API keys at rest: one owner-only file in the user's configuration directory, read only
where a provider's key is looked up, never shown.

The file is ``keys.json`` in ``platformdirs.user_config_dir("nr-llm")`` (``~/.config/nr-llm/``
on Linux, beside ``config.toml``): a JSON object from a key's variable name
(``OPENAI_API_KEY``) to the key. ``nr-llm keys set|list|remove|path`` manage it.

- Written atomically (a new file, then a rename), created ``0600`` whatever the umask, in a
  directory created ``0700``; a directory others can write to is refused.
- Read only when the variable is unset or empty: the environment wins over the file.
- Refused, as ssh refuses a private key, when it is group- or world-accessible (the message
  names ``chmod 600``), owned by another user, a symbolic link, not a regular file, a file
  with another name (a hard link: removing a key would leave it there), or over 64 KiB
  (never read past that).
- No message, ``repr`` or log record holds a key, nor any of the file's bytes (a name in a
  hand-edited file could be a key pasted in the wrong place).

On Windows the permission checks do not apply (the file inherits the directory's ACL).
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Final, Literal, final

import attrs

from nr_llm_core._private_files import PrivateFileError, Refusal, read_private_file
from nr_llm_core.errors import ConfigurationError

__all__ = [
    "KEY_VARIABLES",
    "KeyStatus",
    "find_key",
    "key_status",
    "keys_path",
    "remove_key",
    "store_key",
    "variable_for",
]

#: The keys nr-llm knows: provider name -> the variable that holds its key.
KEY_VARIABLES: Final = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
_FILE_NAME: Final = "keys.json"
# A few keys are a few hundred bytes; anything bigger is not a keys file.
_MAX_FILE_BYTES: Final = 64 * 1024
_MAX_KEY_CHARS: Final = 4096
_POSIX: Final = os.name == "posix"


def keys_path() -> Path:
    """``keys.json`` in the user's configuration directory (it may not exist)."""
    import platformdirs  # only when a key is looked up

    return Path(platformdirs.user_config_dir("nr-llm", appauthor=False)) / _FILE_NAME


def variable_for(name: str) -> str:
    """The variable of the key ``name``: a provider (``openai``) or the variable itself
    (``OPENAI_API_KEY``). Otherwise a :class:`~nr_llm_core.errors.ConfigurationError` that
    lists the names (and never repeats ``name``, which may be a key typed in its place)."""
    if name in KEY_VARIABLES:
        return KEY_VARIABLES[name]
    if name in KEY_VARIABLES.values():
        return name
    names = ", ".join(f"{n} ({v})" for n, v in KEY_VARIABLES.items())
    raise ConfigurationError(f"not a key nr-llm knows: the keys are {names}")


@final
@attrs.frozen
class KeyStatus:
    """Whether a key is there and where from, never the key: ``source`` is ``env`` (the
    variable), ``file`` (the keys file) or ``None``; ``stored`` says the file holds one
    (used only when the variable is unset); ``problem`` says why the file cannot be read."""

    variable: str
    source: Literal["env", "file"] | None
    stored: bool
    problem: str | None = None


def find_key(variable: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The key in ``$variable``, else the one stored for it, else ``None``. The file is read
    only when the variable is unset or empty; one that is not private is a
    :class:`~nr_llm_core.errors.ConfigurationError` saying what to run."""
    env = os.environ if environ is None else environ
    value = env.get(variable)
    if value:
        return value
    return _read(keys_path()).get(variable)


def key_status(variable: str, environ: Mapping[str, str] | None = None) -> KeyStatus:
    """Where the key of ``variable`` comes from (see :class:`KeyStatus`); never raises for
    the file: a problem with it is reported in ``problem``."""
    env = os.environ if environ is None else environ
    try:
        stored, problem = variable in _read(keys_path()), None
    except ConfigurationError as exc:
        stored, problem = False, str(exc)
    if env.get(variable):
        return KeyStatus(variable, "env", stored, problem)
    return KeyStatus(variable, "file" if stored else None, stored, problem)


def store_key(variable: str, key: str) -> Path:
    """Store ``key`` as the key of ``variable`` (from :func:`variable_for`) and return the
    file's path. The key must be printable ASCII without spaces (it goes in an HTTP header);
    surrounding whitespace (a pasted line break) is removed."""
    key = _checked(variable, key)
    path = keys_path()
    _private_directory(path.parent)
    stored = _read(path)
    stored[variable] = key
    _write(path, stored)
    return path


def remove_key(variable: str) -> bool:
    """Remove the stored key of ``variable``; ``False`` when none was stored."""
    path = keys_path()
    stored = _read(path)
    if variable not in stored:
        return False
    del stored[variable]
    if stored:
        _write(path, stored)
    else:
        path.unlink()
    return True


def _checked(variable: str, key: str) -> str:
    if not isinstance(key, str):
        raise TypeError("the key must be a string")
    key = key.strip()
    if not key:
        raise ConfigurationError(f"the {variable} key is empty")
    if len(key) > _MAX_KEY_CHARS:
        raise ConfigurationError(f"the {variable} key is over {_MAX_KEY_CHARS} characters")
    if not key.isascii() or not key.isprintable() or any(c.isspace() for c in key):
        raise ConfigurationError(
            f"the {variable} key holds a space, a control or a non-ASCII character, which an "
            "HTTP header cannot carry: give the key alone"
        )
    return key


def _private_directory(directory: Path) -> None:
    """Create ``directory`` owner-only, or check that no one else can write to it."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.stat(directory)
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise ConfigurationError(f"{directory}: cannot create the directory ({why})") from None
    if _POSIX and info.st_mode & 0o022:
        raise ConfigurationError(
            f"{directory} can be written by other users, who could replace the keys file: "
            f"run `chmod 700 {directory}`"
        )


def _read(path: Path) -> dict[str, str]:
    """The stored keys by variable ({} without a file), after the file's checks."""
    try:
        data = read_private_file(
            path, limit=_MAX_FILE_BYTES, owner="self", forbidden_mode=0o077, single_link=True
        )
    except PrivateFileError as exc:
        if exc.reason is Refusal.MISSING:
            return {}
        raise ConfigurationError(_refusal(path, exc)) from None
    return _decoded(path, data)


def _refusal(path: Path, exc: PrivateFileError) -> str:
    """What is wrong with the keys file at ``path``, in words that begin with the path."""
    if exc.reason is Refusal.SYMLINK:
        return (
            f"{path} is a symbolic link: nr-llm reads keys only from a regular file there "
            "(remove the link and store the keys again with `nr-llm keys set`)"
        )
    if exc.reason is Refusal.NOT_REGULAR:
        return f"{path} is not a regular file: remove it"
    if exc.reason is Refusal.OWNER:
        return f"{path} belongs to another user: nr-llm reads only a keys file of yours"
    if exc.reason is Refusal.LINKS:
        # `keys remove` and `keys set` replace this name only: the keys would stay under the
        # other one, wherever it is.
        return (
            f"{path} has another name (a hard link): nr-llm reads keys only from a file of "
            "its own; remove the other name, or remove this one and store the keys again"
        )
    if exc.reason is Refusal.TOO_BIG:
        return f"{path} is not a keys file (over {_MAX_FILE_BYTES} bytes)"
    if exc.reason is Refusal.MODE and exc.info is not None:
        mode = stat.S_IMODE(exc.info.st_mode)
        if mode & 0o044:
            return (
                f"{path} can be read by other users (permissions {mode:04o}): run "
                f"`chmod 600 {path}`, and replace the keys in it if others could read them"
            )
        if mode & 0o022:
            return (
                f"{path} can be changed by other users (permissions {mode:04o}), who could "
                f"put a key of theirs in it: run `chmod 600 {path}`"
            )
        return f"{path} is open to other users (permissions {mode:04o}): run `chmod 600 {path}`"
    return f"{path}: cannot read the keys file ({exc.why or exc.reason.value})"


def _decoded(path: Path, data: bytes) -> dict[str, str]:
    # No message quotes the file: every byte of it may be a key.
    try:
        value = json.loads(data.decode("utf-8")) if data.strip() else {}
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ConfigurationError(
            f"{path} is not a keys file (not a JSON object): remove it and store the keys "
            "again with `nr-llm keys set`"
        ) from None
    known = set(KEY_VARIABLES.values())
    if type(value) is not dict or not all(
        k in known and type(v) is str and v for k, v in value.items()
    ):
        raise ConfigurationError(
            f"{path} holds an entry that is not a key nr-llm knows "
            f"({', '.join(sorted(known))}, each a string): remove it"
        )
    for variable, key in value.items():
        try:
            _checked(variable, key)
        except ConfigurationError:
            raise ConfigurationError(
                f"{path}: the stored {variable} key holds a space, a control or a non-ASCII "
                f"character: store it again with `nr-llm keys set {variable}`"
            ) from None
    return value


def _write(path: Path, stored: Mapping[str, str]) -> None:
    """Replace ``path`` with ``stored``: a new ``0600`` file renamed over it."""
    data = json.dumps(dict(sorted(stored.items())), indent=2).encode("ascii") + b"\n"
    temporary = path.with_name(f".{_FILE_NAME}.{secrets.token_hex(8)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(temporary, flags | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise ConfigurationError(f"{path}: cannot write the keys file ({why})") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            if hasattr(os, "fchmod"):
                # The umask can only take bits away from 0600; this makes it exactly 0600.
                os.fchmod(fh.fileno(), 0o600)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        why = exc.strerror or type(exc).__name__
        raise ConfigurationError(f"{path}: cannot write the keys file ({why})") from None
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
