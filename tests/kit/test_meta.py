"""In the spirit of datasette's: every hookspec and every public name is documented and tested,
and ``nr_llm_core.__all__`` is exactly the documented public API."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import nr_llm_core
from nr_llm_core.hooks import ToolHookSpec

from .docs_examples import DOCS, ROOT, pages

HERE = Path(__file__).resolve()
# Files that list the names to check them, and so prove nothing about their use.
LISTS = {HERE, ROOT / "tests" / "core" / "test_public_api.py"}


def _documented_api() -> set[str]:
    """The names in the first column of the table on the API reference's index page."""
    text = (DOCS / "reference" / "index.md").read_text()
    return set(re.findall(r"^\| `(\w+)` \|", text, re.MULTILINE))


def _reference_text() -> str:
    reference = DOCS / "reference"
    return "\n".join(p.read_text() for p in reference.glob("*.md") if p.name != "index.md")


def _test_text() -> str:
    files = [*ROOT.glob("tests/**/*.py"), *ROOT.glob("plugins/*/tests/**/*.py")]
    return "\n".join(p.read_text() for p in files if p.resolve() not in LISTS)


def _hookspecs() -> list[str]:
    return [
        name
        for name, member in inspect.getmembers(ToolHookSpec, inspect.isfunction)
        if hasattr(member, "nr_llm_spec")
    ]


def test_all_equals_the_documented_public_api() -> None:
    assert set(nr_llm_core.__all__) == _documented_api()
    assert len(nr_llm_core.__all__) == len(set(nr_llm_core.__all__))


@pytest.mark.parametrize("name", sorted(nr_llm_core.__all__))
def test_every_public_name_has_a_reference_entry(name: str) -> None:
    # A ::: directive or a members: entry on a reference page renders its docstring.
    assert re.search(rf"(::: [\w.]+\.{name}$|^\s+- {name}$)", _reference_text(), re.MULTILINE), (
        f"{name} has no entry in docs/reference/"
    )


@pytest.mark.parametrize("name", sorted(nr_llm_core.__all__))
def test_every_public_name_is_used_in_a_test(name: str) -> None:
    assert re.search(rf"\b{name}\b", _test_text()), f"no test uses {name}"


def test_the_hookspecs_are_the_two_tool_hooks() -> None:
    assert _hookspecs() == ["execute", "tool_spec"]


@pytest.mark.parametrize("hook", ["execute", "tool_spec"])
def test_every_hookspec_is_documented_and_tested(hook: str) -> None:
    assert hook in _hookspecs()
    docs = "\n".join(p.read_text() for p in pages())
    assert f"`{hook}" in docs, f"the {hook} hook is not described in the docs"
    assert "::: nr_llm_core.hooks.ToolHookSpec" in _reference_text()
    assert re.search(rf"\bdef {hook}\(", _test_text()), f"no test implements {hook}"
    assert re.search(rf"\.{hook}\(", _test_text()), f"no test calls {hook}"
