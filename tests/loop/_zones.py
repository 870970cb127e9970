"""Tools of each data class for the trust-zone history tests, each returning its own canary,
and the host sentences those tests expect on the wire."""

from __future__ import annotations

from typing import Any

from nr_llm_core import DataClass, ToolHost, ToolResult, ToolSpec, hookimpl

# Each canary is what one tool returns; which may reach which zone is the point of the tests.
SECRET = "ZONE-SECRET-CANARY-5e17c0de"
INTERNAL = "ZONE-INTERNAL-CANARY-44a1"
UNDECLARED = "ZONE-UNDECLARED-CANARY-0b9d"
PUBLIC = "ZONE-PUBLIC-CANARY-7c21"
GONE = "ZONE-UNINSTALLED-CANARY-e3f0"


def _plugin(name: str, data_class: DataClass | None, output: str, **spec: Any) -> object:
    class Plugin:
        @hookimpl
        def tool_spec(self) -> ToolSpec:
            return ToolSpec(
                name,
                f"The {name} tool.",
                {"type": "object", "properties": {"text": {"type": "string"}}},
                data_class=data_class,
                **spec,
            )

        @hookimpl
        def execute(self, arguments: dict[str, Any]) -> ToolResult:
            # The approval-gated note echoes its argument: output made from what the model wrote.
            return ToolResult.text(output.format(**arguments) if arguments else output)

    return Plugin()


def vault() -> object:
    """Secret-adjacent: reads a secret."""
    return _plugin("vault_read", DataClass.SECRET_ADJACENT, f"the vault holds {SECRET}")


def internal() -> object:
    return _plugin("internal_report", DataClass.INTERNAL, f"internal figure {INTERNAL}")


def undeclared() -> object:
    """Declares no data class: counts as secret-adjacent."""
    return _plugin("env_dump", None, f"env {UNDECLARED}")


def public() -> object:
    return _plugin("weather", DataClass.PUBLIC, f"sunny, {PUBLIC}")


def gone() -> object:
    """Public, but installed only in the host of the first run (uninstalled since)."""
    return _plugin("old_public", DataClass.PUBLIC, f"old {GONE}")


def note() -> object:
    """Public and approval-gated; its output quotes the text the model asked it to write."""
    return _plugin("write_note", DataClass.PUBLIC, "wrote {text}", requires_approval=True)


def host(*plugins: object) -> ToolHost:
    h = ToolHost()
    for plugin in plugins or (vault(), internal(), undeclared(), public(), note()):
        h.register(plugin)
    return h


def over_ceiling(tool: str, data_class: str, zone: str) -> str:
    """The host sentence for the output of an installed tool above the zone's ceiling."""
    return (
        f'[withheld by the host: the output of tool "{tool}" is {data_class} data, which a '
        f"provider in the {zone} trust zone may not see]"
    )


def unattributed(zone: str) -> str:
    return (
        "[withheld by the host: the output of a tool call the host cannot attribute to an "
        f"installed tool, which a provider in the {zone} trust zone may not see]"
    )


def derived_turn(zone: str) -> str:
    return (
        "[withheld by the host: written after tool output that a provider in the "
        f"{zone} trust zone may not see]"
    )


def derived_output(zone: str) -> str:
    return (
        "[withheld by the host: the output of a call written after tool output that a "
        f"provider in the {zone} trust zone may not see]"
    )


def internal_write() -> object:
    """Internal and approval-gated."""
    return _plugin(
        "internal_write", DataClass.INTERNAL, f"saved {INTERNAL}", requires_approval=True
    )
