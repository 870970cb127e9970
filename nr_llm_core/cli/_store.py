"""The audit store from the command line: the ``--db`` option and opening the store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from nr_llm_core.audit import AgentRunPersister, AuditStoreError, default_db_path
from nr_llm_core.cli._output import visible

__all__ = ["db_option", "no_database", "open_persister", "open_store"]

F = TypeVar("F", bound=Callable[..., Any])


def open_store(db: Path | None) -> AgentRunPersister:
    """The audit store CLI runs record into (created on first use)."""
    path = db if db is not None else default_db_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        return AgentRunPersister(path)
    except AuditStoreError as exc:
        raise click.ClickException(str(exc)) from None


def db_option(func: F) -> F:
    """The ``--db PATH`` option (default: ``$NR_LLM_DB``, else ``./.nr-llm/audit.db``)."""
    option = click.option(
        "--db",
        "db",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="The audit database (default: $NR_LLM_DB, else ./.nr-llm/audit.db).",
    )
    return option(func)


def open_persister(db: Path | None, *, create: bool = False) -> AgentRunPersister | None:
    """The store at ``db`` (or the default path); ``None`` if it does not exist and
    ``create`` is false, so that reading never creates an empty database."""
    path = db if db is not None else default_db_path()
    if not create and not path.exists():
        return None
    try:
        return AgentRunPersister(path)
    except AuditStoreError as exc:
        raise click.ClickException(str(exc)) from None


def no_database(db: Path | None) -> None:
    path = db if db is not None else default_db_path()
    click.echo(f"No audit database at {visible(str(path), keep_newlines=False)}.")
