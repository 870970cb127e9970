"""A pytest plugin for tool authors: fixtures that run tools through the real seam, and checks.

Installed with nr-llm and loaded by pytest through the ``pytest11`` entry point ``nr_llm``, so a
tool package's tests can use the fixtures without a ``conftest.py``:

- ``tool_host``: ``tool_host(*plugins, **host_options) -> ToolHost``, a real host with the
  given tools registered; ``host.invoke(...)`` is the seam the application uses.
- ``scripted_loop``: ``scripted_loop(turns, *plugins, **loop_options) -> ToolLoop``, a real
  loop over a :class:`~nr_llm_core.providers.ScriptedProvider` playing ``turns``; the provider
  (``loop.provider``) keeps every request it received.

The assertions work in any test runner: :func:`assert_bounded` and
:func:`assert_no_artifact_bytes_in`. ``import nr_llm_core`` never imports this module (or pytest).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import pytest

from nr_llm_core.bounding import MAX_ARTIFACT_BYTES, MAX_CONTENT_BYTES
from nr_llm_core.encoding import EncodeError, encode_json
from nr_llm_core.host import ToolHost
from nr_llm_core.messages import ChatMessage
from nr_llm_core.results import Artifact, ToolResult

if TYPE_CHECKING:
    from nr_llm_core.loop import ToolLoop, ToolLoopResult

__all__ = [
    "artifact_strings",
    "assert_bounded",
    "assert_no_artifact_bytes_in",
    "scripted_loop",
    "tool_host",
]

ToolHostFactory = Callable[..., ToolHost]
ScriptedLoopFactory = Callable[..., "ToolLoop"]


def _host_with(plugins: Iterable[object], options: dict[str, Any]) -> ToolHost:
    host = ToolHost(**options)
    for plugin in plugins:
        host.register(plugin)
    return host


@pytest.fixture
def tool_host() -> ToolHostFactory:
    """A factory: ``tool_host(*plugins, **host_options)`` returns a :class:`ToolHost` with the
    plugins registered (``register`` raises :class:`~nr_llm_core.ToolLoadError` on a refusal,
    so a broken tool fails the test where it is registered)."""

    def make(*plugins: object, **options: Any) -> ToolHost:
        return _host_with(plugins, options)

    return make


@pytest.fixture
def scripted_loop() -> ScriptedLoopFactory:
    """A factory: ``scripted_loop(turns, *plugins, host=None, trust_zone="local", **options)``
    returns a :class:`~nr_llm_core.ToolLoop` over a ``ScriptedProvider(turns)``.

    ``host`` is used as it is when given, else a host with ``plugins`` registered. ``options``
    go to ``ToolLoop`` (``max_iterations``, ``tool_timeout`` …).
    """
    from nr_llm_core.loop import ToolLoop
    from nr_llm_core.providers import ScriptedProvider

    def make(
        turns: Iterable[Any],
        *plugins: object,
        host: ToolHost | None = None,
        trust_zone: str = "local",
        **options: Any,
    ) -> ToolLoop:
        provider = ScriptedProvider(turns, trust_zone=trust_zone)
        return ToolLoop(provider, host or _host_with(plugins, {}), **options)

    return make


def assert_bounded(result: ToolResult) -> None:
    """Assert that ``result`` is what the seam guarantees: a ``ToolResult`` whose content is
    valid UTF-8 within :data:`MAX_CONTENT_BYTES`, whose artifacts encode with the shared
    encoder within :data:`MAX_ARTIFACT_BYTES`, and, when it is an error, has no artifacts."""
    assert type(result) is ToolResult, f"expected a ToolResult, got {type(result).__name__}"
    try:
        size = len(result.content.encode("utf-8"))
    except UnicodeEncodeError:
        raise AssertionError("content is not valid UTF-8 (a lone surrogate)") from None
    assert size <= MAX_CONTENT_BYTES, f"content is {size} bytes (> {MAX_CONTENT_BYTES})"
    if result.is_error:
        assert result.artifacts == (), "an error result carries artifacts"
    try:
        encoded = encode_json([a.to_dict() for a in result.artifacts])
    except EncodeError as exc:
        raise AssertionError(f"artifacts do not encode: {exc}") from None
    assert len(encoded) <= MAX_ARTIFACT_BYTES, (
        f"artifacts encode to {len(encoded)} bytes (> {MAX_ARTIFACT_BYTES})"
    )


def artifact_strings(artifacts: Iterable[Artifact]) -> set[str]:
    """Every string in ``artifacts``: labels, keys and leaves of their data."""
    found: set[str] = set()
    stack: list[Any] = []
    for artifact in artifacts:
        found.add(artifact.label)
        stack.append(artifact.data)
    while stack:  # iterative: data may be nested up to the depth limit
        value = stack.pop()
        if isinstance(value, str):
            found.add(value)
        elif isinstance(value, dict):
            found.update(k for k in value if isinstance(k, str))
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            stack.extend(value)
    return found


def _results(result: ToolResult | ToolLoopResult) -> tuple[list[ToolResult], list[Any]]:
    if isinstance(result, ToolResult):
        return [result], []
    invocations = result.invocations
    return [i.result for i in invocations], [i.arguments for i in invocations]


def _leaves(value: Any) -> list[str]:
    """The string values (not keys: those are the wire format's own names) under ``value``."""
    texts: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, bytes):
            texts.append(item.decode("utf-8", "replace"))
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, ChatMessage):
            # What a message carries: its text and the arguments of its tool calls. Roles,
            # ids and tool names are the host's words.
            stack.append(item.content or "")
            stack.extend(call.arguments for call in item.tool_calls)
    return texts


def _request_texts(request: Any) -> list[str]:
    """The text of one request: a ``ScriptedProvider.requests`` entry ``(messages, tool
    names)``, a sequence of ``ChatMessage``, a decoded JSON body, or a str/bytes body."""
    if (
        isinstance(request, tuple)
        and len(request) == 2
        and all(isinstance(m, ChatMessage) for m in request[0])
    ):
        request = request[0]  # the offered tool names are the host's words
    return _leaves(request)


def assert_no_artifact_bytes_in(
    requests: Iterable[Any],
    result: ToolResult | ToolLoopResult,
    *,
    ignore: Iterable[str] = (),
) -> None:
    """Assert that no artifact string of ``result`` appears in any of ``requests``.

    ``requests`` is what a provider received (``ScriptedProvider.requests``, lists of
    ``ChatMessage``, or raw request bodies); ``result`` is one ``ToolResult`` or a whole
    ``ToolLoopResult``. Artifact strings that also occur in a result's ``content`` are skipped:
    content is meant to reach the model. So are strings the model or the caller supplied: those
    in the tools' arguments (for a ``ToolLoopResult``), those already in the first request (the
    conversation before any tool ran), and those in ``ignore``. Roles, ids and offered tool
    names are not searched. Give the artifacts under test distinctive strings.
    """
    results, arguments = _results(result)
    request_list = list(requests)
    # Texts that reach the model legitimately: contents, arguments, the opening conversation.
    supplied = [r.content for r in results] + _leaves(arguments)
    if request_list:
        supplied += _request_texts(request_list[0])
    skipped = set(ignore)
    suspects = {
        s
        for s in artifact_strings(a for r in results for a in r.artifacts)
        if s and s not in skipped and not any(s in text for text in supplied)
    }
    leaked: set[str] = set()
    for request in request_list:
        for text in _request_texts(request):
            leaked.update(s for s in suspects if s in text)
    assert not leaked, f"artifact strings reached a provider request: {sorted(leaked)!r}"
