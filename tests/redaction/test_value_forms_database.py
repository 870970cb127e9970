"""ADR 0043 end to end: a value after a credential name in the forms the red team found, through
a real run into a real SQLite file.

Every path a run stores (the prompt, the tool call's arguments, the tool's content, a text
artifact, a table cell, the model's answer) carries the texts of ``test_value_forms.py`` (a
quoted value that starts with a space, a quoted value over lines, command-line flags, MySQL's
``-p…``, ``sshpass -p``, URL- and HTML-encoded JSON, a query string's word, a phrase to the end
of an INI, ``.env`` or YAML line), each canary tagged with its path. The text is stored as is
and as a JSON string (as tool-call arguments are). No canary may be in any byte of the
database or its ``-wal``, open or closed, and the text around each value must be stored.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ._support import PATHS, assert_absent, nest, run_into, texts
from .test_value_forms import CASES, NOT_IN_JSON_STRINGS, Case


def _cases(depth: int) -> list[Case]:
    return [c for c in CASES if not depth or c.name not in NOT_IN_JSON_STRINGS]


def _payload(tag: str, depth: int) -> str:
    return "\n".join(c.text.replace(c.canary, tag + c.canary) for c in _cases(depth))


@pytest.mark.parametrize("depth", [0, 1])
def test_no_value_form_reaches_the_database(depth: int, tmp_path: Path) -> None:
    cases = _cases(depth)
    payloads = {tag: nest(_payload(tag, depth), depth) for tag in PATHS}
    for tag, payload in payloads.items():
        assert len(payload) < 2000  # under the redactor's cap: nothing is cut away
        for case in cases:
            assert tag + case.canary in payload
    stored = run_into(tmp_path / "audit.db", payloads)
    assert_absent(stored, {tag: [tag + case.canary for case in cases] for tag in PATHS})
    copies = [json.loads(s) if depth and s.startswith('"') else s for s in texts(stored.records)]
    for case in cases:
        for kept in case.kept:
            assert any(kept in s for s in copies), kept
