"""The host secret, and the HMACs a suspended state and its approval are signed with.

A suspended run's state is resumed by whichever process claims it, possibly on another
machine, from a store that other programs can write (a shared PostgreSQL server, a database
file). A plain hash over the state proves nothing there: whoever edits the state recomputes
it. The digest is therefore an HMAC-SHA256 keyed with a secret that lives in the environment
or a file of its own, never in the store beside the state (ADR 0024).

Where the secret comes from, first match:

1. ``$NR_LLM_SECRET``: the secret itself (at least 32 characters);
2. ``$NR_LLM_SECRET_FILE``: a file holding it (a regular file, not a symbolic link, of this
   user's or root's, that only its owner can read or write, of 32 characters to 4 KiB; read
   by :func:`~nr_llm_core._private_files.read_private_file`);
3. else ``secret`` in the user's configuration directory (``~/.config/nr-llm/secret`` on
   Linux), created with 32 random bytes on first use (0600). This one suits one machine; a
   store shared by several machines needs the same secret on each of them, so a shared store
   asks for 1 or 2 (:func:`host_key` with ``shared=True``).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path
from typing import Final

from nr_llm_core._private_files import PrivateFileError, Refusal, read_private_file
from nr_llm_core.errors import ConfigurationError

__all__ = [
    "SECRET_ENV_VAR",
    "SECRET_FILE_ENV_VAR",
    "host_key",
    "mac",
    "mac_matches",
    "user_secret_path",
]

#: The environment variable holding the host secret itself.
SECRET_ENV_VAR: Final = "NR_LLM_SECRET"  # noqa: S105  # a variable's name, not a secret
#: The environment variable naming a file that holds the host secret.
SECRET_FILE_ENV_VAR: Final = "NR_LLM_SECRET_FILE"  # noqa: S105  # a variable's name
_MIN_CHARS: Final = 32
_MAX_FILE_BYTES: Final = 4096


def user_secret_path() -> Path:
    """``secret`` in the user's configuration directory (it may not exist yet)."""
    import platformdirs  # only when the default secret is needed

    return Path(platformdirs.user_config_dir("nr-llm", appauthor=False)) / "secret"


def _checked(value: str, where: str) -> bytes:
    value = value.strip()
    if len(value) < _MIN_CHARS:
        raise ConfigurationError(f"{where}: the host secret needs at least {_MIN_CHARS} characters")
    return value.encode("utf-8", "surrogatepass")


# Each refusal of the secret file, in words; the secret's bytes are never in one.
_REFUSED: Final = {
    Refusal.SYMLINK: "the secret file is a symbolic link: name the file itself",
    Refusal.NOT_REGULAR: "the secret file is not a regular file",
    # Its owner knows the secret, and so could sign an altered state.
    Refusal.OWNER: "the secret file belongs to another user",
    Refusal.MODE: "the secret file must be readable by its owner only",
    Refusal.TOO_BIG: "a secret file is at most 4 KiB",
}


def _read_file(path: Path, where: str) -> bytes:
    try:
        data = read_private_file(
            path, limit=_MAX_FILE_BYTES, owner="self or root", forbidden_mode=0o077
        )
    except PrivateFileError as exc:
        words = _REFUSED.get(exc.reason) or f"cannot read the secret file ({exc.why})"
        raise ConfigurationError(f"{where}: {words}") from None
    try:
        return _checked(data.decode("utf-8"), where)
    except UnicodeDecodeError:
        raise ConfigurationError(f"{where}: the secret file is not UTF-8 text") from None


def _user_secret() -> bytes:
    path = user_secret_path()
    if os.path.lexists(path):
        return _read_file(path, str(path))
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:  # another process made it first: use theirs
        return _read_file(path, str(path))
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(secrets.token_hex(32) + "\n")
        out.flush()
        os.fsync(out.fileno())
    return _read_file(path, str(path))


def host_key(*, shared: bool = False) -> bytes:
    """The host secret's bytes (see the module's docstring for where it comes from).

    ``shared=True``: only a secret given through the environment counts (``$NR_LLM_SECRET``
    or ``$NR_LLM_SECRET_FILE``), since one made on this machine cannot be known to another;
    without one, :class:`~nr_llm_core.errors.ConfigurationError` names both variables.
    The secret's value never appears in an error."""
    value = os.environ.get(SECRET_ENV_VAR, "")
    if value.strip():
        return _checked(value, SECRET_ENV_VAR)
    named = os.environ.get(SECRET_FILE_ENV_VAR, "").strip()
    if named:
        return _read_file(Path(named), SECRET_FILE_ENV_VAR)
    if shared:
        raise ConfigurationError(
            f"a store shared by several machines needs the same host secret on each: set "
            f"{SECRET_ENV_VAR} or {SECRET_FILE_ENV_VAR}"
        )
    return _user_secret()


def mac(purpose: str, *parts: bytes, shared: bool = False) -> str:
    """HMAC-SHA256 (hex) of ``parts`` under the host key, bound to ``purpose``.

    Each part is length-prefixed, so no two different sequences of parts sign alike."""
    signer = hmac.new(host_key(shared=shared), purpose.encode("ascii"), hashlib.sha256)
    for part in parts:
        signer.update(len(part).to_bytes(8, "big"))
        signer.update(part)
    return signer.hexdigest()


def mac_matches(expected: object, purpose: str, *parts: bytes, shared: bool = False) -> bool:
    """Whether ``expected`` is the :func:`mac` of ``parts`` (compared in constant time)."""
    if type(expected) is not str:
        return False
    given = expected.encode("utf-8", "surrogatepass")  # any str, compared as bytes
    return hmac.compare_digest(given, mac(purpose, *parts, shared=shared).encode("ascii"))
