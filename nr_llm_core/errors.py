"""The exceptions nr-llm raises. One root, a few branches::

    NrLlmError
     ├── ToolLoadError        a tool plugin could not be loaded or registered
     ├── ProviderError        a model provider failed (see nr_llm_core.providers)
     └── ConfigurationError   an invalid setting (a privacy level, a path, a provider name)

A tool's own failures never raise out of ``ToolHost.invoke()``: they become error results.
"""

from __future__ import annotations

__all__ = ["ConfigurationError", "NrLlmError", "ToolLoadError"]


class NrLlmError(Exception):
    """Root of every exception nr-llm raises on purpose."""


class ToolLoadError(NrLlmError):
    """A tool plugin was refused: at load (strict discovery) or by ``ToolHost.register()``.

    ``distribution`` and ``entry_point`` name where it came from (``None`` for a plugin
    registered in code); ``reason`` says why, in host words.
    """

    def __init__(
        self, reason: str, *, entry_point: str | None = None, distribution: str | None = None
    ) -> None:
        self.reason = reason
        self.entry_point = entry_point
        self.distribution = distribution
        where = ", ".join(
            part
            for part in (
                f"distribution {distribution!r}" if distribution else "",
                f"entry point {entry_point!r}" if entry_point else "",
            )
            if part
        )
        super().__init__(f"{where}: {reason}" if where else reason)


class ConfigurationError(NrLlmError, ValueError):
    """A setting has a value nr-llm cannot use."""
