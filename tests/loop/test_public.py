"""The public surface of the loop's names, and what importing the package costs."""

from __future__ import annotations

import subprocess
import sys

import nr_llm_core
from nr_llm_core.providers import Provider, ScriptedProvider

LOOP_NAMES = {
    "ChatMessage",
    "ToolCall",
    "ToolLoop",
    "ToolLoopResult",
    "SuspendedRunState",
    "ScriptedProvider",
    "OpenAIChatProvider",
    "AnthropicProvider",
    "ProviderError",
}


def test_loop_names_are_exported_lazily() -> None:
    assert set(nr_llm_core.__all__) >= LOOP_NAMES
    assert set(nr_llm_core._LAZY) >= LOOP_NAMES
    for name in LOOP_NAMES:
        assert getattr(nr_llm_core, name).__name__ == name
    assert sorted(nr_llm_core.__all__) == sorted(set(nr_llm_core.__all__))


def test_importing_the_package_imports_neither_httpx_nor_the_loop() -> None:
    code = (
        "import sys, nr_llm_core; "
        "print(sorted(m for m in ('httpx', 'nr_llm_core.loop', 'nr_llm_core.providers') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    code = "import sys; from nr_llm_core import ToolLoop; print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_scripted_provider_meets_the_protocol() -> None:
    assert isinstance(ScriptedProvider([]), Provider)
