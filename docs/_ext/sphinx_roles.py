"""A Griffe extension: the package's Sphinx roles (``:class:`ToolHost```) become cross-references.

nr-llm's docstrings are reST-flavoured (ADR 0021): inline roles such as ``:class:`ToolHost```,
``:meth:`ToolHost.invoke``` and ``:data:`MAX_CONTENT_BYTES``` name what they mean, and IDEs
show them as they are. mkdocstrings does not read Sphinx roles, so this extension rewrites each
one, after Griffe has loaded the package, into the autoref element mkdocstrings itself emits
for annotations: resolved like Sphinx resolves it (the object's own scope, then its parents',
imports followed to where the name is defined), shown as code, a link when the target is on a
page and plain code when it is not (a standard-library name, a private helper).

A role whose target cannot be resolved at all is a typo: it is logged as a warning, which fails
``mkdocs build --strict``.
"""

from __future__ import annotations

import html
import importlib.util
import logging
import re
from collections.abc import Callable, Iterator
from typing import Any

import griffe

__all__ = ["SphinxRoles", "convert_roles", "resolver", "roles_in", "walk"]

_log = logging.getLogger("mkdocs.plugins.nr_llm.sphinx_roles")

#: ``:role:`target```, ``:role:`~a.b.target``` or ``:role:`title <target>```.
ROLE = re.compile(
    r":(?:py:)?(?P<role>class|meth|func|data|mod|attr|exc|obj|const):`(?P<body>[^`]+)`"
)
_EXPLICIT = re.compile(r"^(?P<title>.+?)\s*<(?P<target>[^<>]+)>$", re.DOTALL)


def roles_in(text: str) -> Iterator[tuple[str, str, str]]:
    """Each role of ``text`` as ``(role, title, target)``, the title as Sphinx would show it."""
    for match in ROLE.finditer(text):
        role, body = match.group("role"), " ".join(match.group("body").split())
        explicit = _EXPLICIT.match(body)
        if explicit:
            yield role, explicit.group("title"), explicit.group("target")
            continue
        target = body.removeprefix("~")
        title = target.rsplit(".", 1)[-1] if body.startswith("~") else target
        if role in ("meth", "func") and not title.endswith(")"):
            title += "()"
        yield role, title, target


def convert_roles(text: str, resolve: Callable[[str], str | None]) -> str:
    """``text`` with every role replaced by an optional autoref to ``resolve(target)``."""

    def one(match: re.Match[str]) -> str:
        ((_, title, target),) = roles_in(match.group(0))
        identifier = resolve(target) or target
        return (
            f'<autoref identifier="{html.escape(identifier)}" optional>'
            f"<code>{html.escape(title)}</code></autoref>"
        )

    return ROLE.sub(one, text)


def _final_path(collection: Any, path: str) -> str | None:
    try:
        found = collection.get_member(path)
    except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None
    if isinstance(found, griffe.Alias):
        try:
            return str(found.final_target.path)
        except (griffe.AliasResolutionError, griffe.CyclicAliasError):
            return str(found.target_path)
    return str(found.path)


def resolver(obj: griffe.Object) -> Callable[[str], str | None]:
    """Resolve a role's target from ``obj``'s scope, as Sphinx would: the first name in the
    object's scope (then its parents'), the rest appended; a full path as it is."""
    collection = obj.modules_collection

    def resolve(target: str) -> str | None:
        first, _, rest = target.lstrip(".").partition(".")
        candidates = []
        try:
            head = obj.resolve(first)
            candidates.append(f"{head}.{rest}" if rest else head)
        except griffe.NameResolutionError:
            pass
        candidates.append(target.lstrip("."))
        for candidate in candidates:
            path = _final_path(collection, candidate)
            if path is not None:
                return path
        return None

    return resolve


def _is_external(target: str) -> bool:
    """Whether ``target`` names something of an importable module outside this project
    (``time.monotonic``): shown as code, never a link."""
    root = target.lstrip(".").split(".")[0]
    return root != "nr_llm_core" and importlib.util.find_spec(root) is not None


def walk(obj: griffe.Object) -> Iterator[griffe.Object]:
    """``obj`` and every object defined in it (imports are aliases: not walked)."""
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from walk(member)  # type: ignore[arg-type]


class SphinxRoles(griffe.Extension):
    """Rewrite the Sphinx roles of every docstring of a loaded package."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        for obj in walk(pkg):
            if obj.docstring is None or ":" not in obj.docstring.value:
                continue
            resolve = resolver(obj)
            for _, _, target in roles_in(obj.docstring.value):
                if resolve(target) is None and not _is_external(target):
                    _log.warning("%s: the role target %r names nothing", obj.path, target)
            obj.docstring.value = convert_roles(obj.docstring.value, resolve)
