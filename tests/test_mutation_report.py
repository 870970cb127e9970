"""tests/MUTATION.md states how many lines are excluded from mutation: the count must be the
code's, so a pragma added or removed without the report (or the reverse) fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "tests" / "MUTATION.md"
PRAGMA = "pragma: no mutate"


def _pragma_lines() -> dict[str, int]:
    """Module (relative to nr_llm_core/) -> its lines carrying the pragma, where any do."""
    counts = {}
    for path in sorted((ROOT / "nr_llm_core").rglob("*.py")):
        count = sum(PRAGMA in line for line in path.read_text(encoding="utf-8").splitlines())
        if count:
            counts[path.relative_to(ROOT / "nr_llm_core").as_posix()] = count
    return counts


def test_the_report_states_the_number_of_pragma_lines_in_the_code() -> None:
    stated = re.findall(r"`# pragma: no mutate` on (\d+) lines", REPORT.read_text())
    assert len(stated) == 1, "MUTATION.md must state the count once, as '... on N lines'"
    # The report says they are all in the bounding group's modules and that the seam group
    # uses none.
    lines = _pragma_lines()
    assert set(lines) <= {"bounding.py", "_bounds.py", "_bounding_levels.py"}
    assert sum(lines.values()) == int(stated[0])
