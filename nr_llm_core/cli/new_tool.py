"""``nr-llm new-tool NAME``: scaffold a tool package that installs and passes its own tests."""

from __future__ import annotations

import keyword
import re
import string
from pathlib import Path
from typing import Final

import click

from nr_llm_core.cli._output import visible
from nr_llm_core.cli._templates import TEMPLATES

__all__ = ["new_tool", "scaffold"]

# A tool name that is also a Python identifier, so the function can carry the name.
_NAME_RE: Final = re.compile(r"[a-z][a-z0-9_]{0,63}")


def _is_tool_name(name: str) -> bool:
    return _NAME_RE.fullmatch(name) is not None and not keyword.iskeyword(name)


def _normalised(name: str) -> str | None:
    """``name`` lowercased with each run of dashes, dots and spaces as one underscore, when
    that is a tool name (``my-tool`` -> ``my_tool``); else ``None`` (nothing to suggest)."""
    near = re.sub(r"[-. ]+", "_", name.strip().lower())
    return near if _is_tool_name(near) else None


def scaffold(name: str, parent: Path) -> Path:
    """Write the package for tool ``name`` into ``parent/nr-llm-<name>`` and return that path.

    Raises ``ValueError`` for a name that is not a lowercase identifier of at most 64
    characters, and ``FileExistsError`` when the directory exists.
    """
    if not _is_tool_name(name):
        near = _normalised(name)
        hint = "" if near is None else f"; try `nr-llm new-tool {near}`"
        raise ValueError(
            f"{visible(name, keep_newlines=False)!r} is not a tool name: new-tool needs a Python "
            "identifier (lowercase letters, digits and underscores, starting with a letter, at "
            f"most 64 characters){hint}"
        )
    values = {
        "name": name,
        "module": f"nr_llm_{name}",
        "dist": "nr-llm-" + name.replace("_", "-"),
    }
    root = parent / values["dist"]
    if root.exists():
        raise FileExistsError(f"{root} already exists")
    for rel, content in TEMPLATES.items():
        path = root / string.Template(rel).substitute(values)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(string.Template(content).substitute(values), encoding="utf-8")
    return root


def _installed_by(name: str) -> str | None:
    # The distribution whose nr_llm.tool entry point already claims ``name``, if any: a
    # second package with the same name would make the host refuse both.
    import importlib_metadata

    from nr_llm_core.host import ENTRY_POINT_GROUP

    for ep in importlib_metadata.entry_points(group=ENTRY_POINT_GROUP, name=name):
        return ep.dist.name if ep.dist is not None else "an unknown distribution"
    return None


@click.command("new-tool")
@click.argument("name")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(),
    show_default=True,
    help="Where to create the package directory.",
)
def new_tool(name: str, directory: Path) -> None:
    """Create nr-llm-NAME/: a tool package with its entry point, the tool, a test, a README."""
    owner = _installed_by(name)
    if owner is not None:
        raise click.ClickException(
            f"a tool named {name!r} is already installed (by the distribution {owner}): two "
            "packages that claim one name are both refused when tools load; choose another "
            "name"
        )
    try:
        root = scaffold(name, directory)
    except (ValueError, FileExistsError) as exc:
        raise click.ClickException(str(exc)) from None
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        click.echo(f"created {path}")
    # Named from the package directory: the line before it is the cd into it.
    tool_file = Path("src", f"nr_llm_{name}", "__init__.py")
    click.echo(
        f"\nNext (with the Python nr-llm is installed in: its venv activated):\n"
        f"  cd {root}\n  pip install -e '.[test]'\n  pytest\n"
        f"  edit {tool_file}: it starts as an example that counts words; its docstring's "
        "first paragraph is what a model reads"
    )
    click.echo(
        "\n(nr-llm is not on PyPI: pip finds it installed in that Python. Elsewhere, install\n"
        "its wheel first, `pip install /path/to/nr-llm/dist/nr_llm-*.whl` (`python -m build`\n"
        "in a clone writes it), never through an index, where anyone could publish that name.)"
    )
