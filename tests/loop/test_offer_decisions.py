"""``offer_decisions``: the one function that says, for every tool and a provider's zone,
whether it is offered and, when not, why and the fix; ``ToolLoop.offer`` takes its offer from
it (issue 15, point 1)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from nr_llm_core import DataClass, ToolHost, ToolResult, ToolSpec, hookimpl
from nr_llm_core.loop import ToolLoop
from nr_llm_core.offers import OfferCode, offer_decisions, offered_specs, trust_zone, zones_for
from nr_llm_core.providers import ScriptedProvider, TrustZone

GROUP_CANARY = "GROUP-CANARY-\x1b[2J-5e6f"


def _tool(name: str, **meta: Any) -> object:
    class Tool:
        @hookimpl
        def tool_spec(self) -> ToolSpec:
            return ToolSpec(name, f"The {name} tool.", **meta)

        @hookimpl
        def execute(self, arguments: dict[str, Any]) -> ToolResult:
            return ToolResult.text(name)

    return Tool()


TOOLS = {
    "weather": {"data_class": DataClass.PUBLIC},
    "payroll": {"data_class": DataClass.INTERNAL},
    "vault": {"data_class": DataClass.SECRET_ADJACENT},
    "inventory": {},  # the README's first tool, before it declared anything
    "writer": {"data_class": "public", "enabled_by_default": False},
    "shredder": {"data_class": "public"},
    "grouped": {"data_class": "public", "group": GROUP_CANARY},
}


def _host() -> ToolHost:
    host = ToolHost(disable=["shredder"], disable_groups=[GROUP_CANARY])
    for name, meta in TOOLS.items():
        host.register(_tool(name, **meta))
    return host


def _codes(host: ToolHost, zone: object, allowed: Any = None) -> dict[str, str | None]:
    return {
        d.name: None if d.code is None else d.code.value
        for d in offer_decisions(host, zone, allowed)
    }


def test_every_reason_for_an_external_provider() -> None:
    """The README's undeclared tool is refused for an external provider *because* it declares
    nothing; an internal tool because its class is above the ceiling; the switched-off ones by
    the switch that keeps them off."""
    assert _codes(_host(), TrustZone.EXTERNAL) == {
        "grouped": "group-disabled",
        "inventory": "undeclared-data-class",
        "payroll": "above-zone-ceiling",
        "shredder": "disabled",
        "vault": "above-zone-ceiling",
        "weather": None,
        "writer": "off-by-default",
    }


def test_zones_widen_the_offer() -> None:
    host = _host()
    offered = {
        zone: [d.name for d in offer_decisions(host, zone) if d.offered] for zone in TrustZone
    }
    assert offered[TrustZone.EXTERNAL] == ["weather"]
    assert offered[TrustZone.PRIVATE_HOSTED] == ["payroll", "weather"]
    assert offered[TrustZone.LOCAL] == ["inventory", "payroll", "vault", "weather"]


def test_reasons_and_fixes_name_the_way_out() -> None:
    """Each fix names what to change, and a zone the way each front end sets it: the
    playground has no --trust-zone, only the configuration file's trust_zone."""
    by_name = {d.name: d for d in offer_decisions(_host(), TrustZone.EXTERNAL)}
    undeclared = by_name["inventory"]
    assert "declares no data class" in undeclared.reason
    assert "secret-adjacent" in undeclared.reason
    assert 'data_class="public"' in undeclared.fix
    assert undeclared.fix.endswith(
        "or use a provider on this machine (trust zone local: --trust-zone local on the "
        'command line, trust_zone = "local" in its [providers.NAME] table of the '
        "configuration file)"
    )
    internal = by_name["payroll"]
    assert "internal" in internal.reason and "external zone" in internal.reason
    assert 'data_class="public"' in internal.fix
    assert internal.fix.endswith(
        "or run it with a provider you trust with internal data (trust zone local or "
        "private-hosted: --trust-zone on the command line, trust_zone in its [providers.NAME] "
        "table of the configuration file)"
    )
    assert by_name["vault"].fix.endswith(
        "(trust zone local: --trust-zone local on the command line, "
        'trust_zone = "local" in its [providers.NAME] table of the configuration file)'
    )
    assert "NR_LLM_ENABLE_TOOLS=writer" in by_name["writer"].fix
    assert "[tools] disable" in by_name["shredder"].fix
    assert "disable_groups" in by_name["grouped"].fix
    assert by_name["weather"].reason == by_name["weather"].fix == ""


def test_a_private_hosted_provider_is_told_the_ceiling_it_has() -> None:
    vault = next(d for d in offer_decisions(_host(), "private-hosted") if d.name == "vault")
    assert vault.code is OfferCode.ABOVE_CEILING
    assert 'data_class="internal"' in vault.fix


def test_the_first_reason_that_applies_wins() -> None:
    """Not named by --tools beats switched off; switched off beats the data class; a name
    nobody has is reported as unknown, after the tools."""
    codes = _codes(_host(), TrustZone.EXTERNAL, ["inventory", "writer", "nosuch"])
    assert list(codes)[-1] == "nosuch"
    assert codes["nosuch"] == "unknown"
    assert codes["writer"] == "off-by-default"
    assert codes["inventory"] == "undeclared-data-class"
    assert codes["payroll"] == codes["vault"] == codes["grouped"] == "not-allowed"


def test_reasons_are_host_words_only() -> None:
    """A group name is the tool's own text: no reason or fix quotes it."""
    for decision in offer_decisions(_host(), TrustZone.EXTERNAL):
        assert GROUP_CANARY not in decision.reason + decision.fix
        assert "\x1b" not in decision.reason + decision.fix


@pytest.mark.parametrize("zone", list(TrustZone))
def test_the_loop_offers_exactly_what_the_decisions_offer(zone: TrustZone) -> None:
    host = _host()
    loop = ToolLoop(ScriptedProvider([], trust_zone=zone), host)
    names = sorted(TOOLS)
    for size in range(3):
        for allowed in [None, *itertools.combinations(names, size)]:
            expected = [d.name for d in offer_decisions(host, zone, allowed) if d.offered]
            assert [s.name for s in loop.offer(allowed)] == expected
            assert [s.name for s in offered_specs(host, zone, allowed)] == expected


def test_a_provider_without_a_zone_is_external() -> None:
    assert trust_zone(object()) is TrustZone.EXTERNAL
    assert trust_zone("nowhere") is TrustZone.EXTERNAL
    assert trust_zone(ScriptedProvider([])) is TrustZone.LOCAL


def test_zones_for_each_data_class() -> None:
    host = _host()
    assert zones_for(host.spec("weather")) == tuple(TrustZone)
    assert zones_for(host.spec("payroll")) == (TrustZone.LOCAL, TrustZone.PRIVATE_HOSTED)
    assert zones_for(host.spec("vault")) == (TrustZone.LOCAL,)
    assert zones_for(host.spec("inventory")) == (TrustZone.LOCAL,)


def test_an_allow_list_must_be_names() -> None:
    with pytest.raises(TypeError):
        offer_decisions(_host(), TrustZone.LOCAL, "weather")
    with pytest.raises(TypeError):
        offer_decisions(_host(), TrustZone.LOCAL, [1])
