"""No command module of the CLI imports another one: shared pieces live in ``cli/_*.py``.

A command that imports another command's module drags that command (and its imports) along
and makes circles easy; the lead removed two such circles, and this keeps them out.
"""

from __future__ import annotations

import ast
from pathlib import Path

import nr_llm_core.cli

CLI = Path(nr_llm_core.cli.__file__).parent
COMMAND_MODULES = sorted(p.stem for p in CLI.glob("*.py") if not p.stem.startswith("_"))


def imported_cli_modules(path: Path) -> set[str]:
    """The ``nr_llm_core.cli`` submodules ``path`` imports, wherever in the file."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from . import x / from .x import y
                base = "nr_llm_core.cli" + (f".{base}" if base else "")
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[:2] == ["nr_llm_core", "cli"] and len(parts) > 2:
                found.add(parts[2])
    return found


def test_the_command_modules_are_known() -> None:
    assert {"config", "demo", "new_tool", "playground", "run", "runs", "tools"} <= set(
        COMMAND_MODULES
    )


def test_no_cli_module_imports_a_command_module() -> None:
    offenders = {
        path.name: sorted(imported_cli_modules(path) & set(COMMAND_MODULES))
        for path in sorted(CLI.glob("*.py"))
    }
    assert {name: mods for name, mods in offenders.items() if mods} == {}


def test_the_check_sees_every_import_form(tmp_path: Path) -> None:
    """The checker itself: absolute, from-, relative and nested imports are all seen."""
    source = tmp_path / "m.py"
    source.write_text(
        "import nr_llm_core.cli.run\n"
        "from nr_llm_core.cli import runs\n"
        "from nr_llm_core.cli.tools import doctor\n"
        "from . import demo\n"
        "def f():\n    from .playground import playground\n"
        "from nr_llm_core.cli._output import visible\n"
    )
    assert imported_cli_modules(source) == {"run", "runs", "tools", "demo", "playground", "_output"}
