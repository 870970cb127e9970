"""Which tools a provider is offered, and for every one that is not, why and the one-line fix.

The one place that decides the offer: :meth:`ToolLoop.offer <nr_llm_core.loop.ToolLoop.offer>`
takes the offered tools from :func:`offer_decisions`, and the CLI (``nr-llm run``,
``nr-llm tools list``) and the playground show the others with the reason and the fix from the
same decisions. A tool is offered when it is named by the run's allow-list (``None``: every
tool), switched on, and its data class is within the provider's trust-zone ceiling (see
:class:`~nr_llm_core.providers.base.TrustZone`; an undeclared data class is the strictest).
Every reason and fix is host text: tool names are checked by :class:`ToolSpec`, and a group
name or any other text a tool wrote is never quoted.
"""

from __future__ import annotations

import enum
from collections.abc import Collection
from typing import Any, Final, final

import attrs

from nr_llm_core.host import ToolHost
from nr_llm_core.providers.base import TrustZone, zone_of
from nr_llm_core.results import ToolSpec

__all__ = [
    "DATA_CLASS_NOTE",
    "OfferCode",
    "OfferDecision",
    "offer_decisions",
    "offered_specs",
    "trust_zone",
    "zones_for",
]

#: One sentence on what a tool's data class decides (for listings and docs).
DATA_CLASS_NOTE: Final = (
    "A data class says what a tool's output may contain and so decides which providers it "
    "is offered to: the external zone gets public tools only, private-hosted up to internal, "
    "local every tool; a tool that declares none counts as secret-adjacent (local only)."
)

# Zones from the most trusted to the least, the order every listing uses.
_ZONES: Final = (TrustZone.LOCAL, TrustZone.PRIVATE_HOSTED, TrustZone.EXTERNAL)


class OfferCode(enum.StrEnum):
    """Why a tool is not offered (stable codes, for ``--json`` and the playground)."""

    #: Named in the allow-list, but no tool of that name is loaded.
    UNKNOWN = "unknown"
    #: Loaded, but the run's allow-list (``--tools``) does not name it.
    NOT_ALLOWED = "not-allowed"
    #: Off by default (``enabled_by_default=False``) and not enabled.
    OFF_BY_DEFAULT = "off-by-default"
    #: Disabled by name (``[tools] disable``, ``NR_LLM_DISABLE_TOOLS``).
    DISABLED = "disabled"
    #: Its group is disabled (``[tools] disable_groups``, ``NR_LLM_DISABLE_GROUPS``).
    GROUP_DISABLED = "group-disabled"
    #: It declares no data class, which counts as secret-adjacent: above the zone's ceiling.
    UNDECLARED = "undeclared-data-class"
    #: Its declared data class is above the zone's ceiling.
    ABOVE_CEILING = "above-zone-ceiling"


@final
@attrs.frozen(kw_only=True)
class OfferDecision:
    """Whether one tool is offered to a provider; when not, ``code``, the ``reason`` in one
    sentence and the ``fix`` in one sentence (both empty when offered)."""

    name: str
    offered: bool
    code: OfferCode | None = None
    reason: str = ""
    fix: str = ""

    def to_dict(self) -> dict[str, Any]:
        """``{"name", "offered", "code", "reason", "fix"}`` as plain JSON values."""
        return {
            "name": self.name,
            "offered": self.offered,
            "code": None if self.code is None else self.code.value,
            "reason": self.reason,
            "fix": self.fix,
        }


def trust_zone(where: object) -> TrustZone:
    """The zone of ``where``: a :class:`TrustZone`, a zone name, or a provider (its declared
    zone); anything else, or an unknown name, is ``external``."""
    if isinstance(where, TrustZone):
        return where
    if type(where) is str:
        try:
            return TrustZone(where)
        except ValueError:
            return TrustZone.EXTERNAL
    return zone_of(where)


def zones_for(spec: ToolSpec) -> tuple[TrustZone, ...]:
    """The zones a provider may be in for ``spec`` to be offered to it (most trusted first)."""
    rank = spec.effective_data_class.rank
    return tuple(zone for zone in _ZONES if zone.ceiling.rank >= rank)


def _zone_ceiling(zone: TrustZone) -> str:
    return {
        TrustZone.LOCAL: "every data class",
        TrustZone.PRIVATE_HOSTED: "public and internal tools only",
        TrustZone.EXTERNAL: "public tools only",
    }[zone]


