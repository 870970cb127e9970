"""What ``nr-llm run`` says about the tools a provider is not offered: before the run, one
line per tool with the reason and the fix; after it, a line when nothing was offered."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Final

from nr_llm_core.cli._output import near_names, visible
from nr_llm_core.offers import OfferCode, OfferDecision
from nr_llm_core.providers.base import TrustZone

__all__ = ["not_loaded_message", "not_offered_lines", "nothing_offered_line"]

# Refused because of the provider's zone: always worth saying before a run.
_ZONE_CODES: Final = frozenset({OfferCode.UNDECLARED, OfferCode.ABOVE_CEILING})
_SWITCHED_OFF: Final = frozenset(
    {OfferCode.OFF_BY_DEFAULT, OfferCode.DISABLED, OfferCode.GROUP_DISABLED}
)


def _worth_saying(decision: OfferDecision, named: bool) -> bool:
    # A tool refused for the provider's zone is always named. With --tools, every tool the
    # user named and cannot have is too; a tool the user left out of --tools, or one that is
    # switched off and nobody asked for, is the user's or the operator's own choice (and
    # `nr-llm tools list` shows it): naming it on every run would bury the lines that matter.
    if decision.offered or decision.code is None:
        return False
    if named:
        return decision.code is not OfferCode.NOT_ALLOWED
    return decision.code in _ZONE_CODES


def not_offered_lines(
    decisions: Sequence[OfferDecision], zone: TrustZone, *, named: bool
) -> list[str]:
    """The lines printed before a run: each tool the provider will not be offered that is
    worth naming, with its reason and fix (none when there is none). ``named``: the run has
    an allow-list (``--tools``)."""
    shown = [d for d in decisions if _worth_saying(d, named)]
    if not shown:
        return []
    # Tools held back for the same reason share one entry (the builtins' internal tools for
    # an external provider would otherwise repeat one sentence nine times).
    grouped: dict[tuple[str, str], list[str]] = {}
    for decision in shown:
        names = grouped.setdefault((decision.reason, decision.fix), [])
        names.append(visible(decision.name, keep_newlines=False))
    lines = [f"not offered to this provider (trust zone {zone.value}):"]
    for (reason, fix), names in grouped.items():
        lines.append(f"  {', '.join(names)}: {reason}.")
        lines.append(f"    fix: {fix}.")
    return lines


def not_loaded_message(unknown: Sequence[str], loaded: Sequence[str]) -> str:
    """The error for names in ``--tools`` that no loaded tool has, each with the loaded names
    close to it (a typo), said before any request is sent."""
    named = [visible(name, keep_newlines=False) + near_names(name, loaded) for name in unknown]
    which = "a tool that is" if len(unknown) == 1 else "tools that are"
    return (
        f"--tools names {which} not loaded: {', '.join(named)}; nothing was sent: check the "
        "name with `nr-llm tools list` (`nr-llm doctor` shows tools that failed to load)"
    )


def nothing_offered_line(decisions: Sequence[OfferDecision], zone: TrustZone) -> str:
    """The report's line for a run that offered no tool: how many tools were held back and
    for which reasons."""
    prefix = f"no tool was offered to this provider (trust zone {zone.value})"
    counts = Counter(d.code for d in decisions if not d.offered and d.code is not None)
    if not counts:
        return f"{prefix}: no tool is loaded (see `nr-llm tools list` and `nr-llm doctor`)."
    parts = []
    above = counts[OfferCode.ABOVE_CEILING]
    undeclared = counts[OfferCode.UNDECLARED]
    off = sum(counts[code] for code in _SWITCHED_OFF)
    if undeclared:
        parts.append(f"{undeclared} declare(s) no data class")
    if above:
        parts.append(f"{above} with a data class above the zone's ceiling")
    if off:
        parts.append(f"{off} switched off")
    if counts[OfferCode.NOT_ALLOWED]:
        parts.append(f"{counts[OfferCode.NOT_ALLOWED]} not named by --tools")
    return f"{prefix}: {', '.join(parts)}; `nr-llm tools list` shows each tool's zones."
