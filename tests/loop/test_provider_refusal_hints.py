"""A refused request says where it went and what to check: the first failures with a local
server (Ollama, vLLM, llama.cpp) are a model it does not serve, a base URL without its API
root, and a model that cannot use tools. The server's own text is never shown (it is
untrusted and may quote the request); the endpoint is, as connection errors show it, and a
hint in host words per status."""

from __future__ import annotations

from typing import Any

import pytest

from nr_llm_core import AnthropicProvider, ChatMessage, OpenAIChatProvider, ToolLoop
from nr_llm_core.errors import ProviderRequestError

from ._tools import make_host
from ._wire import Reply, WireServer

KEY = "sk-test-KEY-hints-0c3f"
CANARY = "SERVER-TEXT-CANARY-7d2e"

NOT_FOUND_HINT = (
    "the server has no such endpoint or model: check that the base URL is the API's root "
    "{root} and that the server serves the model you named"
)
INVALID_HINT = (
    "the server's reason is not shown (it may quote the request); its log says why, "
    "e.g. a model that cannot use tools or a parameter it does not know"
)


def openai(base: str) -> OpenAIChatProvider:
    return OpenAIChatProvider(base, "llama3.1", KEY, max_retries=0, timeout=5.0)


def run(provider: Any) -> Any:
    return ToolLoop(provider, make_host()).run("who is customer 42?")


@pytest.mark.parametrize(
    "body",
    [
        # Ollama, a model it has not pulled
        {"error": {"message": f"model 'llama3.1' not found {CANARY}", "type": "api_error"}},
        # a Go server's plain page for a path it does not have (a base URL without /v1)
        f"404 page not found {CANARY}".encode(),
    ],
    ids=["ollama-model", "plain-page"],
)
def test_a_404_names_the_endpoint_and_what_to_check(body: Any) -> None:
    """A 404 from a local server says which URL answered it and that the base URL or the
    model is what to check; none of the server's text comes along."""
    with WireServer([Reply(404, body)]) as server:
        result = run(openai(f"{server.url}/v1"))
    code = " (api_error)" if isinstance(body, dict) else ""
    assert result.error == (
        "provider error: the OpenAI-compatible provider at "
        f"{server.url}/v1/chat/completions refused the request: HTTP 404{code}: "
        + NOT_FOUND_HINT.format(root="(often ending in /v1)")
    )
    assert CANARY not in result.error


def test_a_400_says_where_the_reason_is() -> None:
    """Ollama's answer for a model without tool support is a 400: the error points at the
    server's log for the reason, since the reason itself is not shown."""
    body = {
        "error": {
            "message": f"registry.ollama.ai/library/gemma:2b does not support tools {CANARY}",
            "type": "api_error",
        }
    }
    with WireServer([Reply(400, body)]) as server, pytest.raises(ProviderRequestError) as info:
        openai(f"{server.url}/v1").complete([ChatMessage.user("x")], [])
    assert str(info.value) == (
        f"the OpenAI-compatible provider at {server.url}/v1/chat/completions refused the "
        f"request: HTTP 400 (api_error): {INVALID_HINT}"
    )
    assert info.value.status == 400


def test_the_anthropic_provider_names_its_endpoint_too() -> None:
    body = {"type": "error", "error": {"type": "not_found_error", "message": CANARY}}
    with WireServer([Reply(404, body)]) as server:
        provider = AnthropicProvider(
            "claude-nope", "sk-ant-api03-hints", base_url=server.url, max_retries=0, timeout=5.0
        )
        result = run(provider)
    assert result.error == (
        f"provider error: the Anthropic provider at {server.url}/v1/messages refused the "
        "request: HTTP 404 (not_found_error): " + NOT_FOUND_HINT.format(root="(without /v1)")
    )


def test_another_4xx_names_the_endpoint_without_a_hint() -> None:
    with WireServer([Reply(413, {"error": {"message": CANARY}})]) as server:
        result = run(openai(f"{server.url}/v1"))
    assert result.error == (
        f"provider error: the OpenAI-compatible provider at {server.url}/v1/chat/completions "
        "refused the request: HTTP 413"
    )
