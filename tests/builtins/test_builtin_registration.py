"""The builtins as installed: entry points, metadata, host switches, the CLI, bad arguments."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nr_llm_core import DataClass, ToolHost, ToolResult

Invoke = Callable[[str, Any], ToolResult]

EXPECTED = {
    # name: (group, data class, enabled by default, requires approval)
    "list_tables": ("records", DataClass.INTERNAL, True, False),
    "describe_table": ("records", DataClass.INTERNAL, True, False),
    "read_records": ("records", DataClass.INTERNAL, True, False),
    "search_records": ("records", DataClass.INTERNAL, True, False),
    "update_record": ("records", DataClass.INTERNAL, False, True),
    "list_files": ("files", DataClass.INTERNAL, True, False),
    "read_file": ("files", DataClass.INTERNAL, True, False),
    "search_files": ("files", DataClass.INTERNAL, True, False),
    "get_env": ("system", DataClass.INTERNAL, True, False),
    "get_env_raw": ("system", DataClass.SECRET_ADJACENT, False, False),
    "system_status": ("system", DataClass.INTERNAL, True, False),
    "current_time": ("utility", DataClass.PUBLIC, True, False),
    "calculate": ("utility", DataClass.PUBLIC, True, False),
}


TOOL_NAMES = tuple(EXPECTED)


def _cli() -> str:
    return str(Path(sys.executable).with_name("nr-llm"))


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NR_LLM_")}
    env.update(extra)
    return env


def test_discovery_finds_every_builtin_with_its_metadata() -> None:
    # Not strict: another installed distribution's broken tool must not fail this test.
    host = ToolHost.discover()
    assert set(TOOL_NAMES) <= set(host.names())
    assert not [e for e in host.load_errors if e.distribution == "nr-llm"]
    for name, (group, data_class, enabled, approval) in EXPECTED.items():
        spec = host.spec(name)
        assert host.distribution(name) == "nr-llm"
        assert (spec.group, spec.data_class, spec.enabled_by_default, spec.requires_approval) == (
            group,
            data_class,
            enabled,
            approval,
        ), name
        assert host.is_enabled(name) is enabled
        assert spec.parameters.get("additionalProperties") is False


def test_switches_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NR_LLM_ENABLE_TOOLS", "update_record, get_env_raw, read_records")
    monkeypatch.setenv("NR_LLM_DISABLE_TOOLS", "calculate")
    monkeypatch.setenv("NR_LLM_DISABLE_GROUPS", "records")
    host = ToolHost.discover()
    assert host.is_enabled("get_env_raw")
    assert not host.is_enabled("calculate")
    # A disabled group is not re-enabled by a tool override.
    assert not host.is_enabled("update_record")
    assert not host.is_enabled("read_records")
    assert host.invoke("read_records", {"table": "x"}).content == (
        'Error: tool "read_records" not permitted'
    )
    assert host.is_enabled("current_time")


def test_switches_from_code_and_environment_combine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NR_LLM_DISABLE_TOOLS", "current_time")
    host = ToolHost.discover(enable=["current_time", "update_record"], disable_groups=["files"])
    assert not host.is_enabled("current_time")  # a disable always wins
    assert host.is_enabled("update_record")
    assert not host.is_enabled("read_file")


def test_importing_the_builtins_does_not_import_sqlalchemy() -> None:
    code = (
        "import sys, nr_llm_builtins, nr_llm_builtins.records, nr_llm_builtins.files, "
        "nr_llm_builtins.system, nr_llm_builtins.utility\n"
        "from nr_llm_core import ToolHost\n"
        "ToolHost.discover()\n"
        "assert 'sqlalchemy' not in sys.modules, 'sqlalchemy imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=_clean_env())


@pytest.mark.parametrize(
    "module",
    [
        "nr_llm_builtins",
        "nr_llm_builtins._config",
        "nr_llm_builtins._records_db",
        "nr_llm_builtins._records_format",
        "nr_llm_builtins._regex_worker",
        "nr_llm_builtins.demo_db",
        "nr_llm_builtins.files",
        "nr_llm_builtins.records",
        "nr_llm_builtins.system",
        "nr_llm_builtins.utility",
    ],
)
def test_every_module_declares_all(module: str) -> None:
    import importlib

    mod = importlib.import_module(module)
    assert isinstance(mod.__all__, list)
    for name in mod.__all__:
        assert hasattr(mod, name)


def test_cli_lists_all_builtins(tmp_path: Path) -> None:
    done = subprocess.run(
        [_cli(), "tools", "list", "--json"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env=_clean_env(),
    )
    listed = {row["name"]: row for row in json.loads(done.stdout)}
    assert set(TOOL_NAMES) <= set(listed)
    assert listed["update_record"]["enabled"] is False
    assert listed["read_records"]["group"] == "records"
    plain = subprocess.run(
        [_cli(), "tools", "list"], capture_output=True, text=True, check=True, env=_clean_env()
    )
    for name in TOOL_NAMES:
        assert f"\n{name} " in plain.stdout


def test_cli_runs_read_records_on_the_demo_database(tmp_path: Path) -> None:
    done = subprocess.run(
        [_cli(), "tools", "run", "read_records", "--args", '{"table": "customers"}'],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env=_clean_env(),
    )
    out = done.stdout
    assert out.startswith("content\ncustomers: records 1-8")
    assert "artifact [table] customers records" in out
    assert "Ada Lovelace" in out.split("artifact [table]")[1]
    assert "(8 row(s))" in out
    lowered = out.lower()
    for forbidden in ("email", "password", "pbkdf2", "@example.com", "phone", "+1-555"):
        assert forbidden not in lowered
    assert (tmp_path / ".nr-llm" / "demo.db").is_file()


# -- every argument of every tool, refused at the seam ----------------------------------------

_HUGE = "x" * 1_000_000


def _bad_values(schema: dict[str, Any]) -> Iterator[Any]:
    """Values that do not match ``schema``: wrong types, out of range, too large."""
    kind = schema.get("type")
    if kind == "string":
        yield from (5, None, True, [], {}, _HUGE)
    elif kind == "integer":
        yield from ("5", 1.5, True, None, [], float("nan"))
        if "minimum" in schema:
            yield schema["minimum"] - 1
        if "maximum" in schema:
            yield schema["maximum"] + 1
        yield 10**30
    elif kind == "boolean":
        yield from ("true", 1, None, [])
    elif kind == "array":
        yield from ("a", {}, None, [], [5], [None], [_HUGE], ["a"] * 101)
    elif kind == "object":
        yield from ("a", [], None, {"a": [1]}, {"a": {"b": 1}}, {"a": _HUGE}, {_HUGE: 1})
        yield {f"k{i}": 1 for i in range(25)}


def _bad_calls() -> Iterator[tuple[str, Any]]:
    host = ToolHost.discover()
    for name in TOOL_NAMES:
        params = host.spec(name).parameters
        required = params.get("required", [])
        base = {key: _valid_value(name, key) for key in required}
        yield name, [base]
        yield name, "not an object"
        yield name, {**base, "unexpected": 1}
        if required:
            yield name, {}
        for key, schema in params["properties"].items():
            for value in _bad_values(schema):
                yield name, {**base, key: value}


def _valid_value(tool: str, key: str) -> Any:
    return {
        "table": "customers",
        "query": "a",
        "path": "a.txt",
        "name": "HOME",
        "expression": "1",
        "key": {"id": 1},
        "values": {"name": "x"},
    }[key]


@pytest.mark.parametrize(("name", "arguments"), list(_bad_calls()))
def test_bad_arguments_get_a_short_error(invoke: Invoke, name: str, arguments: Any) -> None:
    result = invoke(name, arguments)
    assert result.is_error
    assert len(result.content) <= 400
    assert "Traceback" not in result.content
    assert result.content.startswith(f'Error: invalid arguments for tool "{name}"'), result.content


def test_documented_python_examples_run() -> None:
    import re

    doc = (Path(__file__).parents[2] / "docs" / "builtin-tools.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", doc, flags=re.DOTALL)
    assert blocks
    for block in blocks:
        exec(compile(block, "docs/builtin-tools.md", "exec"), {})


def test_every_builtin_is_documented() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "builtin-tools.md").read_text()
    for name in TOOL_NAMES:
        assert f"### `{name}`" in doc
    for var in (
        "NR_LLM_RECORDS_DB",
        "NR_LLM_RECORDS_PERSONAL_COLUMNS",
        "NR_LLM_RECORDS_SENSITIVE_COLUMNS",
        "NR_LLM_RECORDS_SENSITIVE_TABLES",
        "NR_LLM_FILES_ROOT",
        "NR_LLM_FILES_SEARCH_TIMEOUT",
        "NR_LLM_ENABLE_TOOLS",
        "NR_LLM_DISABLE_TOOLS",
        "NR_LLM_DISABLE_GROUPS",
    ):
        assert var in doc
