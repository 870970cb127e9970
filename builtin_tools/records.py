"""The ``records`` group: read (and, with approval, update) a configured database.

``read_records`` is the first artifact producer: it formats every cell once and, from those same
cells in one pass, builds both the model-facing text and a TABLE artifact, so nothing the text
withholds can appear in the artifact. Hidden columns (credentials always, personal data by
default) and sensitive tables are dropped when the schema is read, before any query is built.
"""

from __future__ import annotations

from typing import Any, Final, final

from nr_llm_core.hooks import hookimpl
from nr_llm_core.results import Artifact, DataClass, ToolResult, ToolSpec

from ._records_db import (
    TABLE_REFUSED,
    DatabaseUnavailable,
    TableSchema,
    connect,
    permitted_tables,
    quoted_table,
    table_schema,
    visible_columns,
)
from ._records_format import (
    SEP,
    excerpt,
    format_cell,
    hidden_note,
    refusal_name,
    render_records,
    render_table_list,
    scalar_problem,
)

__all__ = ["DescribeTable", "ListTables", "ReadRecords", "SearchRecords", "UpdateRecord"]

GROUP: Final = "records"
DEFAULT_LIMIT: Final = 20
MAX_LIMIT: Final = 50
MAX_OFFSET: Final = 10_000
MAX_FILTERS: Final = 5
_MAX_EXCERPTS_PER_RECORD: Final = 3
_NAME: Final = {"type": "string", "minLength": 1, "maxLength": 128}
_SCALAR: Final = {"type": ["string", "number", "boolean", "null"], "maxLength": 1000}


def _int(arguments: dict[str, Any], key: str, default: int) -> int:
    # The schema allows JSON integers only, but a JSON reader may hand over 5.0 for 5.
    value = arguments.get(key, default)
    return int(value)


@final
class ListTables:
    """``list_tables``: the names of the permitted tables; the TABLE artifact ``tables``,
    which the model never sees, lists each one's visible columns."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(
            "list_tables",
            "List the tables of the records database that may be read.",
            {"type": "object", "properties": {}, "additionalProperties": False},
            group=GROUP,
            data_class=DataClass.INTERNAL,
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        try:
            with connect() as (conn, config):
                names = permitted_tables(conn, config)
                columns = visible_columns(conn, config, names)
        except DatabaseUnavailable as exc:
            return ToolResult.error(exc.message)
        if not names:
            return ToolResult.text("No tables are available.")
        return render_table_list(names, columns)


@final
class DescribeTable:
    """``describe_table``: columns, types, keys and relations of one permitted table."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(
            "describe_table",
            "Describe a table: its columns, their types, its primary key and its relations.",
            {
                "type": "object",
                "properties": {"table": {**_NAME, "description": "The table name."}},
                "required": ["table"],
                "additionalProperties": False,
            },
            group=GROUP,
            data_class=DataClass.INTERNAL,
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        try:
            with connect() as (conn, config):
                schema = table_schema(conn, config, arguments["table"])
                if schema is None:
                    return ToolResult.error(TABLE_REFUSED)
                incoming = _referenced_by(conn, config, schema.name)
        except DatabaseUnavailable as exc:
            return ToolResult.error(exc.message)
        header = ["column", "type", "nullable", "key"]
        rows = [
            [c.name, c.type, "yes" if c.nullable else "no", "primary" if c.primary_key else "-"]
            for c in schema.columns
        ]
        lines = [f"Table {schema.name}" + _key_note(schema) + hidden_note(schema.hidden_count)]
        lines.append(SEP.join(header))
        lines.extend(SEP.join(row) for row in rows)
        if schema.foreign_keys:
            lines.append("References:")
            lines.extend(
                f"{', '.join(local)} -> {target}({', '.join(remote)})"
                for local, target, remote in schema.foreign_keys
            )
        if incoming:
            lines.append("Referenced by: " + ", ".join(incoming))
        return ToolResult.text(
            "\n".join(lines), Artifact.table(f"{schema.name} columns", header, rows)
        )


def _key_note(schema: TableSchema) -> str:
    visible = {c.name for c in schema.columns}
    if schema.primary_key and all(k in visible for k in schema.primary_key):
        return f" (primary key: {', '.join(schema.primary_key)})"
    return ""


_MAX_RELATION_SCAN: Final = 100


