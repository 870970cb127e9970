"""A run id is at most MAX_RUN_ID_BYTES of UTF-8, on both stores (ADR 0044, amended).

An adversarial pass began a run with a 3,100-character id: the store listed it, and the
playground could not open it (its reference is longer than any URL the server takes), though
ADR 0044 says every listed run can be opened. The begin is refused now, before anything is
written, with the same words on SQLite and PostgreSQL.
"""

from __future__ import annotations

import pytest

from nr_llm_core._audit_records import MAX_RUN_ID_BYTES
from nr_llm_core.audit import AuditStoreError
from nr_llm_core.stores import open_store


@pytest.mark.parametrize(
    "run_id",
    ["x" * (MAX_RUN_ID_BYTES + 1), "é" * (MAX_RUN_ID_BYTES // 2) + "x", "y" * 20_000],
    ids=["one-ascii-byte-over", "one-byte-over-in-two-byte-characters", "long"],
)
def test_a_run_id_over_the_limit_begins_nothing(store_target: str, run_id: str) -> None:
    with open_store(store_target) as store:
        with pytest.raises(AuditStoreError, match=f"at most {MAX_RUN_ID_BYTES} bytes"):
            store.begin(run_id)
        assert store.list_runs() == []


def test_the_longest_run_id_begins_and_is_found(store_target: str) -> None:
    longest = "é" * (MAX_RUN_ID_BYTES // 2)
    with open_store(store_target) as store:
        assert store.begin(longest) == longest
        assert [r["id"] for r in store.list_runs()] == [longest]
