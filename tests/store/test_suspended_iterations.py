"""A run waiting for approval shows how many completions it took (`runs list`'s ITER and
`runs show`'s iterations said 0 after one or two, while the playground said 1): the store's
row takes the state's count when the run is suspended, on SQLite and on PostgreSQL."""

from __future__ import annotations

from nr_llm_core import ChatMessage, ScriptedProvider, ToolLoop
from nr_llm_core.stores import open_store

from ..loop._tools import Lookup, Writer, make_host


def test_a_waiting_run_counts_its_completions(store_target: str) -> None:
    store = open_store(store_target)
    try:
        ask = {"tool_calls": [{"name": "write_note", "arguments": {"text": "x"}}]}
        first = {"tool_calls": [{"name": "lookup", "arguments": {"id": 1}}]}
        loop = ToolLoop(
            ScriptedProvider([first, ask]), make_host(Lookup(), Writer()), persister=store
        )
        waiting = loop.run([ChatMessage.user("write x")])
        assert waiting.suspended is not None and waiting.iterations == 2
        assert store.get_run(waiting.run_id)["iterations"] == 2
    finally:
        store.close()
