"""nr-llm new-tool: the scaffold, and that it installs and passes its own tests as generated."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from nr_llm_core.cli import main
from nr_llm_core.cli.new_tool import scaffold

from .fresh_env import Venv


def test_new_tool_writes_the_four_files(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["new-tool", "word_count", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    root = tmp_path / "nr-llm-word-count"
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert files == [
        ".gitignore",
        "README.md",
        "pyproject.toml",
        "src/nr_llm_word_count/__init__.py",
        "tests/test_word_count.py",
    ]
    pyproject = (root / "pyproject.toml").read_text()
    assert '[project.entry-points."nr_llm.tool"]\nword_count = "nr_llm_word_count:word_count"' in (
        pyproject
    )
    assert "pip install -e" in result.output
    assert (
        f"edit {Path('src', 'nr_llm_word_count', '__init__.py')}: it starts as an example "
        "that counts words; its docstring's first paragraph is what a model reads"
    ) in result.output
    assert "pypi.org" not in (root / "README.md").read_text()  # nr-llm is not published
    for path in root.rglob("*.py"):
        compile(path.read_text(), str(path), "exec")


@pytest.mark.parametrize("name", ["Bad", "1st", "with-dash", "class", "", "x" * 65, "a b"])
def test_new_tool_refuses_names_that_are_not_tool_names(tmp_path: Path, name: str) -> None:
    result = CliRunner().invoke(main, ["new-tool", name, "--dir", str(tmp_path)])
    assert result.exit_code == 1
    assert "is not a tool name" in result.output
    assert list(tmp_path.iterdir()) == []


def test_new_tool_refuses_a_name_an_installed_tool_has(tmp_path: Path) -> None:
    """`calculate` is one of nr-llm's own builtins (an entry point of the installed nr-llm
    distribution): a second package claiming it would make the host refuse both, so the
    scaffold refuses the name before it writes anything."""
    result = CliRunner().invoke(main, ["new-tool", "calculate", "--dir", str(tmp_path)])
    assert result.exit_code == 1
    assert (
        "a tool named 'calculate' is already installed (by the distribution nr-llm): two "
        "packages that claim one name are both refused when tools load; choose another name"
    ) in result.output
    assert list(tmp_path.iterdir()) == []


def test_the_scaffold_keeps_the_audit_store_out_of_git(tmp_path: Path) -> None:
    """Running the tool from its package directory writes ./.nr-llm/ (the audit store, a
    scripted provider's script): the generated .gitignore keeps it, and the build and test
    leftovers, out of a commit (checked with a real git)."""
    root = scaffold("tally", tmp_path)
    for leftover in (".nr-llm/audit.db", "src/nr_llm_tally/__pycache__/x.pyc", "build/x"):
        (root / leftover).parent.mkdir(parents=True, exist_ok=True)
        (root / leftover).write_text("x")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    staged = subprocess.run(
        ["git", "-C", str(root), "diff", "--cached", "--name-only"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert sorted(staged) == [
        ".gitignore",
        "README.md",
        "pyproject.toml",
        "src/nr_llm_tally/__init__.py",
        "tests/test_tally.py",
    ]


def test_new_tool_never_overwrites(tmp_path: Path) -> None:
    scaffold("again", tmp_path)
    readme = tmp_path / "nr-llm-again" / "README.md"
    readme.write_text("mine")
    result = CliRunner().invoke(main, ["new-tool", "again", "--dir", str(tmp_path)])
    assert result.exit_code == 1
    assert "already exists" in result.output
    assert readme.read_text() == "mine"


def test_the_generated_tool_passes_its_tests_in_this_environment(tmp_path: Path) -> None:
    root = scaffold("shout_words", tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(root / "tests")],
        capture_output=True,
        text=True,
        cwd=root,
        env={"PYTHONPATH": str(root / "src"), "PATH": "/usr/bin:/bin"},
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 passed" in proc.stdout


@pytest.mark.slow
def test_the_generated_package_installs_and_passes_its_tests(
    fresh_venv: Venv, tmp_path: Path
) -> None:
    root = scaffold("word_tally", tmp_path)
    fresh_venv.pip_install("--no-build-isolation", "--no-deps", root)
    tests = fresh_venv.run(
        fresh_venv.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests", cwd=root
    )
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "3 passed" in tests.stdout
    ran = fresh_venv.run(
        fresh_venv.bin / "nr-llm", "tools", "run", "word_tally", "--args", '{"text": "a b a"}'
    )
    assert ran.returncode == 0, ran.stderr
    assert "3 words, 2 distinct" in ran.stdout
