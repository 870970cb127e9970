"""Configuration shared by the builtin tools, read from the environment on every call.

Reading on every call (rather than once at import) lets a host change a setting without
reloading the tools, and keeps tests independent. Nothing here imports SQLAlchemy.

Column and table names are matched against *patterns*: a pattern is lowercased and stripped of
everything but letters and digits; a pattern of four characters or more matches any name that
contains it (``passwordHash``, ``user_api_key``), a shorter one matches only a whole name segment
(``pin`` matches ``card_pin`` but not ``shipping``). Segments are split at non-alphanumerics and
camelCase boundaries.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Final, final

import attrs

__all__ = [
    "CREDENTIAL_PATTERNS",
    "DEFAULT_DEMO_DB",
    "DEFAULT_PERSONAL_PATTERNS",
    "ENV_FILES_ROOT",
    "ENV_FILES_SEARCH_TIMEOUT",
    "ENV_PERSONAL_COLUMNS",
    "ENV_RECORDS_DB",
    "ENV_SENSITIVE_COLUMNS",
    "ENV_SENSITIVE_TABLES",
    "RecordsConfig",
    "files_root",
    "matches_any",
    "name_segments",
    "records_config",
    "search_timeout",
]

#: A database URL (``postgresql://…``, anything SQLAlchemy speaks) or a SQLite file path.
ENV_RECORDS_DB: Final = "NR_LLM_RECORDS_DB"
#: Comma-separated patterns that *replace* the default personal-data list (empty: none hidden).
ENV_PERSONAL_COLUMNS: Final = "NR_LLM_RECORDS_PERSONAL_COLUMNS"
#: Comma-separated patterns *added* to the credential patterns (which cannot be removed).
ENV_SENSITIVE_COLUMNS: Final = "NR_LLM_RECORDS_SENSITIVE_COLUMNS"
#: Comma-separated table names that are never readable (added to credential-named tables).
ENV_SENSITIVE_TABLES: Final = "NR_LLM_RECORDS_SENSITIVE_TABLES"
#: The directory the file tools are confined to (default: the current directory).
ENV_FILES_ROOT: Final = "NR_LLM_FILES_ROOT"
#: Seconds a regex search may run before its worker process is killed (default 5, at most 60).
ENV_FILES_SEARCH_TIMEOUT: Final = "NR_LLM_FILES_SEARCH_TIMEOUT"

#: Where the demo shop database is built on first use when ``NR_LLM_RECORDS_DB`` is unset.
DEFAULT_DEMO_DB: Final = Path(".nr-llm") / "demo.db"

#: Never selectable, filterable or shown, whatever the host configures.
CREDENTIAL_PATTERNS: Final[tuple[str, ...]] = (
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "secret",
    "token",
    "salt",
    "hash",
    "credential",
    "apikey",
    "privatekey",
    "accesskey",
    "secretkey",
    "signingkey",
    "encryptionkey",
    "session",
    "cookie",
    "bearer",
    "otp",
    "pin",
    "mfa",
    "totp",
    "cvv",
    "cvc",
    "cardnumber",
    "creditcard",
)

#: Hidden by default; a host can replace this list with ``NR_LLM_RECORDS_PERSONAL_COLUMNS``.
DEFAULT_PERSONAL_PATTERNS: Final[tuple[str, ...]] = (
    "email",
    "mail",
    "phone",
    "mobile",
    "telephone",
    "fax",
    "birth",
    "dob",
    "iban",
    "bic",
    "ssn",
    "socialsecurity",
    "passport",
    "nationalid",
    "taxid",
    "address",
    "street",
    "postcode",
    "postalcode",
    "zip",
    "ip",
    "geo",
    "latitude",
    "longitude",
)

_DEFAULT_SEARCH_TIMEOUT: Final = 5.0
_MAX_SEARCH_TIMEOUT: Final = 60.0
_CAMEL: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NON_ALNUM: Final = re.compile(r"[^a-z0-9]+")
_SHORT_PATTERN: Final = 3


def _compact(text: str) -> str:
    return _NON_ALNUM.sub("", text.lower())


def name_segments(name: str) -> list[str]:
    """``name`` split at non-alphanumerics and camelCase boundaries, lowercased."""
    return [s for s in _NON_ALNUM.split(_CAMEL.sub("_", name).lower()) if s]


def matches_any(name: str, patterns: Iterable[str]) -> bool:
    """Whether ``name`` matches one of ``patterns`` (see the module docstring for the rule)."""
    compact = _compact(name)
    segments: list[str] | None = None
    for raw in patterns:
        pattern = _compact(raw)
        if not pattern:
            continue
        if len(pattern) > _SHORT_PATTERN:
            if pattern in compact:
                return True
        else:
            if segments is None:
                segments = name_segments(name)
            if pattern in segments:
                return True
    return False


def _env_list(var: str) -> tuple[str, ...] | None:
    raw = os.environ.get(var)
    if raw is None:
        return None
    return tuple(part.strip() for part in raw.split(",") if part.strip())


@final
@attrs.frozen(kw_only=True)
class RecordsConfig:
    """Where the records live and what of them is never shown.

    ``url`` is a SQLAlchemy URL, or ``None`` when ``sqlite_path`` names a SQLite file (the
    embedded default, opened read-only for reading tools). ``demo`` is true when the path is the
    default demo database, built on first use.
    """

    url: str | None
    sqlite_path: Path | None
    demo: bool
    credential_patterns: tuple[str, ...]
    personal_patterns: tuple[str, ...]
    sensitive_tables: frozenset[str]

    def column_hidden(self, column: str) -> bool:
        """Whether a column is never selectable, filterable or shown."""
        return matches_any(column, self.credential_patterns) or matches_any(
            column, self.personal_patterns
        )

    def table_hidden(self, table: str) -> bool:
        """Whether a table is never readable: configured, or named like a credential store."""
        return table.lower() in self.sensitive_tables or matches_any(
            table, self.credential_patterns
        )


def records_config() -> RecordsConfig:
    """The records configuration from the environment (see the ``ENV_*`` constants)."""
    raw = os.environ.get(ENV_RECORDS_DB, "").strip()
    url: str | None = None
    path: Path | None = None
    demo = False
    if not raw:
        path, demo = DEFAULT_DEMO_DB.absolute(), True
    elif "://" in raw:
        url = raw
    else:
        path = Path(raw).expanduser().absolute()
    personal = _env_list(ENV_PERSONAL_COLUMNS)
    return RecordsConfig(
        url=url,
        sqlite_path=path,
        demo=demo,
        credential_patterns=CREDENTIAL_PATTERNS + (_env_list(ENV_SENSITIVE_COLUMNS) or ()),
        personal_patterns=DEFAULT_PERSONAL_PATTERNS if personal is None else personal,
        sensitive_tables=frozenset(t.lower() for t in _env_list(ENV_SENSITIVE_TABLES) or ()),
    )


def files_root() -> Path:
    """The resolved root directory of the file tools."""
    raw = os.environ.get(ENV_FILES_ROOT, "").strip()
    return (Path(raw).expanduser() if raw else Path.cwd()).resolve()


def search_timeout() -> float:
    """Seconds a regex search may run; an unusable setting falls back to the default."""
    try:
        value = float(os.environ.get(ENV_FILES_SEARCH_TIMEOUT, ""))
    except ValueError:
        return _DEFAULT_SEARCH_TIMEOUT
    if not 0 < value <= _MAX_SEARCH_TIMEOUT:  # also refuses NaN
        return _DEFAULT_SEARCH_TIMEOUT
    return value