def _data_class_decision(spec: ToolSpec, zone: TrustZone) -> OfferDecision:
    data_class = spec.effective_data_class
    if data_class.rank <= zone.ceiling.rank:
        return OfferDecision(name=spec.name, offered=True)
    trusted = [z.value for z in zones_for(spec)]
    if spec.data_class is None:
        return OfferDecision(
            name=spec.name,
            offered=False,
            code=OfferCode.UNDECLARED,
            reason=(
                "it declares no data class, so it counts as secret-adjacent; providers in the "
                f"{zone.value} zone are offered {_zone_ceiling(zone)}"
            ),
            fix=(
                'declare data_class="public" in its ToolSpec or @tool if its output may go to '
                'any provider (else "internal" or "secret-adjacent"), or use a provider on '
                f"this machine ({_setting_the_zone(['local'])})"
            ),
        )
    ceiling = zone.ceiling.value
    return OfferDecision(
        name=spec.name,
        offered=False,
        code=OfferCode.ABOVE_CEILING,
        reason=(
            f"its data class is {data_class.value}; providers in the {zone.value} zone are "
            f"offered {_zone_ceiling(zone)}"
        ),
        fix=(
            f'declare data_class="{ceiling}" in the tool if its output may go to {zone.value} '
            f"providers, or run it with a provider you trust with {data_class.value} data "
            f"({_setting_the_zone(trusted)})"
        ),
    )


def _setting_the_zone(zones: list[str]) -> str:
    # Each front end sets a provider's zone its own way: the command line by option, the
    # playground (which has no such option) and every command by the configuration file.
    if len(zones) == 1:
        return (
            f"trust zone {zones[0]}: --trust-zone {zones[0]} on the command line, "
            f'trust_zone = "{zones[0]}" in its [providers.NAME] table of the configuration file'
        )
    return (
        f"trust zone {' or '.join(zones)}: --trust-zone on the command line, trust_zone in its "
        "[providers.NAME] table of the configuration file"
    )


def _switched_off(name: str, switch: str) -> OfferDecision:
    if switch == "group":
        return OfferDecision(
            name=name,
            offered=False,
            code=OfferCode.GROUP_DISABLED,
            reason="its group is disabled ([tools] disable_groups or NR_LLM_DISABLE_GROUPS)",
            fix=(
                "remove the group from [tools] disable_groups and NR_LLM_DISABLE_GROUPS "
                "(`nr-llm config show` says where it is set); enabling the tool alone does not "
                "override a disabled group"
            ),
        )
    if switch == "disable":
        return OfferDecision(
            name=name,
            offered=False,
            code=OfferCode.DISABLED,
            reason="it is disabled ([tools] disable or NR_LLM_DISABLE_TOOLS)",
            fix=(
                "remove it from [tools] disable and NR_LLM_DISABLE_TOOLS "
                "(`nr-llm config show` says where it is set)"
            ),
        )
    return OfferDecision(
        name=name,
        offered=False,
        code=OfferCode.OFF_BY_DEFAULT,
        reason="it is switched off by default",
        fix=(
            f'enable it: enable = ["{name}"] under [tools] in the config file, '
            f"or NR_LLM_ENABLE_TOOLS={name}"
        ),
    )


def _decide(
    host: ToolHost, spec: ToolSpec, zone: TrustZone, allowed: frozenset[str] | None
) -> OfferDecision:
    name = spec.name
    if allowed is not None and name not in allowed:
        return OfferDecision(
            name=name,
            offered=False,
            code=OfferCode.NOT_ALLOWED,
            reason="this run's tool list (--tools) does not name it",
            fix="add it to --tools, or leave --tools out to offer every enabled tool",
        )
    switch = host.switched_off_by(name)
    if switch is not None:
        return _switched_off(name, switch)
    return _data_class_decision(spec, zone)


def offer_decisions(
    host: ToolHost, where: object, allowed: Collection[str] | None = None
) -> tuple[OfferDecision, ...]:
    """One decision per tool of ``host`` (sorted by name), then one per name in ``allowed``
    that no tool has: whether a provider in ``where`` (a :class:`TrustZone`, a zone name or a
    provider, see :func:`trust_zone`) is offered it in a run with ``allowed`` (``None``: every
    tool). The first reason that applies wins: not in the allow-list, switched off (by its
    group, by name, by default), then the data class against the zone's ceiling."""
    if isinstance(allowed, str):  # "a,b" would be read as the characters a, ",", b
        raise TypeError("allowed must be a collection of tool names, not a str")
    named = None if allowed is None else frozenset(allowed)
    if named is not None and any(type(name) is not str for name in named):
        raise TypeError("allowed must hold tool names (str)")
    zone = trust_zone(where)
    decisions = [_decide(host, spec, zone, named) for spec in host.specs()]
    known = set(host.names())
    for name in sorted(n for n in (named or ()) if n not in known):
        decisions.append(
            OfferDecision(
                name=name,
                offered=False,
                code=OfferCode.UNKNOWN,
                reason="no tool of this name is loaded",
                fix="check the name with `nr-llm tools list` (`nr-llm doctor` shows tools "
                "that failed to load)",
            )
        )
    return tuple(decisions)


def offered_specs(
    host: ToolHost, where: object, allowed: Collection[str] | None = None
) -> tuple[ToolSpec, ...]:
    """The specs :func:`offer_decisions` offers, sorted by name."""
    return tuple(host.spec(d.name) for d in offer_decisions(host, where, allowed) if d.offered)
