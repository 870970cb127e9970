"""The sweep: a distinct canary in every content path of a run, looked for in the database FILES.

Each path carries a benign canary (plain words) and a secret-shaped one (a key, an email, a
bearer token, a value under a sensitive key …). At FULL every canary is stored; at REDACTED
only the benign ones; at METADATA and NONE none, in any byte of the database, its ``-wal`` or
its ``-shm`` file, while the store is open and after it is closed; on a PostgreSQL store, in
any row of its tables. Exception text never leaves the seam at any level.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nr_llm_core.hooks import hookimpl
from nr_llm_core.host import ToolHost
from nr_llm_core.privacy import PrivacyLevel
from nr_llm_core.results import Artifact, ToolResult, ToolSpec
from nr_llm_core.stores import AuditStore, open_store, store_kind
from nr_llm_core.trace import RunStep, RunTrace, ToolInvocation

from .store._support import stored_text as held_text

PAD = "Q7w9" * 6  # makes secret-shaped canaries long enough to be keys

BENIGN = {
    "message": "benignmessagecanary",
    "message_key": "benignmessagekeycanary",
    "thinking": "benignthinkingcanary",
    "content": "benignllmcontentcanary",
    "raw": "benignrawcanary",
    "argument": "benignargumentcanary",
    "argument_key": "benignargumentkeycanary",
    "result": "benignresultcanary",
    "label": "benignlabelcanary",
    "column": "benigncolumncanary",
    "cell": "benigncellcanary",
    "text_artifact": "benigntextartifactcanary",
}
SECRET = {
    "message": f"sk-ant-api03-SECRETMESSAGE{PAD}",
    "message_key": f"sk-proj-SECRETMESSAGEKEY{PAD}",
    "thinking": "secret.thinking.canary@example.com",
    "content": f"ghp_SECRETCONTENT{PAD}x",
    "raw": f"AKIASECRETRAW{'Z' * 7}",
    "argument": "SECRETARGUMENTPASSWORD",  # under a "password" key: masked whole
    "argument_key": "secret.argument.key@example.com",
    "result": f"SECRETRESULT{PAD}",  # after "Bearer "
    "label": "secret.label.canary@example.com",
    "column": f"sk-ant-SECRETCOLUMN{PAD}",
    "cell": "4012888888881881",  # a Luhn-valid card number
    "text_artifact": "postgres://admin:SECRETTEXTARTIFACT@db",
}
# Never stored at any level: the seam keeps exception text out of results.
EXCEPTION_CANARY = "exceptioncanarymustneverbestored"
# Host-ish keys that still carry model bytes: must not appear at METADATA/NONE.
HOSTISH = {
    "tool_call_id": "call_hostishcallidcanary",
    "approval_key": "call_hostishapprovalcanary",
    "bad_tool_name": "hostish tool name canary!",
    "unknown_tool_name": "hostishunknowntoolcanary",
    "reason": "Provider said hostishreasoncanary",
    "termination": "Crashed with hostishterminationcanary",
    "usage_key": "hostishusagekeycanary",
}


class Catalogue:
    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("catalogue", "Returns a table.", {"type": "object"})

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.text(
            f"{BENIGN['result']} Bearer {SECRET['result']}",
            Artifact.table(
                f"{BENIGN['label']} {SECRET['label']}",
                [BENIGN["column"], SECRET["column"]],
                [[BENIGN["cell"], SECRET["cell"]]],
            ),
            Artifact.text("notes", f"{BENIGN['text_artifact']} {SECRET['text_artifact']}"),
        )


class Boom:
    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("boom", "Always fails.", {"type": "object"})

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        raise RuntimeError(EXCEPTION_CANARY)


def record_run(store: AuditStore) -> str:
    host = ToolHost()
    host.register(Catalogue())
    host.register(Boom())
    trace = RunTrace()
    run = store.attach(trace)
    arguments = {
        BENIGN["argument_key"]: BENIGN["argument"],
        "password": SECRET["argument"],
        SECRET["argument_key"]: "value",
    }
    trace.record(
        RunStep.request(
            round=0,
            messages=[
                {"role": "user", "content": f"{BENIGN['message']} {SECRET['message']}"},
                {"role": "user", BENIGN["message_key"]: 1, SECRET["message_key"]: 2},
            ],
        )
    )
    calls = [
        {"id": HOSTISH["tool_call_id"], "name": "catalogue", "arguments": arguments},
        {"id": "c2", "name": HOSTISH["bad_tool_name"], "arguments": {}},
    ]
    trace.record(
        RunStep.llm(
            round=0,
            duration_ms=3.0,
            content=f"{BENIGN['content']} {SECRET['content']}",
            thinking=f"{BENIGN['thinking']} {SECRET['thinking']}",
            requested_tool_calls=calls,
            raw={"choices": [{BENIGN["raw"]: SECRET["raw"]}]},
            usage={"input_tokens": 3, HOSTISH["usage_key"]: 4},
        )
    )
    for name, call_id in (
        ("catalogue", HOSTISH["tool_call_id"]),
        ("boom", "c3"),
        (HOSTISH["unknown_tool_name"], "c4"),
    ):
        result = host.invoke(name, arguments if name == "catalogue" else {})
        invocation = ToolInvocation(name=name, arguments=arguments, result=result, call_id=call_id)
        trace.record(RunStep.tool(round=0, duration_ms=1.0, invocation=invocation))
    trace.record(
        RunStep.approval(round=1, decisions={HOSTISH["approval_key"]: True}, digest="ab" * 8)
    )
    trace.record(RunStep.error(round=1, reason=HOSTISH["reason"]))
    store.settle_failed(run, termination_reason=HOSTISH["termination"], iterations=2)
    return run


def file_bytes(target: str) -> dict[str, bytes]:
    """What the store holds: the SQLite file and its companions (``-wal``) byte for byte; on
    PostgreSQL every row of its tables, as text (what any SQL reader of it sees)."""
    if store_kind(target) == "postgresql":
        return {"rows": held_text(target).encode("utf-8", "surrogatepass")}
    db = Path(target)
    return {p.name: p.read_bytes() for p in db.parent.iterdir() if p.name.startswith(db.name)}


def stored_text(store: AuditStore, run: str) -> str:
    return "\n".join(s["payload"] for s in store.steps(run))


def assert_absent(canaries: list[str], files: dict[str, bytes]) -> None:
    for canary in canaries:
        for name, data in files.items():
            assert canary.encode() not in data, f"{canary!r} found in {name}"


@pytest.fixture(params=list(PrivacyLevel), ids=lambda level: level.value)
def level(request: pytest.FixtureRequest) -> PrivacyLevel:
    return request.param


def test_sweep(level: PrivacyLevel, store_target: str) -> None:
    """At each level, on both stores: what the filter lets through, and nothing else, is
    anywhere in the store (SQLite: the file and its WAL; PostgreSQL: every row)."""
    store = open_store(store_target, privacy=level)
    run = record_run(store)
    text = stored_text(store, run)
    open_files = file_bytes(store_target)
    if store_kind(store_target) == "sqlite":
        assert any(name.endswith("-wal") for name in open_files)  # the WAL is looked at too
    store.close()
    closed_files = file_bytes(store_target)

    assert_absent([EXCEPTION_CANARY], open_files)
    assert_absent([EXCEPTION_CANARY], closed_files)
    if level is PrivacyLevel.FULL:
        for canary in [*BENIGN.values(), *SECRET.values()]:
            assert canary in text, canary
    elif level is PrivacyLevel.REDACTED:
        for canary in BENIGN.values():
            assert canary in text, canary
        assert_absent(list(SECRET.values()), open_files)
        assert_absent(list(SECRET.values()), closed_files)
        assert "[REDACTED:" in text
    else:
        everything = [*BENIGN.values(), *SECRET.values(), *HOSTISH.values()]
        assert_absent(everything, open_files)
        assert_absent(everything, closed_files)


def test_metadata_keeps_the_shape_of_the_run(store_target: str) -> None:
    # The sweep's absence checks would pass on an empty store: this pins what IS stored.
    with open_store(store_target) as store:
        run = record_run(store)
        steps = [s["step"] for s in store.steps(run)]
        record = store.get_run(run)
    assert [s["kind"] for s in steps] == [
        "request",
        "llm",
        "tool",
        "tool",
        "tool",
        "approval",
        "error",
    ]
    tools = steps[2:5]
    assert [t["tool_name"] for t in tools] == ["catalogue", "boom", "[unknown-tool]"]
    assert tools[0]["tool_artifact_types"] == ["table", "text"]
    assert [t["tool_is_error"] for t in tools] == [False, True, True]
    assert steps[1]["requested_tool_names"] == ["catalogue", "[invalid-tool-name]"]
    assert steps[1]["usage"] == {"input_tokens": 3}
    assert steps[5]["approved_count"] == 1
    assert steps[6]["reason"] == "[unrecognised-reason]"
    assert record is not None
    assert record["termination_reason"] == "[unrecognised-reason]"
    assert record["status"] == "failed"


def test_none_stores_a_row_per_step_with_nothing_but_timing(store_target: str) -> None:
    with open_store(store_target, privacy="none") as store:
        run = record_run(store)
        steps = store.steps(run)
    assert len(steps) == 7
    assert all(set(s["step"]) == {"kind", "round", "duration_ms"} for s in steps)
