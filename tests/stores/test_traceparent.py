"""``record_traceparent`` on both stores: a resumption's telemetry stores its own span's trace
context with the run (ADR 0026), so the next resumption, in any process, continues it.

It replaces the ``traceparent`` key of an open run's meta and keeps every other key; it refuses
a value that is not a W3C ``traceparent`` (nothing but ids and flags is ever stored there), a
run that is unknown, and a run that has ended (its trace is complete).
"""

from __future__ import annotations

import pytest

from nr_llm_core.audit import RunSettledError, UnknownRunError
from nr_llm_core.stores import open_store
from nr_llm_core.traceparent import TRACEPARENT, TraceparentRecorder, parse_traceparent

FIRST = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
LATER = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"


def test_a_later_segment_replaces_the_stored_trace_context(store_target: str) -> None:
    with open_store(store_target) as store:
        assert isinstance(store, TraceparentRecorder)
        run = store.begin(meta={"model": "demo", TRACEPARENT: FIRST})
        store.record_traceparent(run, LATER)
        record = store.get_run(run)
    assert record is not None
    assert record["meta"] == {"model": "demo", TRACEPARENT: LATER}
    assert parse_traceparent(record["meta"]) == (
        "0af7651916cd43dd8448eb211c80319c",
        "00f067aa0ba902b7",
        1,
    )


def test_a_run_begun_without_meta_gets_one(store_target: str) -> None:
    with open_store(store_target) as store:
        run = store.begin()
        store.record_traceparent(run, LATER)
        assert store.get_run(run)["meta"] == {TRACEPARENT: LATER}


@pytest.mark.parametrize(
    "value",
    [
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",  # no flags
        "00-00000000000000000000000000000000-b7ad6b7169203331-01",  # an all-zero trace id
        "00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01",  # upper case
        "benign words, or a prompt's bytes",
    ],
)
def test_only_a_w3c_traceparent_is_stored(store_target: str, value: str) -> None:
    with open_store(store_target) as store:
        run = store.begin(meta={TRACEPARENT: FIRST})
        with pytest.raises(ValueError):
            store.record_traceparent(run, value)
        assert store.get_run(run)["meta"] == {TRACEPARENT: FIRST}


def test_an_unknown_or_ended_run_is_refused(store_target: str) -> None:
    with open_store(store_target) as store:
        with pytest.raises(UnknownRunError):
            store.record_traceparent("no-such-run", LATER)
        run = store.begin(meta={TRACEPARENT: FIRST})
        store.settle_completed(run)
        with pytest.raises(RunSettledError):
            store.record_traceparent(run, LATER)
        assert store.get_run(run)["meta"] == {TRACEPARENT: FIRST}
