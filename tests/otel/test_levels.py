"""The table of attributes per level in docs/telemetry.md is what arrives over OTLP: a run of
every kind exported at each level carries exactly the attributes the table promises there (the
rows marked ¹, which need a provider feature the loopback run does not have, may be absent)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from nr_llm_core import AgentRunPersister
from nr_llm_core.otel import OtelTelemetry
from nr_llm_core.otel import semconv as sc
from nr_llm_core.providers import _http

from ._receiver import OtlpReceiver, exporting
from ._runs import every_path

DOC = Path(__file__).resolve().parents[2] / "docs" / "telemetry.md"
LEVELS = ("none", "metadata", "redacted", "full")
METRICS = (sc.OPERATION_DURATION, sc.TOKEN_USAGE)
ROW = re.compile(r"^\| `([a-z_.]+)`( ¹)? \| ((?:`[a-z_.]+`(?:, )?)+) \|((?: [✓—] \|){4})$")


def promised() -> tuple[dict[str, set[tuple[str, str]]], set[tuple[str, str]]]:
    """level -> {(where, attribute)} from the page's table, and the rows marked ¹."""
    table: dict[str, set[tuple[str, str]]] = {level: set() for level in LEVELS}
    optional = set()
    rows = [ROW.match(line) for line in DOC.read_text(encoding="utf-8").splitlines()]
    for row in filter(None, rows):
        attribute, mark, places, marks = row.groups()
        shown = [m.strip() == "✓" for m in marks.strip(" |").split("|")]
        for place in re.findall(r"`([a-z_.]+)`", places):
            if mark:
                optional.add((place, attribute))
            for level, yes in zip(LEVELS, shown, strict=True):
                if yes:
                    table[level].add((place, attribute))
    assert sum(map(len, table.values())) > 100, "the table was not found"
    return table, optional


def observed(receiver: OtlpReceiver) -> set[tuple[str, str]]:
    found = set()
    for span in receiver.spans():
        place = span["name"].split(" ")[0]
        found |= {(place, key) for key in span["attributes"]}
        for name, attributes in span["events"]:
            found |= {(name, key) for key in attributes}
        for _, _, attributes in span["links"]:
            found |= {("link", key) for key in attributes}
    for metric in METRICS:
        for point in receiver.metric_points(metric):
            found |= {(metric, key) for key in point}
    return found


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, set[tuple[str, str]]]]:
    patch = pytest.MonkeyPatch()
    patch.setattr(_http, "_sleep", lambda seconds: None)
    found = {}
    try:
        for level in LEVELS:
            path = tmp_path_factory.mktemp(f"levels-{level}") / "audit.db"
            with OtlpReceiver() as receiver:
                with exporting(receiver) as (tracer_provider, meter_provider):
                    telemetry = [
                        OtelTelemetry(
                            tracer_provider=tracer_provider, meter_provider=meter_provider
                        )
                        for _ in range(2)
                    ]
                    with AgentRunPersister(path, privacy=level) as store:
                        every_path(level, store, telemetry[0], resume_with=telemetry[1])
                found[level] = observed(receiver)
        yield found
    finally:
        patch.undo()


@pytest.mark.parametrize("level", LEVELS)
def test_exactly_the_attributes_the_table_promises(
    exported: dict[str, set[tuple[str, str]]], level: str
) -> None:
    table, optional = promised()
    got = exported[level]
    assert sorted(got - table[level]) == [], "exported but not in the table"
    assert sorted(table[level] - optional - got) == [], "in the table but not exported"


def test_each_level_shows_at_least_what_the_stricter_one_does() -> None:
    table, _ = promised()
    for stricter, wider in itertools.pairwise(LEVELS):
        assert table[stricter] <= table[wider]
