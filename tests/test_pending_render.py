"""The pieces behind the approver's view: pretty JSON safe on a terminal, the paging decision,
and which privacy levels show a pending call's arguments."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nr_llm_core.approval import SuspendedRunState, approver_view, arguments_shown
from nr_llm_core.audit import AgentRunPersister
from nr_llm_core.cli._output import should_page, visible_json
from nr_llm_core.cli._pending import recorded_level, render_pending
from nr_llm_core.messages import ChatMessage, ToolCall
from nr_llm_core.providers.base import Usage

RAW_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ud800-\udfff]"
)


def test_visible_json_is_pretty_and_keeps_the_key_order() -> None:
    value = {"b": [1, {"c": None}], "a": "x"}
    assert visible_json(value) == (
        '{\n  "b": [\n    1,\n    {\n      "c": null\n    }\n  ],\n  "a": "x"\n}'
    )


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[31m", "\\u001b[31m"),  # JSON's own escape for C0
        ("\x7f", "\\u007f"),
        ("\x85", "\\u0085"),
        ("\u202e", "\\u202e"),
        ("\u200b", "\\u200b"),
        ("\u2028", "\\u2028"),
        ("\ufeff", "\\ufeff"),
        ("\ud800", "\\ud800"),  # a lone surrogate
        ("\U000e0001", "\\udb40\\udc01"),  # an astral format character: a JSON surrogate pair
        ("\\u202e", "\\\\u202e"),  # a literal backslash stays distinguishable
        ("é ü 日本", "é ü 日本"),  # printable text is not escaped
    ],
)
def test_visible_json_escapes_are_json_escapes(raw: str, shown: str) -> None:
    text = visible_json({"k": raw})
    assert text == f'{{\n  "k": "{shown}"\n}}'
    assert json.loads(text) == {"k": raw}


JSON_VALUES = st.recursive(
    st.text()
    | st.integers()
    | st.booleans()
    | st.none()
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(st.dictionaries(st.text(), JSON_VALUES, max_size=4))
def test_visible_json_round_trips_and_shows_no_raw_control(value: dict[str, object]) -> None:
    text = visible_json(value)
    assert not RAW_UNSAFE.search(text)
    assert json.loads(text) == value


@pytest.mark.parametrize(
    ("text", "is_tty", "lines", "columns", "paged"),
    [
        ("a\nb\nc", True, 3, 80, False),  # fits exactly
        ("a\nb\nc\nd", True, 3, 80, True),  # one row too many
        ("a\nb\nc\nd", False, 3, 80, False),  # a pipe or a file: never paged
        ("x" * 161, True, 2, 80, True),  # one long line wraps to three rows
        ("x" * 160, True, 2, 80, False),
        ("a\nb\nc\nd", True, 0, 80, False),  # unknown height: not paged
    ],
)
def test_the_paging_decision(
    text: str, is_tty: bool, lines: int, columns: int, paged: bool
) -> None:
    assert should_page(text, is_tty=is_tty, lines=lines, columns=columns) is paged


@pytest.mark.parametrize(
    ("level", "shown"),
    [
        ("full", True),
        ("redacted", True),
        ("metadata", True),
        ("none", False),
        ("NONE", False),  # not a stored level name: fail closed
        ("secret", False),
        ("", False),
        (None, False),
        (0, False),
    ],
)
def test_arguments_are_shown_at_known_levels_other_than_none(level: object, shown: bool) -> None:
    assert arguments_shown(level) is shown


def _state() -> SuspendedRunState:
    calls = (
        ToolCall(id="a\x1b[2J", name="write", arguments={"text": "x" * 5000}),
        ToolCall(id="b", name="read", arguments={}, arguments_error="arguments are not valid JSON"),
    )
    return SuspendedRunState.create(
        run_id="r1",
        messages=(ChatMessage.user("go"), ChatMessage.assistant_tool_calls(calls)),
        pending=calls,
        needs_approval=("a\x1b[2J",),
        iterations=1,
        tool_rounds=0,
        usage=Usage(),
        allowed=None,
    )


def test_the_view_leaves_the_arguments_out_at_none() -> None:
    state = _state()
    full = approver_view(state, "metadata")
    blind = approver_view(state, "none")
    assert full["arguments_shown"] is True and blind["arguments_shown"] is False
    assert full["calls"][0]["arguments"] == {"text": "x" * 5000}
    assert [set(c) for c in blind["calls"]] == [
        {"id", "name", "needs_approval"},
        {"id", "name", "needs_approval", "arguments_error"},
    ]
    assert full["digest"] == blind["digest"] == state.digest


def test_the_text_shows_each_call_its_flag_and_the_whole_arguments() -> None:
    state = _state()
    text = render_pending(state, "full", decide_run_id="r1")
    assert not RAW_UNSAFE.search(text)
    assert text.splitlines()[:3] == [
        f"awaiting approval (digest {state.digest}):",
        f"  decide with: nr-llm runs approve|deny r1 --digest {state.digest}",
        "  a\\x1b[2J  write  [needs approval]",
    ]
    assert f'      "text": "{"x" * 5000}"' in text.splitlines()
    assert "  b  read  [runs on resume]" in text
    assert "(invalid arguments, answered with an error: arguments are not valid JSON)" in text
    blind = render_pending(state, "none")
    assert "(arguments not shown at privacy level none)" in blind
    assert "xxx" not in blind
    assert "decide with" not in blind


def test_the_recorded_level_comes_from_the_store_and_fails_closed(tmp_path: Path) -> None:
    """The run record's level decides; no store or no such run: the fallback; a store that
    cannot be read: None, which shows no arguments."""
    store = AgentRunPersister(tmp_path / "audit.db")
    run_id = store.begin(None, privacy="none")
    assert recorded_level(store, run_id, "full") == "none"
    assert recorded_level(store, "no-such-run", "full") == "full"
    assert recorded_level(None, run_id, "metadata") == "metadata"
    store.close()
    level = recorded_level(store, run_id, "full")
    assert level is None
    assert arguments_shown(level) is False
