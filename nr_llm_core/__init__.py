"""nr-llm: a plugin framework for LLM tools.

Tools are pip-installable packages found through the ``nr_llm.tool`` entry-point group. A tool
returns a :class:`ToolResult` with one model-facing string and artifacts that never reach a
model provider; :meth:`ToolHost.invoke` bounds both channels.

Importing this package is cheap: the loop, providers, privacy and audit modules are imported
on first use of their names.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from nr_llm_core.bounding import MAX_ARTIFACT_BYTES, MAX_ARTIFACT_DEPTH, MAX_CONTENT_BYTES
from nr_llm_core.errors import ConfigurationError, NrLlmError, ToolDefinitionError, ToolLoadError
from nr_llm_core.hooks import ToolContext, hookimpl
from nr_llm_core.host import LoadError, ToolHost
from nr_llm_core.results import Artifact, ArtifactType, DataClass, ToolResult, ToolSpec

if TYPE_CHECKING:  # the lazily imported names, for type checkers
    from nr_llm_core.approval import SuspendedRunState
    from nr_llm_core.audit import AgentRunPersister
    from nr_llm_core.decorator import tool
    from nr_llm_core.errors import ProviderError
    from nr_llm_core.loop import ToolLoop, ToolLoopResult
    from nr_llm_core.messages import ChatMessage, ToolCall
    from nr_llm_core.privacy import PrivacyLevel, RunStepPrivacyFilter
    from nr_llm_core.providers import AnthropicProvider, OpenAIChatProvider, ScriptedProvider

__version__ = "0.1.0"

__all__ = [
    "MAX_ARTIFACT_BYTES",
    "MAX_ARTIFACT_DEPTH",
    "MAX_CONTENT_BYTES",
    "AgentRunPersister",
    "AnthropicProvider",
    "Artifact",
    "ArtifactType",
    "ChatMessage",
    "ConfigurationError",
    "DataClass",
    "LoadError",
    "NrLlmError",
    "OpenAIChatProvider",
    "PrivacyLevel",
    "ProviderError",
    "RunStepPrivacyFilter",
    "ScriptedProvider",
    "SuspendedRunState",
    "ToolCall",
    "ToolContext",
    "ToolDefinitionError",
    "ToolHost",
    "ToolLoadError",
    "ToolLoop",
    "ToolLoopResult",
    "ToolResult",
    "ToolSpec",
    "hookimpl",
    "tool",
]

# name -> module, imported on first attribute access (PEP 562).
_LAZY: dict[str, str] = {
    "AgentRunPersister": "nr_llm_core.audit",
    "AnthropicProvider": "nr_llm_core.providers",
    "ChatMessage": "nr_llm_core.messages",
    "OpenAIChatProvider": "nr_llm_core.providers",
    "PrivacyLevel": "nr_llm_core.privacy",
    "ProviderError": "nr_llm_core.errors",
    "RunStepPrivacyFilter": "nr_llm_core.privacy",
    "ScriptedProvider": "nr_llm_core.providers",
    "SuspendedRunState": "nr_llm_core.approval",
    "ToolCall": "nr_llm_core.messages",
    "ToolLoop": "nr_llm_core.loop",
    "ToolLoopResult": "nr_llm_core.loop",
    "tool": "nr_llm_core.decorator",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nr_llm_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
