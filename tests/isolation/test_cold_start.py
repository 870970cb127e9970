"""A fresh worker's start-up is not part of a call's limit.

Every first call of an isolated tool (and the first after a kill) starts an interpreter and
imports the plugin. On a loaded machine that alone can take longer than a short per-call limit,
and the call would read ``timed out.`` although the tool never ran. The worker now imports the
tool under the policy's ``load_timeout`` first; the call's own limit counts from there.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nr_llm_core import ToolHost
from nr_llm_core.isolation import IsolationPolicy
from tests.loading.distributions import add_distribution

from ._plugins import HEADER

# Importing the module takes 1.5 s (every fresh worker pays it); the call itself is instant.
SLOW_IMPORT = (
    HEADER
    + """
time.sleep(1.5)

def _quick(arguments, context):
    return ToolResult.text("quick")

Quick = tool("slow_import_quick", _quick)

def _hang(arguments, context):
    time.sleep(600)

Hang = tool("slow_import_hang", _hang)
"""
)


@pytest.fixture
def slow_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ToolHost]:
    site = tmp_path / "site"
    site.mkdir()
    add_distribution(
        site,
        "iso-slow-import",
        {"slow_import_quick": "iso_slow_mod:Quick", "slow_import_hang": "iso_slow_mod:Hang"},
        {"iso_slow_mod": SLOW_IMPORT},
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("NR_LLM_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("NR_LLM_PLUGINS", "slow_import_quick,slow_import_hang")
    policy = IsolationPolicy(distributions=["iso-slow-import"], timeout=1.0, load_timeout=60)
    with ToolHost.discover(isolate=policy) as host:
        yield host


def test_a_short_limit_is_not_spent_starting_the_worker(slow_host: ToolHost) -> None:
    """With a 1 s limit and a 1.5 s import, the first call (a cold worker) and the first call
    after the worker was killed both answer: only the call itself is timed."""
    assert slow_host.invoke("slow_import_quick", {}).content == "quick"
    hung = slow_host.invoke("slow_import_hang", {})  # killed after 1 s of running
    assert hung.content == 'Error: tool "slow_import_hang" timed out.'
    assert slow_host.invoke("slow_import_quick", {}).content == "quick"  # a fresh worker


def test_the_call_limit_still_applies_to_the_call(slow_host: ToolHost) -> None:
    """The import is not timed by the call's limit, the call is: a call that hangs still
    ends at its limit, whatever the import took."""
    result = slow_host.invoke("slow_import_hang", {}, timeout=0.5)
    assert result.content == 'Error: tool "slow_import_hang" timed out.'
