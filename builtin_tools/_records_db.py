"""The records tools' database access: engines, the permitted schema, and cell formatting.

SQLAlchemy is imported inside functions only, so that ``import nr_llm_builtins`` (and tool
discovery) stays cheap. No SQL is ever built from model text: a name the model gives is looked
up in the reflected schema and only the schema's own name is used, always as a quoted
identifier; every value is a bound parameter.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final, final
from urllib.parse import quote

import attrs

from ._config import RecordsConfig, records_config
from .demo_db import ensure_demo_db

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine
    from sqlalchemy.sql.expression import ColumnClause, TableClause

__all__ = [
    "TABLE_REFUSED",
    "Column",
    "DatabaseUnavailable",
    "QueryFailed",
    "TableSchema",
    "connect",
    "permitted_tables",
    "quoted_column",
    "quoted_table",
    "table_schema",
]

logger = logging.getLogger("nr_llm.builtins.records")

TABLE_REFUSED: Final = "Table not found or not permitted."
_MAX_TABLES: Final = 500


class DatabaseUnavailable(Exception):
    """The configured database cannot be opened; :attr:`message` is what the model is told."""

    message: str = "Records database not available."


class QueryFailed(DatabaseUnavailable):
    """The database was opened but refused a statement (a type mismatch on a server database,
    a lock, a corrupt page)."""

    message = "The records database could not run this query."


@final
@attrs.frozen
class Column:
    """One permitted column of a table, as reflected."""

    name: str
    type: str
    nullable: bool
    primary_key: bool
    is_bool: bool
    is_text: bool


@final
@attrs.frozen
class TableSchema:
    """A table's permitted columns (hidden ones are only counted) and its keys and relations."""

    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    hidden_count: int
    foreign_keys: tuple[tuple[tuple[str, ...], str, tuple[str, ...]], ...]

    def column(self, name: object) -> Column | None:
        """The permitted column of exactly this name, or ``None``."""
        return next((c for c in self.columns if c.name == name), None)

    @property
    def order_by(self) -> tuple[str, ...]:
        """The primary key when it is visible, otherwise every permitted column."""
        visible = {c.name for c in self.columns}
        if self.primary_key and all(k in visible for k in self.primary_key):
            return self.primary_key
        return tuple(c.name for c in self.columns)


def _sqlite_creator(path: str, writable: bool) -> Any:
    mode = "rw" if writable else "ro"

    def creator() -> sqlite3.Connection:
        # mode=ro: the reading tools cannot write even if a statement tried; no file is created
        # for a path that does not exist.
        conn = sqlite3.connect(f"file:{quote(path)}?mode={mode}", uri=True, check_same_thread=False)
        # Invalid UTF-8 in a TEXT cell must not turn a whole read into a failure.
        conn.text_factory = lambda b: b.decode("utf-8", "replace")
        return conn

    return creator


def _engine(config: RecordsConfig, writable: bool) -> Engine:
    import sqlalchemy as sa
    from sqlalchemy.pool import NullPool

    if config.url is not None:
        return sa.create_engine(config.url, poolclass=NullPool)
    assert config.sqlite_path is not None
    if config.demo:
        ensure_demo_db(config.sqlite_path)
    elif not config.sqlite_path.is_file():
        raise DatabaseUnavailable
    return sa.create_engine(
        "sqlite+pysqlite://",
        creator=_sqlite_creator(str(config.sqlite_path), writable),
        poolclass=NullPool,
    )


