"""``--provider ollama`` (a newcomer pass): the refusal said only which names exist, not that
Ollama, vLLM and llama.cpp are reached through ``--provider openai`` and a base URL."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from nr_llm_core.cli import main


@pytest.mark.parametrize(
    ("given", "hint"),
    [
        ("ollama", "ollama speaks the OpenAI-compatible wire: --provider openai --base-url "
         "http://localhost:11434/v1"),
        ("vLLM", "vllm speaks the OpenAI-compatible wire: --provider openai --base-url "
         "http://localhost:8000/v1"),
        ("gemini", "An OpenAI-compatible server (Ollama, vLLM, llama.cpp …): --provider openai "
         "--base-url URL (usually ending in /v1)"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("command", [["run", "hi"], ["runs", "approve", "some-run"]])
def test_an_unknown_provider_says_how_to_reach_an_openai_compatible_server(
    given: str, hint: str, command: list[str]
) -> None:
    out = CliRunner().invoke(main, [*command, "--provider", given])
    assert out.exit_code == 2, out.output
    assert f"'{given}' is not one of 'scripted', 'openai', 'anthropic'. {hint}" in out.stderr
