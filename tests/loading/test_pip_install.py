"""pip-installed tool packages from plugins/ (and broken ones), driven through the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._copies import project_copy

from .distributions import discover_in_subprocess

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "dists"

pytestmark = pytest.mark.slow


def pip_install(target: Path, *projects: Path) -> None:
    # pip builds a local project in its folder: copies, so that nothing lands in the checkout.
    sources = target.parent / f"{target.name}-sources"
    sources.mkdir(exist_ok=True)
    projects = tuple(project_copy(p, sources) for p in projects)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(target),
            *map(str, projects),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


def cli(target: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NR_LLM_")}
    env["PYTHONPATH"] = str(target)
    return subprocess.run(
        [sys.executable, "-m", "nr_llm_core", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("target")
    pip_install(target, ROOT / "plugins" / "nr-llm-hello", FIXTURES / "nr-llm-broken-import")
    return target


def test_pip_installed_tool_loads_beside_a_broken_one(installed: Path) -> None:
    out = discover_in_subprocess(installed)
    assert out["tools"]["hello"] == "nr-llm-hello"
    errors = [e for e in out["errors"] if e[0] == "nr-llm-broken-import"]
    assert errors == [
        [
            "nr-llm-broken-import",
            "broken",
            "could not be imported: ModuleNotFoundError: "
            "No module named 'nr_llm_dependency_that_is_not_installed'",
        ]
    ]


def test_cli_lists_shows_and_runs_the_installed_tool(installed: Path) -> None:
    listed = cli(installed, "tools", "list")
    assert listed.returncode == 0, listed.stderr
    assert "hello" in listed.stdout and "nr-llm-hello" in listed.stdout
    assert "failed to load" in listed.stderr

    shown = cli(installed, "tools", "show", "hello")
    assert shown.returncode == 0
    assert '"required": [' in shown.stdout and "data_class: public" in shown.stdout

    ran = cli(installed, "tools", "run", "hello", "--args", '{"name": "Ada"}')
    assert ran.returncode == 0, ran.stderr
    content_at = ran.stdout.index("Hello, Ada!")
    assert content_at < ran.stdout.index("artifact [table] greeting")

    as_json = cli(installed, "tools", "run", "hello", "--args", '{"name": "Ada"}', "--json")
    assert json.loads(as_json.stdout) == {
        "content": "Hello, Ada!",
        "is_error": False,
        "artifacts": [
            {
                "type": "table",
                "label": "greeting",
                "data": {"columns": ["name", "greeting"], "rows": [["Ada", "Hello, Ada!"]]},
            }
        ],
    }


def test_cli_escapes_control_characters_from_tool_output(installed: Path) -> None:
    hostile = "A\x1b[31mred\x1b[0m\u202eevil\x00\x9b"
    ran = cli(installed, "tools", "run", "hello", "--args", json.dumps({"name": hostile}))
    assert ran.returncode == 0
    for raw in ("\x1b", "\u202e", "\x00", "\x9b"):
        assert raw not in ran.stdout
    assert "\\x1b[31mred" in ran.stdout and "\\u202eevil" in ran.stdout


def test_cli_run_reports_errors_with_exit_status_1(installed: Path) -> None:
    bad = cli(installed, "tools", "run", "hello", "--args", "{}")
    assert bad.returncode == 1
    assert 'Error: invalid arguments for tool "hello"' in bad.stdout
    not_json = cli(installed, "tools", "run", "hello", "--args", "{nope")
    assert not_json.returncode == 2 and "not valid JSON" in not_json.stderr
    unknown = cli(installed, "tools", "show", "nope")
    assert unknown.returncode == 1 and "no tool named" in unknown.stderr


def test_doctor_reports_load_errors_and_exits_non_zero(installed: Path) -> None:
    doctor = cli(installed, "doctor")
    assert doctor.returncode == 1
    assert "broken (distribution nr-llm-broken-import)" in doctor.stdout
    assert "ModuleNotFoundError" in doctor.stdout


def test_two_installed_distributions_claiming_one_name_are_both_refused(tmp_path: Path) -> None:
    pip_install(tmp_path, ROOT / "plugins" / "nr-llm-hello", FIXTURES / "nr-llm-hello-clash")
    out = discover_in_subprocess(tmp_path)
    assert "hello" not in out["tools"]
    refused = sorted(e[0] for e in out["errors"] if e[1] == "hello")
    assert refused == ["nr-llm-hello", "nr-llm-hello-clash"]
    ran = cli(tmp_path, "tools", "run", "hello", "--args", '{"name": "x"}')
    assert ran.returncode == 1, ran.stderr
    assert (
        "Error: no tool named 'hello' is loaded: it was refused when the tools were loaded "
        "(tool name 'hello' is claimed by more than one distribution"
    ) in ran.stderr