@contextmanager
def connect(*, writable: bool = False) -> Iterator[tuple[Connection, RecordsConfig]]:
    """A connection to the configured database and the configuration it was opened with.

    A failure to open becomes :class:`DatabaseUnavailable`, a database error in the body
    :class:`QueryFailed`. The driver's message (which can hold a URL with a password, or data)
    is never passed on; only its type is logged.
    """
    from sqlalchemy.exc import SQLAlchemyError

    config = records_config()
    try:
        # ImportError: a URL naming a driver that is not installed.
        engine = _engine(config, writable)
    except (SQLAlchemyError, OSError, sqlite3.Error, ValueError, ImportError) as exc:
        logger.warning("records database could not be opened: %s", type(exc).__name__)
        raise DatabaseUnavailable from None
    try:
        with engine.connect() as conn:
            if conn.dialect.name == "sqlite":
                # SQLite opens any file lazily: read the header now, so that a file that is
                # not a database counts as "not available", not as a failed query.
                conn.exec_driver_sql("PRAGMA schema_version")
            try:
                yield conn, config
            except (SQLAlchemyError, sqlite3.Error) as exc:
                logger.warning("records query failed: %s", type(exc).__name__)
                raise QueryFailed from None
    except (SQLAlchemyError, sqlite3.Error) as exc:
        logger.warning("records database could not be opened: %s", type(exc).__name__)
        raise DatabaseUnavailable from None
    finally:
        engine.dispose()


def permitted_tables(conn: Connection, config: RecordsConfig) -> list[str]:
    """Every table in the default schema that is not hidden, sorted."""
    import sqlalchemy as sa

    names = sa.inspect(conn).get_table_names()[:_MAX_TABLES]
    return sorted(n for n in names if not config.table_hidden(n))


def visible_columns(conn: Connection, config: RecordsConfig, names: list[str]) -> list[list[str]]:
    """For each of ``names`` (permitted tables), the names of its columns that may be shown."""
    import sqlalchemy as sa

    inspector = sa.inspect(conn)
    return [
        [
            str(c["name"])
            for c in inspector.get_columns(n)
            if not config.column_hidden(str(c["name"]))
        ]
        for n in names
    ]


def _type_name(type_: Any) -> str:
    try:
        return str(type_)
    except Exception:  # some dialect types cannot render without a dialect: say so, not fail
        return type(type_).__name__


def table_schema(conn: Connection, config: RecordsConfig, name: object) -> TableSchema | None:
    """The schema of the permitted table named exactly ``name``, or ``None`` (not found or
    hidden: the caller cannot tell which)."""
    import sqlalchemy as sa

    if type(name) is not str or config.table_hidden(name):
        return None
    inspector = sa.inspect(conn)
    if name not in inspector.get_table_names():
        return None
    pk = tuple(inspector.get_pk_constraint(name).get("constrained_columns") or ())
    columns: list[Column] = []
    hidden = 0
    for info in inspector.get_columns(name):
        col_name = str(info["name"])
        if config.column_hidden(col_name):
            hidden += 1
            continue
        columns.append(
            Column(
                name=col_name,
                type=_type_name(info["type"]),
                nullable=bool(info.get("nullable", True)),
                primary_key=col_name in pk,
                is_bool=isinstance(info["type"], sa.Boolean),
                is_text=isinstance(info["type"], sa.String),
            )
        )
    visible = {c.name for c in columns}
    fks = []
    for fk in inspector.get_foreign_keys(name):
        local = tuple(fk.get("constrained_columns") or ())
        target = str(fk.get("referred_table") or "")
        remote = tuple(fk.get("referred_columns") or ())
        # A relation is shown only when every name in it could be read on its own.
        if (
            all(c in visible for c in local)
            and target
            and not config.table_hidden(target)
            and not any(config.column_hidden(c) for c in remote)
        ):
            fks.append((local, target, remote))
    return TableSchema(name, tuple(columns), pk, hidden, tuple(fks))


def quoted_table(schema: TableSchema) -> TableClause:
    """A lightweight table construct whose names are always quoted."""
    import sqlalchemy as sa
    from sqlalchemy.sql.elements import quoted_name

    return sa.table(
        quoted_name(schema.name, True), *(quoted_column(c.name) for c in schema.columns)
    )


def quoted_column(name: str) -> ColumnClause[Any]:
    """A column construct whose name is always quoted."""
    import sqlalchemy as sa
    from sqlalchemy.sql.elements import quoted_name

    return sa.column(quoted_name(name, True))
