"""Where an audit store is: a SQLite file's path or a PostgreSQL URL, told apart, and shown
without its password.

Parsed with the standard library: telling the two apart must not import SQLAlchemy (``nr-llm
runs list`` on a file starts fast).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["StoreKind", "is_postgres_url", "masked", "sqlite_path", "store_kind"]

StoreKind = Literal["sqlite", "postgresql"]

_POSTGRES_SCHEMES: Final = ("postgresql", "postgresql+psycopg", "postgres")
_SQLITE_PREFIX: Final = "sqlite:///"
_SCHEME_RE: Final = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
# Query parameters that can hold a credential (libpq's names).
_SECRET_PARAMS: Final = frozenset({"password", "passfile", "sslpassword"})


def _scheme(target: str) -> str | None:
    match = _SCHEME_RE.match(target)
    return target[: match.end() - 3].lower() if match else None


def is_postgres_url(target: object) -> bool:
    """Whether ``target`` names a PostgreSQL server (``postgresql[+psycopg]://…``)."""
    return type(target) is str and _scheme(target) in _POSTGRES_SCHEMES


def store_kind(target: str) -> StoreKind:
    """``postgresql`` for a PostgreSQL URL, ``sqlite`` for a path or a ``sqlite:///`` URL.

    Any other ``scheme://`` is a ``ValueError`` (naming the scheme, never the URL)."""
    scheme = _scheme(target)
    if scheme is None or target.startswith(_SQLITE_PREFIX):
        return "sqlite"
    if scheme in _POSTGRES_SCHEMES:
        return "postgresql"
    raise ValueError(
        f"unsupported audit store scheme {scheme[:40]!r}: use a file path, sqlite:///PATH "
        "or postgresql+psycopg://…"
    )


def sqlite_path(target: str) -> Path:
    """The file a SQLite target names (a path, or ``sqlite:///PATH``)."""
    return Path(target[len(_SQLITE_PREFIX) :] if target.startswith(_SQLITE_PREFIX) else target)


def masked(target: str) -> str:
    """``target`` as it may be shown or logged: a URL's password (in its user part or its
    query) replaced by ``***``; a path unchanged."""
    if _scheme(target) is None:
        return target
    try:
        parts = urlsplit(target)
    except ValueError:
        return f"{_scheme(target)}://***"  # unparseable: show nothing of it
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user, colon, _ = userinfo.partition(":")
        netloc = f"{user}{':***' if colon else ''}@{hostport}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode(
            [(k, "***" if k.lower() in _SECRET_PARAMS else v) for k, v in pairs], safe="*/"
        )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
