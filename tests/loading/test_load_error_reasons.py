"""A load error's reason names what the import system recorded, never a plugin's own text.

Real entry points loaded in this process (see test_loading_in_process.py for the helpers).
Kept out of the mutation-test selection: mutmut 3.8's call-stack bookkeeping fails on it (a
ContextVar reset) during its stats run; `tests/core/test_host.py` unit-tests the reason builder.
"""

from __future__ import annotations

import logging

import pytest

from nr_llm_core import ToolHost

from .test_loading_in_process import SECRET, Sites, errors_of
from .test_loading_in_process import sites as sites  # the fixture

# -- a load error's reason holds names the import system recorded, never a plugin's text ------

OWN_TEXT = {
    "t-own-import-error": f"raise ImportError({SECRET!r})\n",
    "t-own-not-found": f"raise ModuleNotFoundError({SECRET!r})\n",
    "t-own-attribute": f"raise AttributeError({SECRET!r})\n",
    "t-from-import": "from json import nr_llm_no_such_name\n",
    "t-attribute-inside": "import json\njson.nr_llm_no_such_attribute\n",
}


def test_a_plugins_own_import_error_text_never_becomes_the_reason(
    sites: Sites, caplog: pytest.LogCaptureFixture
) -> None:
    for dist, source in OWN_TEXT.items():
        module = dist.replace("-", "_")
        sites.add(dist, {module.removeprefix("t_"): f"{module}:Tool"}, {module: source})
    with caplog.at_level(logging.WARNING, logger="nr_llm.host"):
        host = ToolHost.discover()
    reasons = {e.distribution: e.reason for e in errors_of(host, set(OWN_TEXT))}
    assert reasons == {
        "t-own-import-error": "could not be imported: ImportError",
        "t-own-not-found": "could not be imported: ModuleNotFoundError",
        "t-own-attribute": "could not be imported: AttributeError",
        # What the import system recorded: the module a name could not be imported from, and
        # the module and attribute of a failed lookup.
        "t-from-import": "could not be imported: ImportError: cannot import from 'json'",
        "t-attribute-inside": "could not be imported: AttributeError: module 'json' has no "
        "attribute 'nr_llm_no_such_attribute'",
    }
    assert SECRET not in caplog.text
    assert SECRET not in repr(host.load_errors)


# -- @tool's own refusal is the author's next step: shown in nr-llm's words ---------------------

DEFINITIONS = {
    "t-def-no-docstring": (
        "from nr_llm_core import tool\n@tool\ndef nodoc(text: str) -> str:\n    return text\n",
        "nodoc",
        "could not be imported: ToolDefinitionError: @tool nodoc: needs a docstring (its first "
        "paragraph describes the tool)",
    ),
    "t-def-no-annotation": (
        'from nr_llm_core import tool\n@tool\ndef bare(text):\n    """Echo."""\n    return text\n',
        "bare",
        "could not be imported: ToolDefinitionError: @tool bare, parameter 'text': has no type "
        "annotation",
    ),
    # A plugin raising the class itself, with its own text: only the kind is shown.
    "t-def-own-text": (
        f"from nr_llm_core import ToolDefinitionError\n"
        f"raise ToolDefinitionError({SECRET!r}, function={SECRET!r}, problem={SECRET!r})\n",
        "own",
        "could not be imported: ToolDefinitionError",
    ),
    "t-def-own-names": (
        f"from nr_llm_core import ToolDefinitionError\n"
        f"raise ToolDefinitionError('x', function='a b {SECRET}', problem='has no type "
        f"annotation')\n",
        "names",
        "could not be imported: ToolDefinitionError",
    ),
}


def test_what_tool_refused_is_the_load_errors_reason_and_a_plugins_text_never_is(
    sites: Sites, caplog: pytest.LogCaptureFixture
) -> None:
    """A tool author whose ``@tool`` function has no docstring (or a parameter without a type)
    saw only "could not be imported: TypeError" in ``nr-llm doctor``, though writing-tools.md
    promises the function and the parameter are named: the reason now says what ``@tool``
    refused, in its own words, and a plugin raising the same class with its own text or
    names that are not identifiers still gets the kind alone."""
    for dist, (source, attr, _) in DEFINITIONS.items():
        module = dist.replace("-", "_")
        sites.add(dist, {attr: f"{module}:{attr}"}, {module: source})
    with caplog.at_level(logging.WARNING, logger="nr_llm.host"):
        host = ToolHost.discover()
    reasons = {e.distribution: e.reason for e in errors_of(host, set(DEFINITIONS))}
    assert reasons == {dist: reason for dist, (_, _, reason) in DEFINITIONS.items()}
    assert SECRET not in caplog.text
    assert SECRET not in repr(host.load_errors)


NO_HOOKS = {
    "t-plain-function": (
        "def plain(text: str) -> str:\n    return text\n",
        "t_plain_function:plain",
        "the entry point names a function without @tool: decorate it (from nr_llm_core import "
        "tool), or name a class whose tool_spec and execute carry @hookimpl",
    ),
    "t-whole-module": (
        "X = 1\n",
        "t_whole_module",
        "the entry point names a module: name the @tool function or the tool class in it "
        "(package.module:name)",
    ),
}


def test_an_entry_point_with_no_hook_at_all_says_what_to_point_it_at(sites: Sites) -> None:
    """A newcomer's entry point that names a plain function (``@tool`` forgotten) or a whole
    module was refused with "no execute hookimpl", which names nothing they wrote: the reason
    now says what the entry point names and what it should name."""
    for dist, (source, target, _) in NO_HOOKS.items():
        module = dist.replace("-", "_")
        sites.add(dist, {module.removeprefix("t_"): target}, {module: source})
    host = ToolHost.discover()
    reasons = {e.distribution: e.reason for e in errors_of(host, set(NO_HOOKS))}
    assert reasons == {dist: reason for dist, (_, _, reason) in NO_HOOKS.items()}
