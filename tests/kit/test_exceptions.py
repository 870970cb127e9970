"""The exception tree and LoadError, as a host developer catches and reads them."""

from __future__ import annotations

from typing import Any

import pytest

from nr_llm_core import (
    ConfigurationError,
    LoadError,
    NrLlmError,
    ProviderError,
    ToolHost,
    ToolLoadError,
    hookimpl,
)


def test_one_root_for_every_exception_nr_llm_raises_on_purpose() -> None:
    for branch in (ToolLoadError, ProviderError, ConfigurationError):
        assert issubclass(branch, NrLlmError)
    assert issubclass(NrLlmError, Exception)


def test_a_refused_plugin_raises_a_tool_load_error_caught_as_nr_llm_error() -> None:
    class NoSpec:
        @hookimpl
        def execute(self, arguments: dict[str, Any]) -> None:
            raise AssertionError("never called")

    with pytest.raises(NrLlmError, match="no tool_spec hookimpl"):
        ToolHost().register(NoSpec)


def test_load_error_holds_distribution_entry_point_and_reason() -> None:
    error = LoadError("nr-llm-broken", "broken", "could not be imported: ImportError")
    assert (error.distribution, error.entry_point, error.reason) == (
        "nr-llm-broken",
        "broken",
        "could not be imported: ImportError",
    )
    assert ToolHost().load_errors == ()
