"""How the records tools turn database values into text: cells, record lines, excerpts.

``read_records`` formats every cell once with :func:`format_cell`, and :func:`render_records`
builds the text lines and the TABLE artifact's rows from those same strings in one pass, so the
two channels cannot disagree and nothing the text withholds can be in the artifact.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import uuid
from typing import Any, Final

from nr_llm_core.encoding import encode_json
from nr_llm_core.results import Artifact, ToolResult

from ._records_db import TableSchema

__all__ = [
    "MAX_CELL_CHARS",
    "SEP",
    "excerpt",
    "format_cell",
    "hidden_note",
    "refusal_name",
    "render_records",
    "render_table_list",
    "scalar_problem",
]

MAX_CELL_CHARS: Final = 300
# Both channels stay under the host's 50,000-byte caps on their own, so the host never has to
# cut the text (which would break "every artifact cell is in the text") or drop the artifact.
_TEXT_BUDGET: Final = 40_000
_ARTIFACT_BUDGET: Final = 40_000
_INT_MIN: Final = -(2**63)
_INT_MAX: Final = 2**63 - 1
#: Between the cells of a text line (and the column names of its header line).
SEP: Final = " | "

_EXCERPT_CONTEXT: Final = 40


def format_cell(value: object, *, is_bool: bool = False) -> str:
    """One cell as the text both channels show: ``null``, ``true``/``false``, whitespace
    collapsed, at most :data:`MAX_CELL_CHARS` characters plus ``…``."""
    if value is None:
        text = "null"
    elif isinstance(value, bool) or (is_bool and type(value) is int and value in (0, 1)):
        text = "true" if value else "false"
    elif isinstance(value, bytes | bytearray | memoryview):
        text = f"<binary, {len(bytes(value))} bytes>"
    elif isinstance(value, dt.datetime | dt.date | dt.time):
        text = value.isoformat()
    elif isinstance(value, int | float | decimal.Decimal | str | uuid.UUID | dt.timedelta):
        text = str(value)
    else:
        text = f"<{type(value).__name__}>"
    text = " ".join(text.split())
    if len(text) > MAX_CELL_CHARS:
        text = text[:MAX_CELL_CHARS] + "…"
    return text


def refusal_name(name: object, limit: int = 64) -> str:
    """A model-given name, made short and single-line, to echo in a refusal."""
    text = name if isinstance(name, str) else repr(name)
    text = " ".join(text.split()) or "?"
    return text if len(text) <= limit else text[:limit] + "…"


def scalar_problem(value: object) -> str | None:
    """Why a JSON scalar cannot be bound as a filter or update value (``None``: it can)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "value is not a finite number"
    if type(value) is int and not _INT_MIN <= value <= _INT_MAX:
        return "value is out of range"
    return None


def hidden_note(count: int) -> str:
    return f"; {count} column(s) hidden" if count else ""


def render_records(
    schema: TableSchema,
    columns: list[str],
    raw_rows: list[tuple[Any, ...]],
    limit: int,
    offset: int,
) -> ToolResult:
    """Format every cell once; from those cells, in one pass, the text lines and the rows."""
    is_bool = [bool((c := schema.column(n)) and c.is_bool) for n in columns]
    header = SEP.join(columns)
    lines: list[str] = []
    rows: list[list[str]] = []
    text_size = len(header.encode()) + 200
    artifact_size = len(encode_json(columns)) + len(schema.name) + 100
    cut = False
    for raw in raw_rows[:limit]:
        cells = [format_cell(v, is_bool=b) for v, b in zip(raw, is_bool, strict=True)]
        line = SEP.join(cells)
        line_size = len(line.encode()) + 1
        row_size = len(encode_json(cells)) + 1
        if text_size + line_size > _TEXT_BUDGET or artifact_size + row_size > _ARTIFACT_BUDGET:
            cut = True
            break
        text_size += line_size
        artifact_size += row_size
        lines.append(line)
        rows.append(cells)
    more = cut or len(raw_rows) > limit
    if rows:
        head = f"{schema.name}: records {offset + 1}-{offset + len(rows)}"
    else:
        head = f"{schema.name}: no records" + (f" at offset {offset}" if offset else "")
    order = ", ".join(schema.order_by)
    head += (f", ordered by {order}" if order else "") + hidden_note(schema.hidden_count) + "."
    parts = [head, header, *lines]
    if cut and not rows:
        parts.append("One record is too large to show: ask for fewer fields.")
    elif more:
        parts.append(f"More records follow: call again with offset={offset + len(rows)}.")
    return ToolResult.text(
        "\n".join(parts), Artifact.table(f"{schema.name} records", columns, rows)
    )


def render_table_list(names: list[str], columns: list[list[str]]) -> ToolResult:
    """``list_tables``' result: the model gets the table names; the TABLE artifact ``tables``,
    which stays behind, adds each table's visible columns (the model asks ``describe_table``).
    """
    rows: list[list[str]] = []
    size = 100
    for name, visible in zip(names, columns, strict=True):
        row = [format_cell(name), format_cell(", ".join(visible))]
        row_size = len(encode_json(row)) + 1
        if size + row_size > _ARTIFACT_BUDGET:
            break
        size += row_size
        rows.append(row)
    label = "tables" if len(rows) == len(names) else f"tables (first {len(rows)} of {len(names)})"
    return ToolResult.text(
        f"Tables ({len(names)}): " + ", ".join(names),
        Artifact.table(label, ["table", "columns"], rows),
    )


def excerpt(value: str, needle: str) -> str:
    text = " ".join(value.split())
    at = text.lower().find(needle)
    if at < 0:
        return format_cell(text)
    start = max(0, at - _EXCERPT_CONTEXT)
    end = min(len(text), at + len(needle) + _EXCERPT_CONTEXT)
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")
