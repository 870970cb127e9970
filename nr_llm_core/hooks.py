"""The hook specification a tool plugin implements, and the markers to write one.

One plugin is one tool: it implements ``tool_spec()`` once and ``execute()`` once. The host
calls the one implementation directly; it never calls ``pm.hook.execute()``.
"""

from __future__ import annotations

from typing import Any, Final

import attrs
import pluggy

from nr_llm_core.results import ToolResult, ToolSpec

__all__ = ["PROJECT_NAME", "ToolContext", "ToolHookSpec", "hookimpl", "hookspec"]

PROJECT_NAME: Final = "nr_llm"

#: Marks a tool plugin's ``tool_spec`` and ``execute`` implementations.
hookimpl: Final = pluggy.HookimplMarker(PROJECT_NAME)
hookspec: Final = pluggy.HookspecMarker(PROJECT_NAME)


@attrs.frozen(kw_only=True)
class ToolContext:
    """What the host tells a tool about the call it is making (all optional).

    ``run_id`` names the agent run, ``call_id`` the model's tool-call id, ``round`` the loop
    round. A tool declares a ``context`` parameter on ``execute`` to receive it.
    """

    run_id: str | None = None
    call_id: str | None = None
    round: int | None = None


class ToolHookSpec:
    """The hooks of the ``nr_llm`` project."""

    @hookspec
    def tool_spec(self) -> ToolSpec:  # type: ignore[empty-body]  # a specification
        """Describe the tool: its name (equal to the entry-point name), description, schema."""

    @hookspec
    def execute(self, arguments: dict[str, Any], context: ToolContext | None) -> ToolResult:  # type: ignore[empty-body]  # a specification
        """Run the tool on ``arguments`` (already validated against the spec's schema).

        An implementation may leave out ``context``. It returns a :class:`ToolResult`; anything
        else, and any exception, becomes an error result for the model.
        """
