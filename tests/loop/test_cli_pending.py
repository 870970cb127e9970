"""Approvers see what they approve: `nr-llm run`, `runs show` and `runs approve|deny` print
every pending call whole, as pretty JSON, with no terminal control reaching the terminal; a
run recorded at privacy level none shows no arguments and is approved only with `--blind`.

Real parts: the builtin `update_record` tool on a real SQLite demo database, the audit store in
a real SQLite file, the commands through click's runner (and one real process on a pty).
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nr_llm_core.audit import AgentRunPersister
from nr_llm_core.cli import main

# Every raw control, C1, bidi, zero-width or separator character reaching the terminal fails.
RAW_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]"
)
CANARY = "CANARY-pending-7f3a"
HOSTILE = (
    f"{CANARY} esc\x1b[2J rlo\u202eevil nul\x00 c1\x85 zw\u200b bel\x07 del\x7f "
    "</script><b>x</b> tab\t nl\n ls\u2028 e\u0301"
)
# 500 characters past the hostile part: far beyond any preview cut.
NAME = HOSTILE + "".join(f"{i % 10}" for i in range(500))
UPDATE_ARGS: dict[str, Any] = {"table": "products", "key": {"id": 1}, "values": {"name": NAME}}
NOW_ARGS: dict[str, Any] = {"zone": {"nested": [1, {"deeper": [True, None, 2.5]}], "x": "é"}}
TURNS = [
    {
        "content": "Renaming it.",
        "tool_calls": [
            {"id": "upd1", "name": "update_record", "arguments": UPDATE_ARGS},
            {"id": "now1", "name": "current_time", "arguments": NOW_ARGS},
        ],
    },
    "Renamed.",
]


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(TURNS))
    return path


@pytest.fixture
def audit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    db = tmp_path / "audit.db"
    monkeypatch.setenv("NR_LLM_DB", str(db))
    return db


def cli(*args: str) -> tuple[int, str]:
    out = CliRunner().invoke(main, list(args))
    return out.exit_code, out.output


def product_name(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        (name,) = conn.execute("SELECT name FROM products WHERE id = 1").fetchone()
    return str(name)


def suspend(script: Path, *extra: str) -> tuple[str, str, str]:
    code, out = cli("run", "rename product 1", "--script", str(script), *extra)
    assert code == 0, out
    match = re.search(r"nr-llm runs approve\|deny (\w+) --digest (\w+)", out)
    assert match, out
    return match.group(1), match.group(2), out


def block_after(out: str, header: str) -> str:
    """The indented lines after the line that ends with ``header``, dedented."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.endswith(header)) + 1
    body = []
    for line in lines[start:]:
        if not line.startswith("    "):
            break
        body.append(line)
    return textwrap.dedent("\n".join(body))


def assert_pending_shown_whole(out: str) -> None:
    assert not RAW_UNSAFE.search(out), "a raw control character reached the terminal"
    update = block_after(out, "upd1  update_record  [needs approval]")
    now = block_after(out, "now1  current_time  [runs on resume]")
    # The whole arguments, not a preview: the text decodes to exactly what the tool receives.
    assert json.loads(update) == UPDATE_ARGS
    assert json.loads(now) == NOW_ARGS
    # Pretty-printed with indent=2, keys in the order the model sent them.
    assert now.splitlines()[:4] == ["{", '  "zone": {', '    "nested": [', "      1,"]
    assert update.splitlines()[:3] == ["{", '  "table": "products",', '  "key": {']
    # What an operator reads: JSON escapes only, each once (never \\x.., never \\\\u..).
    for shown in (
        "esc\\u001b[2J",
        "rlo\\u202eevil",
        "nul\\u0000",
        "c1\\u0085",
        "zw\\u200b",
        "bel\\u0007",
        "del\\u007f",
        "tab\\t",
        "nl\\n",
        "ls\\u2028",
        "</script><b>x</b>",
        "e\u0301",  # a combining accent is text, not a control
    ):
        assert shown in update, shown
    assert "\\x" not in update and "\\\\u" not in update
    assert "".join(f"{i % 10}" for i in range(500)) in update


