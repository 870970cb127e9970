"""The loop row: the CPU cost of one loop round at round 20 against round 1.

A run of 20 tool rounds (one call each, a ~1 KB result) and a final answer, through the real
provider adapters (OpenAI-compatible and Anthropic): each request is built, zone-filtered and
encoded, each answer decoded and parsed, exactly as over HTTP. Only the exchange on the socket
is replaced, by a function that takes the encoded request and hands back the answer's bytes,
so that what is measured is the loop's and the adapter's own work, which a network would only
hide. Round ``k`` is the CPU time from request ``k`` leaving to request ``k + 1`` leaving: the
answer parsed, the call run, the trace written, the next request built (request 21, past the
cap, offers no tools: one tool spec fewer to encode). No persister (the ``record_step`` row
measures that).
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable
from typing import Any

from _timing import CPU

from nr_llm_core import ToolHost, ToolLoop, ToolResult, ToolSpec, hookimpl
from nr_llm_core.providers.anthropic import AnthropicProvider
from nr_llm_core.providers.openai import OpenAIChatProvider

__all__ = ["ROUNDS", "loop_rows"]

#: Tool rounds per run (the loop's cap).
ROUNDS = 20
_RESULT = ("A paragraph of tool output that the model reads back on every later round. " * 14)[
    :1000
]


class Lookup:
    """A public tool with one int argument and a 1,000-character result."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(
            "lookup",
            "Look a number up.",
            {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
            data_class="public",
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.text(f"{arguments['n']}: {_RESULT}")


def _openai_answer(k: int) -> bytes:
    if k > ROUNDS:
        message: dict[str, Any] = {"role": "assistant", "content": "Done: all numbers looked up."}
        finish = "stop"
    else:
        call = {
            "id": f"call_{k}",
            "type": "function",
            "function": {"name": "lookup", "arguments": json.dumps({"n": k})},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    return json.dumps(
        {
            "choices": [{"message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 100 * k, "completion_tokens": 20},
        }
    ).encode()


def _anthropic_answer(k: int) -> bytes:
    if k > ROUNDS:
        content: list[dict[str, Any]] = [{"type": "text", "text": "Done: all numbers looked up."}]
        stop = "end_turn"
    else:
        content = [
            {"type": "text", "text": f"Looking up {k}."},
            {"type": "tool_use", "id": f"toolu_{k}", "name": "lookup", "input": {"n": k}},
        ]
        stop = "tool_use"
    return json.dumps(
        {
            "content": content,
            "stop_reason": stop,
            "usage": {"input_tokens": 100 * k, "output_tokens": 20},
        }
    ).encode()


def _provider(kind: str, answers: list[bytes], stamps: list[float]) -> Any:
    """An adapter whose HTTP exchange is a function: it notes the CPU clock as each encoded
    request leaves and returns the next answer's bytes."""
    provider: Any
    if kind == "openai":
        provider = OpenAIChatProvider("http://127.0.0.1:9/v1", "bench-model")
    else:
        provider = AnthropicProvider(base_url="http://127.0.0.1:9", model="bench", api_key="k")

    def exchange(client: Any, url: str, headers: Any, body: bytes) -> tuple[int, None, bytes]:
        assert type(body) is bytes
        stamps.append(CPU())
        return 200, None, answers[len(stamps) - 1]

    provider._poster._once = exchange
    return provider


def _one_run(loop: ToolLoop, stamps: list[float]) -> list[float]:
    stamps.clear()
    result = loop.run("Look up the numbers 1 to 20, one at a time.")
    # At the cap (20 rounds) the final request offers no tools, and the run ends as such.
    assert result.termination_reason.value == "max_iterations", result.termination_reason
    assert len(result.invocations) == ROUNDS
    return [stamps[k] - stamps[k - 1] for k in range(1, len(stamps))]


def loop_rows(runs: int) -> list[dict[str, Any]]:
    """Round 20 against round 1, the best of ``runs`` runs, for each adapter (interleaved)."""
    host = ToolHost()
    host.register(Lookup())
    setups: dict[str, tuple[ToolLoop, list[float]]] = {}
    makers: dict[str, Callable[[int], bytes]] = {
        "openai": _openai_answer,
        "anthropic": _anthropic_answer,
    }
    for kind, answer in makers.items():
        stamps: list[float] = []
        answers = [answer(k) for k in range(1, ROUNDS + 2)]
        loop = ToolLoop(_provider(kind, answers, stamps), host, max_iterations=ROUNDS)
        setups[kind] = (loop, stamps)
    best = {kind: [float("inf")] * ROUNDS for kind in setups}
    enabled = gc.isenabled()
    # A collection falls on whichever round allocates past the threshold, and a run's
    # allocations repeat run after run: with the collector on, the same rounds would pay for
    # it every time, and no minimum would remove that. Nor is it run between runs: the memory
    # it frees goes back to the system, and the next run's first round would pay the page
    # faults of taking it again.
    gc.collect()
    gc.disable()
    try:
        for _ in range(runs):
            for kind, (loop, stamps) in setups.items():
                rounds = _one_run(loop, stamps)
                best[kind] = [min(a, b) for a, b in zip(best[kind], rounds, strict=True)]
    finally:
        if enabled:
            gc.enable()
    return [
        {
            "row": f"loop_{kind}",
            "candidate": rounds[-1],
            "baseline": rounds[0],
            "ratio": rounds[-1] / rounds[0],
            "per_round_us": [round(r * 1e6, 1) for r in rounds],
            # Round 1 follows the run's start, with colder caches: round 2 is shown beside it.
            "note": f"round 20 / round 2: {rounds[-1] / rounds[1]:.2f}x; "
            f"round 1 {rounds[0] * 1e6:.0f} us, round 2 {rounds[1] * 1e6:.0f} us",
        }
        for kind, rounds in best.items()
    ]
