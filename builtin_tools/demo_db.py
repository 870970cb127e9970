"""The demo shop database: customers (with emails and password hashes), products, orders.

It exists so that ``read_records`` shows both of its channels and its redaction on the embedded
default with nothing configured. It is built from code, deterministically (the same bytes of data
every time), with the standard library's ``sqlite3``; no file is shipped.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Final

__all__ = ["build_demo_db", "ensure_demo_db"]

_SCHEMA: Final = """
CREATE TABLE customers (
    id INTEGER PRIMARY KEY,
    name VARCHAR(100) NOT NULL,
    email VARCHAR(200) NOT NULL UNIQUE,
    phone VARCHAR(40),
    password_hash VARCHAR(200) NOT NULL,
    country CHAR(2) NOT NULL,
    is_active BOOLEAN NOT NULL,
    created_at DATETIME NOT NULL
);
CREATE TABLE products (
    id INTEGER PRIMARY KEY,
    sku VARCHAR(20) NOT NULL UNIQUE,
    name VARCHAR(100) NOT NULL,
    description TEXT,
    price_cents INTEGER NOT NULL,
    in_stock BOOLEAN NOT NULL
);
CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers(id),
    status VARCHAR(20) NOT NULL,
    ordered_at DATETIME NOT NULL,
    total_cents INTEGER NOT NULL
);
CREATE TABLE order_items (
    order_id INTEGER NOT NULL REFERENCES orders(id),
    product_id INTEGER NOT NULL REFERENCES products(id),
    quantity INTEGER NOT NULL,
    PRIMARY KEY (order_id, product_id)
);
CREATE TABLE sessions (
    id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers(id),
    token VARCHAR(64) NOT NULL,
    expires_at DATETIME NOT NULL
);
"""

_CUSTOMERS: Final = (
    ("Ada Lovelace", "GB"),
    ("Grace Hopper", "US"),
    ("Alan Turing", "GB"),
    ("Katherine Johnson", "US"),
    ("Emmy Noether", "DE"),
    ("Kurt Gödel", "AT"),
    ("Hedy Lamarr", "AT"),
    ("Edsger Dijkstra", "NL"),
)

_PRODUCTS: Final = (
    ("KB-001", "Mechanical keyboard", "Tactile switches,\nfull size layout.", 8900, True),
    ("MS-002", "Wireless mouse", "Two buttons and a wheel.", 2900, True),
    ("MN-003", "27-inch monitor", "1440p, matte.", 31900, False),
    ("CB-004", "USB-C cable", None, 900, True),
    ("DK-005", "Docking station", "Three displays; 100 W charging.", 17900, True),
)

_STATUSES: Final = ("paid", "shipped", "delivered", "cancelled")


def _password_hash(n: int) -> str:
    # A fixed salt and a low cost: these are demo rows, not accounts; what matters is that the
    # column looks exactly like what the tools must never show.
    digest = hashlib.pbkdf2_hmac("sha256", f"demo-password-{n}".encode(), b"nr-llm-demo", 1000)
    return "pbkdf2_sha256$1000$nr-llm-demo$" + digest.hex()


def _populate(db: sqlite3.Connection) -> None:
    db.executescript(_SCHEMA)
    for n, (name, country) in enumerate(_CUSTOMERS, start=1):
        email = name.lower().replace(" ", ".").replace("ö", "oe") + "@example.com"
        db.execute(
            "INSERT INTO customers VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                n,
                name,
                email,
                f"+1-555-01{n:02d}",
                _password_hash(n),
                country,
                n % 4 != 0,
                f"2024-0{1 + n % 9}-1{n % 10} 09:{n:02d}:00",
            ),
        )
        db.execute(
            "INSERT INTO sessions VALUES (?, ?, ?, ?)",
            (n, n, hashlib.sha256(f"session-{n}".encode()).hexdigest(), "2030-01-01 00:00:00"),
        )
    for n, (sku, name, description, price, in_stock) in enumerate(_PRODUCTS, start=1):
        db.execute(
            "INSERT INTO products VALUES (?, ?, ?, ?, ?, ?)",
            (n, sku, name, description, price, in_stock),
        )
    for n in range(1, 13):
        customer = 1 + (n * 3) % len(_CUSTOMERS)
        items = [(1 + (n + k) % len(_PRODUCTS), 1 + (n * k) % 3) for k in range(1 + n % 3)]
        total = sum(_PRODUCTS[p - 1][3] * q for p, q in items)
        db.execute(
            "INSERT INTO orders VALUES (?, ?, ?, ?, ?)",
            (n, customer, _STATUSES[n % 4], f"2025-0{1 + n % 9}-2{n % 8} 1{n % 10}:30:00", total),
        )
        db.executemany("INSERT INTO order_items VALUES (?, ?, ?)", [(n, p, q) for p, q in items])


def build_demo_db(path: str | os.PathLike[str]) -> Path:
    """Build the demo shop database at ``path``, replacing any file there; return the path.

    The file is written next to its destination and moved into place, so a concurrent reader
    never opens a half-built database.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".demo-", suffix=".db", dir=target.parent)
    os.close(fd)
    try:
        db = sqlite3.connect(tmp)
        try:
            with db:
                _populate(db)
        finally:
            db.close()
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def ensure_demo_db(path: str | os.PathLike[str]) -> Path:
    """The demo database at ``path``, built first when there is no file there yet."""
    target = Path(path)
    if not target.exists():
        build_demo_db(target)
    return target