def _referenced_by(conn: Any, config: Any, name: str) -> list[str]:
    """``table(columns)`` of the permitted tables whose visible foreign keys point at ``name``."""
    found: list[str] = []
    for other in permitted_tables(conn, config)[:_MAX_RELATION_SCAN]:
        schema = table_schema(conn, config, other)
        if schema is None:
            continue
        found.extend(
            f"{other}({', '.join(local)})"
            for local, target, _ in schema.foreign_keys
            if target == name
        )
    return found


@final
class ReadRecords:
    """``read_records``: records of one table, as text and as a TABLE artifact."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(
            "read_records",
            "Read records of a table, ordered by primary key. Optional: fields to show, up to "
            "5 equality filters (where_equals), limit (default 20, at most 50) and offset.",
            {
                "type": "object",
                "properties": {
                    "table": {**_NAME, "description": "The table name."},
                    "fields": {
                        "type": "array",
                        "items": _NAME,
                        "minItems": 1,
                        "maxItems": 100,
                        "description": "Columns to show (the primary key is always shown).",
                    },
                    "where_equals": {
                        "type": "object",
                        "maxProperties": MAX_FILTERS,
                        "propertyNames": _NAME,
                        "additionalProperties": _SCALAR,
                        "description": "Column -> value; records must match every pair.",
                    },
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                    "offset": {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET},
                },
                "required": ["table"],
                "additionalProperties": False,
            },
            group=GROUP,
            data_class=DataClass.INTERNAL,
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        import sqlalchemy as sa

        limit = _int(arguments, "limit", DEFAULT_LIMIT)
        offset = _int(arguments, "offset", 0)
        try:
            with connect() as (conn, config):
                schema = table_schema(conn, config, arguments["table"])
                if schema is None:
                    return ToolResult.error(TABLE_REFUSED)
                if not schema.columns:
                    return ToolResult.error(
                        f"Table {schema.name} has no columns that may be shown."
                    )
                selected = _selected_columns(schema, arguments.get("fields"))
                if isinstance(selected, ToolResult):
                    return selected
                tbl = quoted_table(schema)
                conditions = []
                for key, value in (arguments.get("where_equals") or {}).items():
                    if schema.column(key) is None:
                        return ToolResult.error(
                            f"Invalid filter: {refusal_name(key)} is not a permitted column."
                        )
                    problem = scalar_problem(value)
                    if problem is not None:
                        return ToolResult.error(f"Invalid filter: {problem}.")
                    col = tbl.c[key]
                    conditions.append(col.is_(None) if value is None else col == value)
                stmt = (
                    sa.select(*(tbl.c[name] for name in selected))
                    .where(*conditions)
                    .order_by(*(tbl.c[name] for name in schema.order_by))
                    .limit(limit + 1)
                    .offset(offset)
                )
                raw_rows = [tuple(r) for r in conn.execute(stmt)]
        except DatabaseUnavailable as exc:
            return ToolResult.error(exc.message)
        return render_records(schema, selected, raw_rows, limit, offset)


def _selected_columns(schema: TableSchema, fields: list[Any] | None) -> list[str] | ToolResult:
    """The visible key columns first, then the requested (or all permitted) columns."""
    if fields is None:
        wanted = [c.name for c in schema.columns]
    else:
        for field in fields:
            if schema.column(field) is None:
                return ToolResult.error(f"Field not found or not permitted: {refusal_name(field)}.")
        wanted = [str(f) for f in fields]
    keys = [k for k in schema.primary_key if schema.column(k) is not None]
    return list(dict.fromkeys([*keys, *wanted]))


@final
class SearchRecords:
    """``search_records``: records of one table whose text columns contain a substring."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(
            "search_records",
            "Search a table's text columns for a substring (case-insensitive for ASCII); "
            "returns each matching record's key and excerpts.",
            {
                "type": "object",
                "properties": {
                    "table": {**_NAME, "description": "The table name."},
                    "query": {"type": "string", "minLength": 1, "maxLength": 200},
                    "fields": {
                        "type": "array",
                        "items": _NAME,
                        "minItems": 1,
                        "maxItems": 100,
                        "description": "Text columns to search (default: all permitted).",
                    },
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                },
                "required": ["table", "query"],
                "additionalProperties": False,
            },
            group=GROUP,
            data_class=DataClass.INTERNAL,
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        import sqlalchemy as sa

        query = str(arguments["query"])
        limit = _int(arguments, "limit", 10)
        try:
            with connect() as (conn, config):
                schema = table_schema(conn, config, arguments["table"])
                if schema is None:
                    return ToolResult.error(TABLE_REFUSED)
                fields = arguments.get("fields")
                if fields is None:
                    searched = [c.name for c in schema.columns if c.is_text]
                else:
                    for field in fields:
                        col = schema.column(field)
                        if col is None or not col.is_text:
                            return ToolResult.error(
                                "Field not found, not permitted or not text: "
                                f"{refusal_name(field)}."
                            )
                    searched = list(dict.fromkeys(str(f) for f in fields))
                if not searched:
                    return ToolResult.error(f"Table {schema.name} has no text columns to search.")
                keys = list(schema.order_by)
                needle = query.lower()
                tbl = quoted_table(schema)
                stmt = (
                    sa.select(*(tbl.c[n] for n in [*keys, *searched]))
                    .where(
                        sa.or_(
                            *(
                                sa.func.lower(tbl.c[n]).contains(needle, autoescape=True)
                                for n in searched
                            )
                        )
                    )
                    .order_by(*(tbl.c[n] for n in keys))
                    .limit(limit + 1)
                )
                found = [tuple(r) for r in conn.execute(stmt)]
        except DatabaseUnavailable as exc:
            return ToolResult.error(exc.message)
        if not found:
            return ToolResult.text(f"No records in {schema.name} contain {query!r}.")
        lines = [f"Records in {schema.name} containing {query!r}:"]
        for raw in found[:limit]:
            key = ", ".join(
                f"{k}={format_cell(v)}" for k, v in zip(keys, raw[: len(keys)], strict=True)
            )
            excerpts = [
                f"{name}: {excerpt(value, needle)}"
                for name, value in zip(searched, raw[len(keys) :], strict=True)
                if isinstance(value, str) and needle in value.lower()
            ][:_MAX_EXCERPTS_PER_RECORD]
            lines.append(f"- {key}: " + ("; ".join(excerpts) or "(match in a searched column)"))
        if len(found) > limit:
            lines.append(f"More records match; at most {limit} are shown.")
        return ToolResult.text("\n".join(lines))