def test_run_reports_every_pending_call_whole(shop: Path, script: Path, audit: Path) -> None:
    """`nr-llm run` used to cut each call's arguments at 80 characters on one line."""
    _, digest, out = suspend(script)
    assert f"awaiting approval (digest {digest}):" in out
    assert_pending_shown_whole(out)


def test_show_lists_the_pending_calls_of_a_suspended_run(
    shop: Path, script: Path, audit: Path
) -> None:
    """At the default level (metadata) the steps keep no arguments, but `runs show` prints
    the pending calls from the suspended state: ids, tools, flags, digest, whole arguments."""
    run_id, digest, _ = suspend(script)
    with AgentRunPersister(audit) as store:
        assert store.get_run(run_id)["privacy_level"] == "metadata"  # type: ignore[index]
    code, out = cli("runs", "show", run_id)
    assert code == 0, out
    assert "status: suspended" in out
    assert f"awaiting approval (digest {digest}):" in out
    # The tool is enabled by the variable only, and the run played a --script (ADR 0033).
    decide = f"runs approve|deny {run_id} --digest {digest} --script <the script you ran with>"
    assert f"decide with: NR_LLM_ENABLE_TOOLS=update_record nr-llm {decide}" in out
    assert_pending_shown_whole(out)


def test_approve_shows_the_calls_then_applies_the_decision(
    shop: Path, script: Path, audit: Path
) -> None:
    """The decision command prints what it decides on before the resumed run's report."""
    run_id, digest, _ = suspend(script)
    code, out = cli("runs", "approve", run_id, "--digest", digest, "--script", str(script))
    assert code == 0, out
    assert_pending_shown_whole(out)
    assert out.index("upd1  update_record") < out.index("Renamed.")
    assert product_name(shop) == NAME


