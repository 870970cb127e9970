"""The public surface: __all__ is the documented API, and importing it stays light."""

from __future__ import annotations

import json
import subprocess
import sys

import nr_llm_core

# The contract names of DESIGN.md that exist so far, plus the documented additions.
DOCUMENTED = {
    "Artifact",
    "ArtifactType",
    "ConfigurationError",
    "DataClass",
    "LoadError",
    "MAX_ARTIFACT_BYTES",
    "MAX_ARTIFACT_DEPTH",
    "MAX_CONTENT_BYTES",
    "NrLlmError",
    "ToolContext",
    "ToolHost",
    "ToolLoadError",
    "ToolResult",
    "ToolSpec",
    "hookimpl",
}


def test_the_core_names_are_public_and_resolve() -> None:
    # tests/kit/test_meta.py checks that __all__ is exactly the documented API.
    assert set(nr_llm_core.__all__) >= DOCUMENTED
    for name in nr_llm_core.__all__:
        assert getattr(nr_llm_core, name) is not None, name
        assert name in dir(nr_llm_core)


def test_every_public_name_has_a_docstring() -> None:
    for name in nr_llm_core.__all__:
        value = getattr(nr_llm_core, name)
        if callable(value) and not isinstance(value, int):
            assert (value.__doc__ or "").strip(), f"{name} has no docstring"


def test_limits() -> None:
    assert nr_llm_core.MAX_CONTENT_BYTES == 50_000
    assert nr_llm_core.MAX_ARTIFACT_BYTES == 50_000
    assert nr_llm_core.MAX_ARTIFACT_DEPTH == 64


HEAVY = [
    "click",
    "httpx",
    "starlette",
    "uvicorn",
    "sqlalchemy",
    "jsonschema",
    "jsonschema_rs",
    "rich",
    "orjson",
    "sqlite3",
    "importlib_metadata",
    "nr_llm_core.cli",
    "nr_llm_builtins",
]


def test_import_does_not_pull_in_web_http_cli_or_storage_libraries() -> None:
    code = (
        "import sys, json, nr_llm_core;"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_cli_help_does_not_import_heavy_libraries() -> None:
    code = (
        "import sys, json\n"
        "from click.testing import CliRunner\n"
        "from nr_llm_core.cli import main\n"
        "result = CliRunner().invoke(main, ['--help'])\n"
        "assert result.exit_code == 0, result.output\n"
        "heavy = ['httpx', 'starlette', 'uvicorn', 'sqlalchemy', 'jsonschema_rs',\n"
        "         'importlib_metadata']\n"
        "print(json.dumps([m for m in heavy if m in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
