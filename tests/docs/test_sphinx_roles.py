"""The Griffe extension that turns the package's Sphinx roles into cross-references (ADR 0021).

The site build (tests/kit/test_docs.py::test_mkdocs_build_strict) checks the rendered pages;
these tests check the conversion itself and every docstring of the package, rendered or not.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from pathlib import Path
from types import ModuleType

import griffe
import pytest

ROOT = Path(__file__).resolve().parents[2]
_LOGGER = "mkdocs.plugins.nr_llm.sphinx_roles"


def _extension() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "nr_llm_docs_sphinx_roles", ROOT / "docs" / "_ext" / "sphinx_roles.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


roles = _extension()


def _load(package: str, path: Path) -> griffe.Module:
    loaded = griffe.load(
        package,
        search_paths=[path],
        extensions=griffe.load_extensions(roles.SphinxRoles()),
        resolve_aliases=False,
    )
    assert isinstance(loaded, griffe.Module)
    return loaded


def test_titles_read_as_sphinx_shows_them() -> None:
    text = (
        ":class:`ToolHost` :meth:`ToolHost.invoke` :func:`~nr_llm_core.privacy.effective_level` "
        ":meth:`discover <nr_llm_core.ToolHost.discover>` :data:`MAX_CONTENT_BYTES` "
        ":py:attr:`~a.b.c`"
    )
    assert list(roles.roles_in(text)) == [
        ("class", "ToolHost", "ToolHost"),
        ("meth", "ToolHost.invoke()", "ToolHost.invoke"),
        ("func", "effective_level()", "nr_llm_core.privacy.effective_level"),
        ("meth", "discover", "nr_llm_core.ToolHost.discover"),
        ("data", "MAX_CONTENT_BYTES", "MAX_CONTENT_BYTES"),
        ("attr", "c", "a.b.c"),
    ]


def test_a_role_becomes_an_optional_autoref_shown_as_code() -> None:
    converted = roles.convert_roles(
        "See :meth:`ToolHost.invoke` and :class:`<b>`.",
        {"ToolHost.invoke": "nr_llm_core.host.ToolHost.invoke"}.get,
    )
    assert converted == (
        'See <autoref identifier="nr_llm_core.host.ToolHost.invoke" optional>'
        "<code>ToolHost.invoke()</code></autoref> and "
        '<autoref identifier="&lt;b&gt;" optional><code>&lt;b&gt;</code></autoref>.'
    )


def test_targets_resolve_from_the_scope_of_the_docstring(tmp_path: Path) -> None:
    pkg = tmp_path / "rolespkg"
    pkg.mkdir()
    (pkg / "_impl.py").write_text(
        '"""Implementation."""\n\n'
        "class Thing:\n"
        '    """A thing; :meth:`run` runs it, :meth:`Thing.run` too."""\n\n'
        "    def run(self) -> None:\n"
        '        """Run; see :func:`helper` and :func:`time.monotonic`."""\n\n'
        "def helper() -> None:\n"
        '    """Help :class:`Thing`."""\n'
    )
    (pkg / "__init__.py").write_text(
        '"""See :class:`Thing` and :func:`helper`."""\nfrom rolespkg._impl import Thing, helper\n'
    )
    loaded = _load("rolespkg", tmp_path)
    impl = loaded["_impl"]
    assert 'identifier="rolespkg._impl.Thing"' in loaded.docstring.value  # through the import
    assert 'identifier="rolespkg._impl.helper"' in loaded.docstring.value
    thing = impl["Thing"].docstring.value
    assert thing.count('identifier="rolespkg._impl.Thing.run"') == 2
    run = impl["Thing.run"].docstring.value
    assert 'identifier="rolespkg._impl.helper"' in run
    assert 'identifier="time.monotonic"' in run  # outside the project: code, never a link


def test_a_role_that_names_nothing_is_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pkg = tmp_path / "typopkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        '"""Uses :class:`Widget` and :func:`time.monotonic`."""\n\nclass Wigdet:\n    """W."""\n'
    )
    with caplog.at_level(logging.WARNING, logger=_LOGGER):
        _load("typopkg", tmp_path)
    warned = [r.getMessage() for r in caplog.records if r.name == _LOGGER]
    assert warned == ["typopkg: the role target 'Widget' names nothing"]


def test_every_role_in_the_package_names_something(caplog: pytest.LogCaptureFixture) -> None:
    """Every docstring of nr_llm_core, also those no page renders: no role is a typo, and no
    role is left behind unconverted."""
    with caplog.at_level(logging.WARNING, logger=_LOGGER):
        package = _load("nr_llm_core", ROOT)
    assert [r.getMessage() for r in caplog.records if r.name == _LOGGER] == []
    converted = 0
    for obj in roles.walk(package):
        if obj.docstring is not None:
            assert list(roles.roles_in(obj.docstring.value)) == [], obj.path
            converted += obj.docstring.value.count("<autoref ")
    assert converted > 200