@final
class UpdateRecord:
    """``update_record``: change non-sensitive columns of one record (needs approval)."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(
            "update_record",
            "Update one record, found by its full primary key, setting one or more columns.",
            {
                "type": "object",
                "properties": {
                    "table": {**_NAME, "description": "The table name."},
                    "key": {
                        "type": "object",
                        "minProperties": 1,
                        "maxProperties": 8,
                        "propertyNames": _NAME,
                        "additionalProperties": _SCALAR,
                        "description": "Primary-key column -> value, every key column.",
                    },
                    "values": {
                        "type": "object",
                        "minProperties": 1,
                        "maxProperties": 20,
                        "propertyNames": _NAME,
                        "additionalProperties": _SCALAR,
                        "description": "Column -> new value.",
                    },
                },
                "required": ["table", "key", "values"],
                "additionalProperties": False,
            },
            group=GROUP,
            enabled_by_default=False,
            data_class=DataClass.INTERNAL,
            requires_approval=True,
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        import sqlalchemy as sa
        from sqlalchemy.exc import IntegrityError

        key: dict[str, Any] = arguments["key"]
        values: dict[str, Any] = arguments["values"]
        try:
            with connect(writable=True) as (conn, config):
                schema = table_schema(conn, config, arguments["table"])
                if schema is None:
                    return ToolResult.error(TABLE_REFUSED)
                pk = set(schema.primary_key)
                if not pk or set(key) != pk or any(schema.column(k) is None for k in pk):
                    return ToolResult.error(
                        "Invalid key: give exactly the table's primary-key columns."
                    )
                for name, value in [*key.items(), *values.items()]:
                    if schema.column(name) is None or (name in pk and name in values):
                        return ToolResult.error(
                            f"Invalid column: {refusal_name(name)} cannot be updated."
                        )
                    problem = scalar_problem(value)
                    if problem is not None:
                        return ToolResult.error(f"Invalid value: {problem}.")
                tbl = quoted_table(schema)
                stmt = (
                    sa.update(tbl)
                    .where(*(tbl.c[k] == v for k, v in key.items()))
                    .values({tbl.c[k]: v for k, v in values.items()})
                )
                try:
                    changed = conn.execute(stmt).rowcount
                except IntegrityError:
                    conn.rollback()
                    return ToolResult.error("Update refused by a database constraint.")
                if changed != 1:
                    conn.rollback()
                    return ToolResult.error("Record not found.")
                conn.commit()
        except DatabaseUnavailable as exc:
            return ToolResult.error(exc.message)
        where = ", ".join(f"{k}={format_cell(v)}" for k, v in key.items())
        return ToolResult.text(f"Updated 1 record in {schema.name} ({where}): {', '.join(values)}.")