def test_a_stricter_level_of_the_command_is_named_as_the_commands(
    shop: Path, script: Path, audit: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run recorded at metadata, approved by a command under NR_LLM_PRIVACY_LEVEL=none: the
    refusal says the level is the command's, from that variable, not the run's (which
    `runs list` shows as metadata)."""
    run_id, digest, _ = suspend(script)
    monkeypatch.setenv("NR_LLM_PRIVACY_LEVEL", "none")
    code, refused = cli("runs", "approve", run_id, "--digest", digest, "--script", str(script))
    assert code == 1
    assert (
        f"run {run_id!r} is recorded at privacy level metadata, and NR_LLM_PRIVACY_LEVEL=none "
        "makes this command show it at none: its pending calls' arguments are not shown"
    ) in " ".join(refused.split())
    assert product_name(shop) == "Mechanical keyboard"


def test_a_cut_digest_is_refused_as_cut_and_the_progress_says_refused(
    shop: Path, script: Path, audit: Path
) -> None:
    """The digest given short (as docs show it abbreviated): the refusal says to give it
    whole and that the run still waits, not that the turn changed; the progress line says
    `refused`, not `failed` (nothing ran); the run still waits."""
    run_id, digest, _ = suspend(script)
    out = CliRunner().invoke(
        main, ["runs", "approve", run_id, "--digest", digest[:8], "--script", str(script)]
    )
    assert out.exit_code == 1
    assert "Resuming the run … refused" in out.stderr
    assert "failed" not in out.stderr
    assert (
        "the digest is cut short: give the whole digest the pending calls show "
        f"({len(digest)} characters); nothing ran and the run still waits"
    ) in " ".join(out.stderr.split())
    assert product_name(shop) == "Mechanical keyboard"
    with AgentRunPersister(audit) as store:
        assert store.load_suspended(run_id) is not None


def test_deny_shows_the_calls_then_refuses_them(shop: Path, script: Path, audit: Path) -> None:
    run_id, digest, _ = suspend(script)
    code, out = cli("runs", "deny", run_id, "--digest", digest, "--script", str(script))
    assert code == 0, out
    assert_pending_shown_whole(out)
    assert product_name(shop) == "Mechanical keyboard"


def test_none_shows_no_arguments_and_approval_needs_blind(
    shop: Path, script: Path, audit: Path
) -> None:
    """A run recorded at privacy level none: no surface prints its arguments, and an approval
    without --blind is refused (the run keeps waiting); with --blind it is applied."""
    run_id, digest, out = suspend(script, "--privacy", "none")
    with AgentRunPersister(audit) as store:
        assert store.get_run(run_id)["privacy_level"] == "none"  # type: ignore[index]
    assert "(arguments not shown at privacy level none)" in out
    assert "upd1  update_record  [needs approval]" in out
    assert CANARY not in out

    code, shown = cli("runs", "show", run_id)
    assert code == 0, shown
    assert "(arguments not shown at privacy level none)" in shown
    assert "now1  current_time  [runs on resume]" in shown
    assert CANARY not in shown and '"zone"' not in shown

    code, refused = cli("runs", "approve", run_id, "--digest", digest, "--script", str(script))
    assert code == 1
    assert "--blind" in refused and "privacy level none" in refused
    assert CANARY not in refused
    assert product_name(shop) == "Mechanical keyboard"
    with AgentRunPersister(audit) as store:
        assert store.load_suspended(run_id) is not None  # still waiting

    code, done = cli(
        "runs", "approve", run_id, "--digest", digest, "--blind", "--script", str(script)
    )
    assert code == 0, done
    assert "(arguments not shown at privacy level none)" in done
    assert CANARY not in done
    assert product_name(shop) == NAME


def test_an_operator_at_none_is_shown_no_arguments_of_a_run_recorded_wider(
    shop: Path, script: Path, audit: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run suspended at ``full``, looked at and approved with ``NR_LLM_PRIVACY_LEVEL=none``:
    where levels meet the stricter wins (ADR 0011), so ``runs show`` (text and JSON) shows
    the pending calls without arguments (the steps stored at ``full`` stay as stored), an
    approval without --blind is refused, and the run is stored at ``none``."""
    run_id, digest, out = suspend(script, "--privacy", "full")
    assert CANARY in out  # recorded at full: shown to the operator who ran it
    monkeypatch.setenv("NR_LLM_PRIVACY_LEVEL", "none")
    code, shown = cli("runs", "show", run_id)
    assert code == 0, shown
    assert "(arguments not shown at privacy level none)" in shown
    code, shown = cli("runs", "show", run_id, "--json")
    assert code == 0, shown
    pending = json.loads(shown)["pending"]
    assert pending["arguments_shown"] is False
    assert not [call for call in pending["calls"] if "arguments" in call]
    code, refused = cli("runs", "approve", run_id, "--digest", digest, "--script", str(script))
    assert code == 1
    assert "--blind" in refused and CANARY not in refused
    assert product_name(shop) == "Mechanical keyboard"
    code, done = cli(
        "runs", "approve", run_id, "--digest", digest, "--blind", "--script", str(script)
    )
    assert code == 0, done
    assert CANARY not in done
    with AgentRunPersister(audit) as store:
        assert store.get_run(run_id)["privacy_level"] == "none"  # type: ignore[index]


def test_deny_at_none_needs_no_blind(shop: Path, script: Path, audit: Path) -> None:
    """Denying runs nothing, so it is never refused for arguments that cannot be shown."""
    run_id, digest, _ = suspend(script, "--privacy", "none")
    code, out = cli("runs", "deny", run_id, "--digest", digest, "--script", str(script))
    assert code == 0, out
    assert "(arguments not shown at privacy level none)" in out
    assert CANARY not in out
    assert product_name(shop) == "Mechanical keyboard"


@pytest.mark.parametrize("level", ["metadata", "none"])
def test_show_json_is_ascii_and_carries_the_pending_calls(
    shop: Path, script: Path, audit: Path, level: str
) -> None:
    run_id, digest, _ = suspend(script, "--privacy", level)
    code, out = cli("runs", "show", run_id, "--json")
    assert code == 0, out
    assert all(" " <= c <= "~" for c in out.rstrip("\n")), "not printable ASCII"
    data = json.loads(out)
    assert data["run"]["id"] == run_id and data["run"]["privacy_level"] == level
    assert [s["step"]["kind"] for s in data["steps"]][:2] == ["request", "llm"]
    pending = data["pending"]
    assert pending["digest"] == digest
    calls = pending["calls"]
    assert [(c["id"], c["name"], c["needs_approval"]) for c in calls] == [
        ("upd1", "update_record", True),
        ("now1", "current_time", False),
    ]
    if level == "none":
        assert pending["arguments_shown"] is False
        assert all("arguments" not in c for c in calls)
        assert CANARY not in out
    else:
        assert pending["arguments_shown"] is True
        assert [c["arguments"] for c in calls] == [UPDATE_ARGS, NOW_ARGS]


def test_show_json_of_a_finished_run_has_no_pending(shop: Path, script: Path, audit: Path) -> None:
    run_id, digest, _ = suspend(script)
    cli("runs", "deny", run_id, "--digest", digest, "--script", str(script))
    code, out = cli("runs", "show", run_id, "--json")
    assert code == 0, out
    assert json.loads(out)["pending"] is None
    code, text = cli("runs", "show", run_id)
    assert "awaiting approval" not in text


def test_an_altered_state_is_shown_with_a_warning(shop: Path, script: Path, audit: Path) -> None:
    """A stored state edited after it was saved is shown (it is data) and flagged: the
    decision on it will be refused."""
    run_id, _, _ = suspend(script)
    # The state is a file beside the database whose SHA-256 the run's row holds (ADR 0011):
    # whoever can edit both changes what is waiting, and only the digest can tell.
    conn = sqlite3.connect(audit)
    (name,) = conn.execute("SELECT state_file FROM runs WHERE id = ?", (run_id,)).fetchone()
    path = audit.with_name(audit.name + "-suspended") / name
    state = json.loads(path.read_bytes())
    state["pending"][0]["arguments"]["values"]["name"] = "swapped"
    state["messages"][-1]["tool_calls"][0]["arguments"]["values"]["name"] = "swapped"
    raw = json.dumps(state).encode()
    path.write_bytes(raw)
    conn.execute(
        "UPDATE runs SET state_sha256 = ? WHERE id = ?", (hashlib.sha256(raw).hexdigest(), run_id)
    )
    conn.commit()
    conn.close()
    code, out = cli("runs", "show", run_id)
    assert code == 0, out
    assert '"name": "swapped"' in out
    assert "warning: the suspended state does not match its digest" in out
    code, refused = cli("runs", "approve", run_id, "--script", str(script))
    assert code == 1
    assert "does not match its digest" in refused
    assert '"name": "swapped"' not in refused  # refused before anything is shown or asked
    assert product_name(shop) == "Mechanical keyboard"


def test_a_state_file_altered_behind_the_store_is_reported_not_shown(
    shop: Path, script: Path, audit: Path
) -> None:
    """A state file whose bytes no longer match the hash its row recorded is neither shown
    nor resumed: ``runs show`` prints the run and says the state is lost, ``approve`` refuses."""
    run_id, _, _ = suspend(script)
    conn = sqlite3.connect(audit)
    (name,) = conn.execute("SELECT state_file FROM runs WHERE id = ?", (run_id,)).fetchone()
    conn.close()
    path = audit.with_name(audit.name + "-suspended") / name
    state = json.loads(path.read_bytes())
    state["pending"][0]["arguments"]["values"]["name"] = "swapped-CANARY"
    path.write_bytes(json.dumps(state).encode())  # the row's hash is left as it was
    code, out = cli("runs", "show", run_id)
    assert code == 0, out
    assert "warning:" in out
    assert "discard" in out
    assert "swapped-CANARY" not in out
    code, refused = cli("runs", "approve", run_id, "--script", str(script))
    assert code == 1
    assert "swapped-CANARY" not in refused
    assert product_name(shop) == "Mechanical keyboard"
