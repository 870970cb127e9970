"""The audit store from the command line: the ``--db`` option and opening the store.

The store is a SQLite file or a PostgreSQL URL (:mod:`nr_llm_core.stores`), from ``--db``,
else ``$NR_LLM_DB``, else the configuration file's ``[store] db``, else
``./.nr-llm/audit.db``. A URL is only ever shown masked (no password in an error, a log line
or ``--help``, which shows no default value).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from nr_llm_core.audit import DB_ENV_VAR, AuditStoreError, default_db_path
from nr_llm_core.cli._output import visible
from nr_llm_core.errors import ConfigurationError
from nr_llm_core.stores import AuditStore, masked, store_kind
from nr_llm_core.stores import open_store as _open
from nr_llm_core.stores._url import sqlite_path

if TYPE_CHECKING:  # the configuration module is imported only when a store is looked for
    from nr_llm_core.config import Config

__all__ = [
    "db_option",
    "existing_store",
    "no_database",
    "open_persister",
    "open_store",
    "resolve_run_id",
    "store_target",
]

F = TypeVar("F", bound=Callable[..., Any])
Target = str | os.PathLike[str] | None


def store_target(db: Target, config: Config | None = None) -> str:
    """Where the store is: ``db``, else ``$NR_LLM_DB``, else the config file's ``[store]
    db``, else ``./.nr-llm/audit.db``. ``config`` is the command's configuration (the file its
    ``--config`` names); ``None`` reads the default one."""
    if db is not None and os.fspath(db).strip():
        return os.fspath(db)
    named = os.environ.get(DB_ENV_VAR, "").strip()
    if named:
        return named  # as given: a Path would fold a URL's "//"
    if config is None:
        from nr_llm_core.config import load_config

        try:
            config = load_config()
        except ConfigurationError as exc:
            raise click.UsageError(visible(str(exc), keep_newlines=False)) from None
    configured = config["store.db"]
    return str(configured) if configured else str(default_db_path())


def _opened(target: str) -> AuditStore:
    try:
        return _open(target)
    except (AuditStoreError, ConfigurationError) as exc:
        raise click.ClickException(visible(str(exc), keep_newlines=False)) from None
    except ValueError as exc:  # an unknown scheme (its message names the scheme only)
        raise click.UsageError(visible(str(exc), keep_newlines=False)) from None


def open_store(db: Target, config: Config | None = None) -> AuditStore:
    """The audit store CLI runs record into (created on first use); ``config`` as for
    :func:`store_target`."""
    return _opened(store_target(db, config))


def db_option(func: F) -> F:
    """The ``--db PATH|URL`` option (default: ``$NR_LLM_DB``, the config file's ``[store]
    db``, else ``./.nr-llm/audit.db``)."""
    option = click.option(
        "--db",
        "db",
        default=None,
        metavar="PATH|URL",
        help="The audit store: a SQLite file, or a postgresql+psycopg://… URL shared by many "
        "machines (default: $NR_LLM_DB, else the config file's [store] db, else "
        "./.nr-llm/audit.db).",
    )
    return option(func)


def open_persister(
    db: Target, *, create: bool = False, config: Config | None = None
) -> AuditStore | None:
    """The store at ``db`` (or the default; ``config`` as for :func:`store_target`); ``None``
    if it is a SQLite file that does not exist and ``create`` is false, so that reading never
    creates an empty database."""
    target = store_target(db, config)
    if not create and store_kind(target) == "sqlite" and not sqlite_path(target).exists():
        return None
    return _opened(target)


def existing_store(db: Target, config: Config | None = None) -> AuditStore:
    """The store at ``db`` for a command about a run in it: when there is none, say so (as
    :func:`no_database`) and exit with status 1; never creates one."""
    store = open_persister(db, config=config)
    if store is None:
        no_database(db, config)
        raise SystemExit(1)
    return store


def resolve_run_id(store: AuditStore, given: str) -> str:
    """The whole id of the run ``given`` names (a whole id or a unique prefix of at least
    four characters, see :meth:`~nr_llm_core.audit.AgentRunPersister.resolve_run_id`); an
    unknown or ambiguous one is a ``ClickException`` that says which."""
    try:
        return store.resolve_run_id(given)
    except AuditStoreError as exc:
        raise click.ClickException(visible(str(exc), keep_newlines=False)) from None


def no_database(db: Target, config: Config | None = None, *, err: bool = False) -> None:
    """Say that there is no store at ``db`` (shown masked; ``config`` as for
    :func:`store_target`), on stderr when ``err`` (a command whose stdout is JSON)."""
    target = store_target(db, config)
    if store_kind(target) == "sqlite":
        # The whole path: a relative one does not say which directory was looked in.
        whole = sqlite_path(target).absolute()
        default = " (the default, relative to this directory)"
        shown = str(whole) + (default if target == str(default_db_path()) else "")
    else:
        shown = masked(target)
    click.echo(
        f"No audit database at {visible(shown, keep_newlines=False)}: name the store with "
        "--db PATH|URL, NR_LLM_DB, or [store] db in the configuration file.",
        err=err,
    )
