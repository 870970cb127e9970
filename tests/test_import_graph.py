"""DESIGN.md's layers as import contracts (pyproject.toml, ``[tool.importlinter]``): each holds
on the code, and each fails when its rule is broken in a copy of the package, so none can pass
because it checks nothing."""

from __future__ import annotations

import os
import pkgutil
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.import_contracts import module_level_import_lines

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
CONFIG = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
CONTRACTS = {c["id"]: c for c in CONFIG["tool"]["importlinter"]["contracts"]}
LAZY = "\n\ndef _later():\n    {}\n"
TYPE_CHECKING = "\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    {}\n"


def _lint(cwd: Path, config: Path = PYPROJECT) -> tuple[dict[str, str], str]:
    """Run ``lint-imports`` on the ``nr_llm_core`` found first from ``cwd``: each contract's
    id -> ``KEPT`` or ``BROKEN``, and the whole output."""
    env = {**os.environ, "COLUMNS": "1000", "PYTHONPATH": str(ROOT)}  # tests.import_contracts
    proc = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", str(config)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = proc.stdout + proc.stderr
    states = {}
    for cid, contract in CONTRACTS.items():
        found = re.search(rf"^{re.escape(contract['name'])} (KEPT|BROKEN)$", out, re.MULTILINE)
        assert found, f"no verdict for {cid}:\n{out}"
        states[cid] = found.group(1)
    assert proc.returncode == (1 if "BROKEN" in states.values() else 0), out
    return states, out


def _broken(states: dict[str, str]) -> set[str]:
    return {cid for cid, state in states.items() if state == "BROKEN"}


def test_every_contract_holds() -> None:
    states, out = _lint(ROOT)
    assert _broken(states) == set(), out


#: case -> ({module file: text appended to it}, the contracts it breaks, a line the output holds)
BREAKS: dict[str, tuple[dict[str, str], set[str], str | None]] = {
    # The providers use bounding: pluggy would reach them through it.
    "pluggy in bounding": ({"bounding.py": "\nimport pluggy\n"}, {"values", "providers"}, None),
    "the host reaches for a provider": (
        {"_dispatch.py": "\nfrom nr_llm_core.providers import base\n"},
        {"host"},
        None,
    ),
    "a provider names the host, for the type checker only": (
        {"providers/base.py": TYPE_CHECKING.format("from nr_llm_core.host import ToolHost")},
        {"providers"},
        None,
    ),
    "the core imports the playground's web framework, lazily": (
        {"trace.py": LAZY.format("import starlette")},
        {"core"},
        None,
    ),
    "a lazy import closes a circle": (
        {"trace.py": LAZY.format("from nr_llm_core import loop")},
        {"acyclic"},
        "import cycle: nr_llm_core.loop -> nr_llm_core.trace (l.",
    ),
    "a circle through TYPE_CHECKING": (
        {"results.py": TYPE_CHECKING.format("from nr_llm_core.bounding import bound_result")},
        {"acyclic"},
        "import cycle: nr_llm_core.bounding -> nr_llm_core.results (l.",
    ),
    "an extra imported at module level": (
        {"encoding.py": "\nimport orjson\n"},
        {"extras"},
        "orjson: nr_llm_core.encoding -> orjson (l.",
    ),
    "an extra imported in a function": ({"encoding.py": LAZY.format("import orjson")}, set(), None),
    "an extra imported for the type checker": (
        {"encoding.py": TYPE_CHECKING.format("import orjson")},
        set(),
        None,
    ),
    "an extra imported through a module that imports it": (
        {
            "_extra_user.py": "import orjson\n",
            "errors.py": "\nfrom nr_llm_core import _extra_user\n",
        },
        {"extras"},
        "orjson: nr_llm_core.errors -> nr_llm_core._extra_user (l.",
    ),
}


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(
        ROOT / "nr_llm_core", tmp_path / "nr_llm_core", ignore=shutil.ignore_patterns("__pycache__")
    )
    return tmp_path / "nr_llm_core"


def _append(package: Path, path: str, text: str) -> None:
    with (package / path).open("a", encoding="utf-8") as file:
        file.write(text)


@pytest.mark.parametrize("case", list(BREAKS))
def test_a_broken_rule_breaks_its_contract(tmp_path: Path, case: str) -> None:
    changes, expected, line = BREAKS[case]
    package = _copy(tmp_path)
    for path, text in changes.items():
        _append(package, path, text)
    states, out = _lint(tmp_path)
    assert _broken(states) == expected, out
    if line is not None:
        assert line in out, out


def test_an_extras_home_may_import_it_and_be_imported_lazily(tmp_path: Path) -> None:
    """``homes``: the extra's own subpackage imports it at module level; the rest of the
    package reaches that subpackage only from a function."""
    package = _copy(tmp_path)
    home = package / "orjson_bridge"
    home.mkdir()
    (home / "__init__.py").write_text("import orjson\n\nfrom nr_llm_core import encoding\n")
    text = PYPROJECT.read_text(encoding="utf-8")
    config = tmp_path / "pyproject.toml"
    assert "homes = [" in text
    home = 'homes = ["orjson: nr_llm_core.orjson_bridge", '
    config.write_text(text.replace("homes = [", home, 1))
    _append(package, "loop.py", LAZY.format("from nr_llm_core import orjson_bridge"))
    states, out = _lint(tmp_path, config)
    assert _broken(states) == set(), out
    _append(package, "audit.py", "\nfrom nr_llm_core import orjson_bridge\n")
    states, out = _lint(tmp_path, config)
    assert _broken(states) == {"extras"}, out
    assert "orjson: nr_llm_core.audit -> nr_llm_core.orjson_bridge (l." in out


def test_the_core_contract_names_every_module_but_the_front_ends() -> None:
    import nr_llm_core

    children = {f"nr_llm_core.{m.name}" for m in pkgutil.iter_modules(nr_llm_core.__path__)}
    outside = {
        "nr_llm_core.cli",
        "nr_llm_core.playground",
        "nr_llm_core.mcp",
        "nr_llm_core.__main__",
    }
    assert set(CONTRACTS["core"]["source_modules"]) == children - outside


def test_every_optional_dependency_is_watched() -> None:
    extras = CONFIG["project"]["optional-dependencies"]
    required = {
        re.match(r"[A-Za-z0-9._-]+", requirement).group(0).lower()  # type: ignore[union-attr]
        for name, requirements in extras.items()
        if name != "test"  # the test suite's own tools, never imported by the package
        for requirement in requirements
    }
    watched = {entry.partition("=")[0].strip().lower() for entry in CONTRACTS["extras"]["extras"]}
    assert watched == required


def test_which_imports_run_when_a_module_is_imported() -> None:
    source = """\
import a
from b import c
if TYPE_CHECKING:
    import d
else:
    import e
try:
    import f
except ImportError:
    import g
finally:
    import h
with x:
    import i
class K:
    import j
    def m(self):
        import k
def n():
    import l
async def o():
    import m
if typing.TYPE_CHECKING:
    import n
for _ in ():
    import o
"""
    lines = module_level_import_lines(source)
    names = {source.splitlines()[n - 1].split()[-1] for n in lines}
    assert names == {"a", "c", "e", "f", "g", "h", "i", "j", "o"}
