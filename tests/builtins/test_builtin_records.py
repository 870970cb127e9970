"""The records tools against real SQLite files: what they show, and what they never show."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nr_llm_builtins._config import matches_any
from nr_llm_builtins._records_format import format_cell
from nr_llm_builtins.demo_db import build_demo_db
from nr_llm_core import ArtifactType, ToolResult
from nr_llm_core.encoding import encode_json

Invoke = Callable[[str, Any], ToolResult]

SECRET_MARKERS = ("pbkdf2", "@example.com", "+1-555", "password", "email", "phone", "token")


def _everything(result: ToolResult) -> str:
    return result.content + "".join(encode_json(a.to_dict()).decode() for a in result.artifacts)


def _assert_nothing_sensitive(result: ToolResult) -> None:
    text = _everything(result).lower()
    for marker in SECRET_MARKERS:
        assert marker not in text, marker


# -- read_records ---------------------------------------------------------------------------


def test_read_customers_shows_text_and_table_without_credentials(
    invoke: Invoke, shop_db: Path
) -> None:
    result = invoke("read_records", {"table": "customers"})
    assert not result.is_error
    assert "Ada Lovelace" in result.content
    (artifact,) = result.artifacts
    assert artifact.type is ArtifactType.TABLE
    assert artifact.label == "customers records"
    assert artifact.data["columns"] == ["id", "name", "country", "is_active", "created_at"]
    assert len(artifact.data["rows"]) == 8
    assert artifact.data["rows"][0][:4] == ["1", "Ada Lovelace", "GB", "true"]
    assert "3 column(s) hidden" in result.content
    _assert_nothing_sensitive(result)


@pytest.mark.parametrize(
    "arguments",
    [
        {"table": "customers"},
        {"table": "products"},
        {"table": "orders", "limit": 50},
        {"table": "order_items", "offset": 3, "limit": 7},
        {"table": "products", "fields": ["description"]},
        {"table": "orders", "where_equals": {"status": "paid"}},
    ],
)
def test_every_artifact_cell_appears_in_the_text(
    invoke: Invoke, shop_db: Path, arguments: dict[str, Any]
) -> None:
    result = invoke("read_records", arguments)
    assert not result.is_error
    (artifact,) = result.artifacts
    lines = result.content.splitlines()
    assert " | ".join(artifact.data["columns"]) in lines
    for row in artifact.data["rows"]:
        for cell in row:
            assert cell in result.content
        # And the whole row is one text line, in order: the two channels are one pass.
        assert " | ".join(row) in lines


def test_cells_are_formatted_once_for_both_channels(invoke: Invoke, tmp_path: Path, monkeypatch):
    db = tmp_path / "cells.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, flag BOOLEAN, note TEXT, n REAL)")
        conn.execute("INSERT INTO t VALUES (1, 1, 'a\n\tb   c', 1.5)")
        conn.execute("INSERT INTO t VALUES (2, 0, NULL, NULL)")
        conn.execute("INSERT INTO t VALUES (3, NULL, ?, 2)", ("x" * 1000,))
        conn.execute("INSERT INTO t VALUES (4, 1, ?, 3)", (b"\x00\x01",))
    monkeypatch.setenv("NR_LLM_RECORDS_DB", str(db))
    result = invoke("read_records", {"table": "t"})
    rows = result.artifacts[0].data["rows"]
    assert rows[0] == ["1", "true", "a b c", "1.5"]
    assert rows[1] == ["2", "false", "null", "null"]
    assert rows[2][2] == "x" * 300 + "…"
    assert rows[3][2] == "<binary, 2 bytes>"
    for row in rows:
        assert " | ".join(row) in result.content.splitlines()


def test_format_cell() -> None:
    assert format_cell(None) == "null"
    assert format_cell(True) == "true"
    assert format_cell(0, is_bool=True) == "false"
    assert format_cell(7, is_bool=True) == "7"
    assert format_cell("  a \r\n b ") == "a b"
    assert format_cell("é" * 301) == "é" * 300 + "…"
    assert len(format_cell("y" * 300)) == 300


def test_limit_offset_and_paging_note(invoke: Invoke, shop_db: Path) -> None:
    first = invoke("read_records", {"table": "orders", "limit": 5})
    assert len(first.artifacts[0].data["rows"]) == 5
    assert "offset=5" in first.content
    second = invoke("read_records", {"table": "orders", "limit": 5, "offset": 5})
    assert second.artifacts[0].data["rows"][0][0] == "6"
    past = invoke("read_records", {"table": "orders", "offset": 10_000})
    assert not past.is_error
    assert "no records" in past.content
    assert past.artifacts[0].data["rows"] == []
    default = invoke("read_records", {"table": "orders"})
    assert len(default.artifacts[0].data["rows"]) == 12


def test_fields_always_include_the_key(invoke: Invoke, shop_db: Path) -> None:
    result = invoke("read_records", {"table": "order_items", "fields": ["quantity"]})
    assert result.artifacts[0].data["columns"] == ["order_id", "product_id", "quantity"]


def test_where_equals_filters_with_bound_values(invoke: Invoke, shop_db: Path) -> None:
    result = invoke("read_records", {"table": "customers", "where_equals": {"country": "AT"}})
    names = [row[1] for row in result.artifacts[0].data["rows"]]
    assert names == ["Kurt Gödel", "Hedy Lamarr"]
    boolean = invoke("read_records", {"table": "customers", "where_equals": {"is_active": False}})
    assert [row[0] for row in boolean.artifacts[0].data["rows"]] == ["4", "8"]


@pytest.mark.parametrize(
    "value",
    [
        "' OR '1'='1",
        "GB'; DROP TABLE customers; --",
        '" OR 1=1 --',
        "%",
        "_",
        "\x00",
        "GB\\",
    ],
)
def test_injection_in_filter_values_matches_nothing(
    invoke: Invoke, shop_db: Path, value: str
) -> None:
    result = invoke("read_records", {"table": "customers", "where_equals": {"country": value}})
    assert not result.is_error
    assert result.artifacts[0].data["rows"] == []
    again = invoke("read_records", {"table": "customers"})
    assert len(again.artifacts[0].data["rows"]) == 8


@pytest.mark.parametrize(
    "table",
    [
        "customers; DROP TABLE customers",
        'customers" --',
        "customers WHERE 1=1",
        "sqlite_master",
        "sessions",
        "SESSIONS",
        "Customers",
        "nope",
        "main.customers",
        "(SELECT * FROM sessions)",
    ],
)
def test_table_names_are_looked_up_not_interpolated(
    invoke: Invoke, shop_db: Path, table: str
) -> None:
    for tool in ("read_records", "describe_table"):
        result = invoke(tool, {"table": table})
        assert result.is_error
        assert result.content == "Table not found or not permitted."
    search = invoke("search_records", {"table": table, "query": "a"})
    assert search.content == "Table not found or not permitted."
    with sqlite3.connect(shop_db) as conn:
        assert conn.execute("SELECT count(*) FROM customers").fetchone() == (8,)


@pytest.mark.parametrize(
    "field",
    ["email", "password_hash", "phone", "id, password_hash", "*", "name FROM sessions --", "1"],
)
def test_hidden_or_unknown_fields_are_refused(invoke: Invoke, shop_db: Path, field: str) -> None:
    result = invoke("read_records", {"table": "customers", "fields": [field]})
    assert result.is_error
    assert result.content.startswith("Field not found or not permitted:")
    _assert_nothing_sensitive(ToolResult.text(result.content.split(":", 1)[0]))


@pytest.mark.parametrize(
    "column", ["email", "password_hash", "PASSWORD_HASH", "name = name OR 1", "no_such"]
)
def test_filters_on_hidden_or_unknown_columns_are_refused(
    invoke: Invoke, shop_db: Path, column: str
) -> None:
    result = invoke("read_records", {"table": "customers", "where_equals": {column: "x"}})
    assert result.is_error
    assert result.content.startswith("Invalid filter: ")


def test_filter_values_out_of_range(invoke: Invoke, shop_db: Path) -> None:
    big = invoke("read_records", {"table": "orders", "where_equals": {"id": 2**70}})
    assert big.content == "Invalid filter: value is out of range."
    # Infinity is no JSON value: the schema check (JSON Schema 2020-12) refuses it first.
    inf = invoke("read_records", {"table": "orders", "where_equals": {"id": float("inf")}})
    assert inf.content == (
        'Error: invalid arguments for tool "read_records": expected null or boolean or number'
        " or string, got a non-JSON value @ $.where_equals.id"
    )


def test_host_can_change_the_personal_data_list(
    invoke: Invoke, shop_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NR_LLM_RECORDS_PERSONAL_COLUMNS", "")
    shown = invoke("read_records", {"table": "customers"})
    assert "email" in shown.artifacts[0].data["columns"]
    assert "password_hash" not in shown.artifacts[0].data["columns"]  # credentials: never
    assert "pbkdf2" not in _everything(shown)
    monkeypatch.setenv("NR_LLM_RECORDS_PERSONAL_COLUMNS", "name, email, phone")
    hidden = invoke("read_records", {"table": "customers"})
    assert hidden.artifacts[0].data["columns"] == ["id", "country", "is_active", "created_at"]


def test_host_can_add_sensitive_tables_and_columns(
    invoke: Invoke, shop_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NR_LLM_RECORDS_SENSITIVE_TABLES", "Orders")
    assert invoke("read_records", {"table": "orders"}).content.startswith("Table not found")
    assert "orders" not in invoke("list_tables", {}).content.replace("order_items", "")
    monkeypatch.setenv("NR_LLM_RECORDS_SENSITIVE_COLUMNS", "price")
    result = invoke("read_records", {"table": "products"})
    assert "price_cents" not in result.artifacts[0].data["columns"]


@pytest.mark.parametrize(
    ("name", "hidden"),
    [
        ("password", True),
        ("userPassword", True),
        ("pwd", True),
        ("user_pwd", True),
        ("api_key", True),
        ("apiKey", True),
        ("PrivateKey", True),
        ("session_id", True),
        ("refresh_token", True),
        ("salt", True),
        ("pin", True),
        ("card_pin", True),
        ("shipping", False),
        ("spin_rate", False),
        ("name", False),
        ("status", False),
    ],
)
def test_credential_patterns(name: str, hidden: bool) -> None:
    from nr_llm_builtins._config import CREDENTIAL_PATTERNS

    assert matches_any(name, CREDENTIAL_PATTERNS) is hidden


def test_list_and_describe(invoke: Invoke, shop_db: Path) -> None:
    listed = invoke("list_tables", {})
    assert listed.content == "Tables (4): customers, order_items, orders, products"
    described = invoke("describe_table", {"table": "orders"})
    assert "customer_id -> customers(id)" in described.content
    assert "Referenced by: order_items(order_id)" in described.content
    (artifact,) = described.artifacts
    assert artifact.label == "orders columns"
    for row in artifact.data["rows"]:
        assert " | ".join(row) in described.content.splitlines()
    customers = invoke("describe_table", {"table": "customers"})
    _assert_nothing_sensitive(customers)
    assert "3 column(s) hidden" in customers.content


def test_describe_hides_relations_to_sensitive_tables(invoke: Invoke, shop_db: Path) -> None:
    result = invoke("describe_table", {"table": "customers"})
    assert "sessions" not in result.content


def test_search_records(invoke: Invoke, shop_db: Path) -> None:
    result = invoke("search_records", {"table": "products", "query": "DISPLAYS"})
    assert "id=5" in result.content
    assert "Three displays" in result.content
    none = invoke("search_records", {"table": "products", "query": "%"})
    assert none.content.startswith("No records")
    customers = invoke("search_records", {"table": "customers", "query": "example.com"})
    assert customers.content.startswith("No records")  # email is not searched
    hidden = invoke(
        "search_records", {"table": "customers", "query": "a", "fields": ["password_hash"]}
    )
    assert hidden.is_error
    capped = invoke("search_records", {"table": "customers", "query": "e", "limit": 2})
    assert capped.content.count("\n- ") == 2
    assert "More records match" in capped.content


def test_update_record(invoke: Invoke, shop_db: Path) -> None:
    result = invoke(
        "update_record", {"table": "products", "key": {"id": 3}, "values": {"in_stock": True}}
    )
    assert result.content == "Updated 1 record in products (id=3): in_stock."
    with sqlite3.connect(shop_db) as conn:
        assert conn.execute("SELECT in_stock FROM products WHERE id = 3").fetchone() == (1,)


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"table": "customers", "key": {"id": 99}, "values": {"name": "x"}}, "Record not found."),
        ({"table": "customers", "key": {"id": 1}, "values": {"password_hash": "x"}}, "Invalid col"),
        ({"table": "customers", "key": {"id": 1}, "values": {"email": "x"}}, "Invalid column"),
        ({"table": "customers", "key": {"id": 1}, "values": {"id": 2}}, "Invalid column"),
        ({"table": "customers", "key": {"name": "x"}, "values": {"country": "x"}}, "Invalid key"),
        ({"table": "order_items", "key": {"order_id": 1}, "values": {"quantity": 1}}, "Invalid k"),
        ({"table": "sessions", "key": {"id": 1}, "values": {"token": "x"}}, "Table not found"),
        ({"table": "customers", "key": {"id": 1}, "values": {"name": None}}, "Update refused"),
        ({"table": "customers", "key": {"id": 1}, "values": {"name": 2**64}}, "Invalid value"),
    ],
)
def test_update_record_refusals(
    invoke: Invoke, shop_db: Path, arguments: dict[str, Any], error: str
) -> None:
    result = invoke("update_record", arguments)
    assert result.is_error
    assert result.content.startswith(error)
    with sqlite3.connect(shop_db) as conn:
        assert conn.execute("SELECT name FROM customers WHERE id = 1").fetchone() == (
            "Ada Lovelace",
        )


def test_update_record_is_off_by_default_and_needs_approval() -> None:
    from nr_llm_builtins.records import UpdateRecord
    from nr_llm_core import ToolHost

    host = ToolHost()
    host.register(UpdateRecord)
    spec = host.spec("update_record")
    assert spec.requires_approval
    assert not spec.enabled_by_default
    assert host.invoke("update_record", {}).content == 'Error: tool "update_record" not permitted'


def test_reading_connection_is_read_only(shop_db: Path) -> None:
    import sqlalchemy as sa

    from nr_llm_builtins._records_db import QueryFailed, connect

    with pytest.raises(QueryFailed), connect() as (conn, _):
        conn.execute(sa.text("DELETE FROM customers"))
    with sqlite3.connect(shop_db) as conn:
        assert conn.execute("SELECT count(*) FROM customers").fetchone() == (8,)


def test_demo_db_is_built_on_first_use_in_the_working_directory(
    invoke: Invoke, tmp_path: Path
) -> None:
    result = invoke("read_records", {"table": "customers", "limit": 1})
    assert not result.is_error
    assert (tmp_path / ".nr-llm" / "demo.db").is_file()


def test_demo_db_is_deterministic(tmp_path: Path) -> None:
    def dump(path: Path) -> list[str]:
        with sqlite3.connect(build_demo_db(path)) as conn:
            return list(conn.iterdump())

    assert dump(tmp_path / "a.db") == dump(tmp_path / "b.db")


@pytest.mark.parametrize("raw", ["missing.db", "not-a-db.txt", "sqlite:///nope/nope/x.db"])
def test_unusable_database_is_a_short_error(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    (tmp_path / "not-a-db.txt").write_text("hello")
    monkeypatch.setenv("NR_LLM_RECORDS_DB", raw)
    for tool, args in [
        ("list_tables", {}),
        ("read_records", {"table": "customers"}),
        ("describe_table", {"table": "customers"}),
        ("search_records", {"table": "customers", "query": "x"}),
    ]:
        assert invoke(tool, args).content == "Records database not available."
    assert not (tmp_path / "missing.db").exists()


def test_output_stays_within_the_budget_and_channels_agree(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "wide.db"
    with sqlite3.connect(db) as conn:
        cols = ", ".join(f"c{i} TEXT" for i in range(40))
        conn.execute(f"CREATE TABLE wide (id INTEGER PRIMARY KEY, {cols})")
        for n in range(50):
            conn.execute(f"INSERT INTO wide VALUES ({n}, {', '.join('?' * 40)})", ["é" * 400] * 40)
    monkeypatch.setenv("NR_LLM_RECORDS_DB", str(db))
    result = invoke("read_records", {"table": "wide", "limit": 50})
    assert not result.is_error
    assert "truncated" not in result.content
    assert result.artifacts[0].label == "wide records"  # not the host's omission marker
    rows = result.artifacts[0].data["rows"]
    assert 0 < len(rows) < 50
    assert f"offset={len(rows)}" in result.content
    for row in rows:
        assert " | ".join(row) in result.content.splitlines()


def test_table_with_only_hidden_columns(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "keys.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE vault (password TEXT, api_key TEXT)")
        conn.execute("INSERT INTO vault VALUES ('hunter2', 'sk-live')")
    monkeypatch.setenv("NR_LLM_RECORDS_DB", str(db))
    result = invoke("read_records", {"table": "vault"})
    assert result.content == "Table vault has no columns that may be shown."
    described = invoke("describe_table", {"table": "vault"})
    assert "hunter2" not in described.content
    assert "password" not in described.content
    assert "2 column(s) hidden" in described.content
    search = invoke("search_records", {"table": "vault", "query": "hunter"})
    assert search.content == "Table vault has no text columns to search."


def test_quoted_identifiers_with_odd_names(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "odd.db"
    with sqlite3.connect(db) as conn:
        conn.execute('CREATE TABLE "we""ird table" ("select" INTEGER PRIMARY KEY, "a b" TEXT)')
        conn.execute("INSERT INTO \"we\"\"ird table\" VALUES (1, 'x'), (2, 'y')")
    monkeypatch.setenv("NR_LLM_RECORDS_DB", str(db))
    result = invoke(
        "read_records", {"table": 'we"ird table', "where_equals": {"a b": "y"}, "fields": ["a b"]}
    )
    assert result.artifacts[0].data == {"columns": ["select", "a b"], "rows": [["2", "y"]]}
    search = invoke("search_records", {"table": 'we"ird table', "query": "x"})
    assert "select=1" in search.content


_cell_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=400),
    st.binary(max_size=20),
)


@settings(
    # Every example writes a real SQLite table and runs the tool: 40 in every profile.
    max_examples=40,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(rows=st.lists(st.tuples(_cell_values, _cell_values, st.booleans()), max_size=25))
def test_property_every_artifact_cell_is_in_the_text(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch, rows: list[tuple[Any, Any, bool]]
) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "prop.db"
        with sqlite3.connect(db) as conn:
            conn.execute(
                "CREATE TABLE t (id INTEGER PRIMARY KEY, a, b TEXT, flag BOOLEAN, secret TEXT)"
            )
            conn.executemany(
                "INSERT INTO t VALUES (?, ?, ?, ?, 'CANARY-SECRET')",
                [(i, a, b, f) for i, (a, b, f) in enumerate(rows)],
            )
        conn.close()
        monkeypatch.setenv("NR_LLM_RECORDS_DB", str(db))
        result = invoke("read_records", {"table": "t", "limit": 50})
    assert not result.is_error
    (artifact,) = result.artifacts
    assert artifact.data["columns"] == ["id", "a", "b", "flag"]
    lines = result.content.splitlines()
    assert len(artifact.data["rows"]) == len(rows)
    for row in artifact.data["rows"]:
        assert " | ".join(row) in lines
        for cell in row:
            assert cell in result.content
            assert len(cell) <= 301
            assert "\n" not in cell
    assert "CANARY-SECRET" not in _everything(result)


def test_missing_driver_is_a_short_error(invoke: Invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NR_LLM_RECORDS_DB", "postgresql+nosuchdriver://u:pw@localhost/db")
    result = invoke("list_tables", {})
    assert result.content == "Records database not available."


def test_locked_database_is_a_short_error(
    invoke: Invoke, shop_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    locker = sqlite3.connect(shop_db, timeout=0)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        result = invoke(
            "update_record", {"table": "products", "key": {"id": 1}, "values": {"name": "x"}}
        )
    finally:
        locker.rollback()
        locker.close()
    assert result.is_error
    assert result.content in (
        "Records database not available.",
        "The records database could not run this query.",
    )


def test_views_are_not_readable(invoke: Invoke, shop_db: Path) -> None:
    with sqlite3.connect(shop_db) as conn:
        conn.execute("CREATE VIEW logins AS SELECT id, password_hash AS harmless FROM customers")
    assert "logins" not in invoke("list_tables", {}).content
    result = invoke("read_records", {"table": "logins"})
    assert result.content == "Table not found or not permitted."


def test_list_tables_keeps_the_columns_behind(invoke: Invoke, shop_db: Path) -> None:
    """The model gets the table names; the artifact adds each table's visible columns, and no
    hidden column or table."""
    listed = invoke("list_tables", {})
    assert listed.content == "Tables (4): customers, order_items, orders, products"
    (artifact,) = listed.artifacts
    assert artifact.label == "tables"
    assert artifact.data["columns"] == ["table", "columns"]
    rows = dict(artifact.data["rows"])
    assert rows["customers"] == "id, name, country, is_active, created_at"
    assert rows["order_items"] == "order_id, product_id, quantity"
    for columns in rows.values():
        assert columns not in listed.content
    _assert_nothing_sensitive(listed)


def test_list_tables_artifact_stays_within_the_budget(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many wide tables: the artifact lists the first ones and says so in its label; the
    text still names every table, and the host never has to replace the artifact."""
    db = tmp_path / "many.db"
    with sqlite3.connect(db) as conn:
        cols = ", ".join(f"column_with_a_long_name_{i} TEXT" for i in range(12))
        for n in range(200):
            conn.execute(f"CREATE TABLE t{n:03d} ({cols})")
    monkeypatch.setenv("NR_LLM_RECORDS_DB", str(db))
    listed = invoke("list_tables", {})
    assert listed.content.startswith("Tables (200): t000, t001")
    (artifact,) = listed.artifacts
    shown = len(artifact.data["rows"])
    assert 0 < shown < 200
    assert artifact.label == f"tables (first {shown} of 200)"
