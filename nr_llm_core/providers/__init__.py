"""Model providers behind one small protocol: they see only ``ChatMessage`` and ``ToolSpec``.

:class:`ScriptedProvider` plays a script offline; :class:`OpenAIChatProvider` and
:class:`AnthropicProvider` speak their HTTP wires through httpx, which is imported only when a
request is made.
"""

from __future__ import annotations

from nr_llm_core.providers.anthropic import AnthropicProvider
from nr_llm_core.providers.base import Completion, Provider, TrustZone, Usage, zone_of
from nr_llm_core.providers.openai import OpenAIChatProvider
from nr_llm_core.providers.scripted import DEMO_TURNS, ScriptedProvider

__all__ = [
    "DEMO_TURNS",
    "AnthropicProvider",
    "Completion",
    "OpenAIChatProvider",
    "Provider",
    "ScriptedProvider",
    "TrustZone",
    "Usage",
    "zone_of",
]
