"""nr_llm_core.testing: the pytest plugin's fixtures and assertions."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from nr_llm_core import Artifact, ChatMessage, ToolResult, tool
from nr_llm_core.testing import (
    ScriptedLoopFactory,
    ToolHostFactory,
    artifact_strings,
    assert_bounded,
    assert_no_artifact_bytes_in,
)

CANARY = "canary-7f3a9c"


@tool(data_class="public")
def lookup(key: str) -> ToolResult:
    """Look a key up; the record stays in an artifact."""
    return ToolResult.text(
        f"found {key}",
        Artifact.table(f"record {CANARY}-label", ["key", f"{CANARY}-column"], [[key, CANARY]]),
    )


def test_tool_host_registers_and_invokes_through_the_seam(tool_host: ToolHostFactory) -> None:
    host = tool_host(lookup)
    assert host.names() == ["lookup"]
    result = host.invoke("lookup", {"key": "k1"})
    assert result.content == "found k1"
    assert_bounded(result)
    bad = host.invoke("lookup", {"key": 1})
    assert bad.is_error
    assert_bounded(bad)


def test_tool_host_passes_host_options(tool_host: ToolHostFactory) -> None:
    host = tool_host(lookup, disable=["lookup"])
    assert host.invoke("lookup", {"key": "x"}).content == 'Error: tool "lookup" not permitted'


def test_scripted_loop_runs_and_no_artifact_reaches_the_provider(
    scripted_loop: ScriptedLoopFactory,
) -> None:
    loop = scripted_loop(
        [{"tool_calls": [{"name": "lookup", "arguments": {"key": "k1"}}]}, "Done."],
        lookup,
    )
    result = loop.run("Find k1.")
    assert result.content == "Done."
    assert [i.name for i in result.invocations] == ["lookup"]
    requests: Any = loop.provider.requests  # type: ignore[attr-defined]  # a ScriptedProvider
    assert len(requests) == 2
    assert_no_artifact_bytes_in(requests, result)
    assert_no_artifact_bytes_in(requests, result.invocations[0].result)


def test_a_leak_is_caught() -> None:
    result = lookup.execute({"key": "k1"}, None)
    assert isinstance(result, ToolResult)
    first = [ChatMessage.user("Find k1.")]
    leaking = [first, [*first, ChatMessage.tool_result("call_1", f"found k1 {CANARY}")]]
    with pytest.raises(AssertionError, match=CANARY):
        assert_no_artifact_bytes_in(leaking, result)
    body = json.dumps({"x": f"record {CANARY}-label"})
    with pytest.raises(AssertionError, match="label"):
        assert_no_artifact_bytes_in(["{}", body], result)
    with pytest.raises(AssertionError):
        assert_no_artifact_bytes_in([b"{}", CANARY.encode()], result)
    assert_no_artifact_bytes_in([b"{}", CANARY.encode()], result, ignore=[CANARY])


def test_what_the_caller_or_the_model_supplied_is_not_a_leak(
    scripted_loop: ScriptedLoopFactory,
) -> None:
    # The artifact echoes the argument and the prompt holds the column name: neither came
    # through the tool's artifact channel.
    loop = scripted_loop(
        [{"tool_calls": [{"name": "lookup", "arguments": {"key": "zebra-7"}}]}, "Done."],
        lookup,
    )
    result = loop.run(f"Which {CANARY}-column holds zebra-7?")
    requests: Any = loop.provider.requests  # type: ignore[attr-defined]  # a ScriptedProvider
    assert_no_artifact_bytes_in(requests, result)


def test_strings_that_are_also_content_are_not_leaks() -> None:
    result = lookup.execute({"key": "k1"}, None)
    assert isinstance(result, ToolResult)
    # "k1" is a cell and part of the content "found k1": the content channel carries it.
    assert_no_artifact_bytes_in([[ChatMessage.tool_result("c", "found k1")]], result)


def test_artifact_strings_walks_labels_keys_and_leaves() -> None:
    artifact = Artifact.table("lbl", ["c1"], [["v1"]])
    assert artifact_strings([artifact]) == {"lbl", "columns", "rows", "c1", "v1"}


def test_assert_bounded_refuses_what_the_seam_never_returns() -> None:
    with pytest.raises(AssertionError, match="bytes"):
        assert_bounded(ToolResult.text("x" * 50_001))
    with pytest.raises(AssertionError, match="UTF-8"):
        assert_bounded(ToolResult.text("a\ud800"))
    with pytest.raises(AssertionError, match="carries artifacts"):
        assert_bounded(ToolResult._build("e", True, (Artifact.text("t", "x"),)))
    with pytest.raises(AssertionError, match="encode"):
        assert_bounded(ToolResult.text("ok", Artifact.text("t", "\ud800")))
    with pytest.raises(AssertionError, match="ToolResult"):
        assert_bounded("text")  # type: ignore[arg-type]  # the point of the test
    assert_bounded(ToolResult.text("x" * 50_000))


def test_the_plugin_loads_through_its_entry_point_without_a_conftest(tmp_path: Path) -> None:
    (tmp_path / "test_uses_fixtures.py").write_text(
        textwrap.dedent(
            """
            from nr_llm_core import tool

            @tool
            def shout(text: str) -> str:
                '''Shout a text.'''
                return text.upper()

            def test_it(tool_host, scripted_loop):
                assert tool_host(shout).invoke("shout", {"text": "hi"}).content == "HI"
                loop = scripted_loop(
                    [{"tool_calls": [{"name": "shout", "arguments": {"text": "a"}}]}, "ok"], shout
                )
                assert loop.run("go").invocations[0].result.content == "A"
            """
        )
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout


def test_importing_nr_llm_core_does_not_import_pytest() -> None:
    code = (
        "import sys, nr_llm_core, nr_llm_core.decorator;"
        "nr_llm_core.tool;"
        "print('pytest' in sys.modules, 'nr_llm_core.testing' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
