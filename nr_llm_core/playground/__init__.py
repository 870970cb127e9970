"""The playground: a local web inspector for tools, agent runs and the audit store.

Starlette and uvicorn (dependencies of nr-llm) are imported only here: ``import
nr_llm_core`` and ``nr-llm --help`` never load them. Start it with ``nr-llm playground``, or
embed it with :class:`PlaygroundServer`. See ``docs/playground.md`` for the security model.
"""

from __future__ import annotations

from nr_llm_core.playground.app import NDJSON, PlaygroundApp, create_app
from nr_llm_core.playground.server import DEFAULT_BIND, PlaygroundServer

__all__ = ["DEFAULT_BIND", "NDJSON", "PlaygroundApp", "PlaygroundServer", "create_app"]
