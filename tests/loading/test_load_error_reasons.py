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
