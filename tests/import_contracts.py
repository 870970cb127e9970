"""Two import-linter contract types the standard ones cannot express, used by
``[tool.importlinter]`` in pyproject.toml (``lint-imports``, run by ``scripts/test``):

- ``acyclic_modules``: no cycle among the modules of a package. import-linter's own
  ``acyclic_siblings`` compares packages; this follows every module-to-module import.
- ``optional_imports``: importing any module of the package never imports an optional
  dependency (an extra): only a function, or the extra's own subpackage, may import it.

Both read every import grimp finds: at module level, inside functions, and under
``if TYPE_CHECKING:`` (docs/adr/0015-import-layers.md says why). ``optional_imports`` then
keeps only the imports that run when a module is imported.
"""

from __future__ import annotations

import ast
import importlib.util
from collections import deque
from collections.abc import Iterable, Mapping
from pathlib import Path

from grimp import ImportGraph
from importlinter import Contract, ContractCheck, fields, output

__all__ = ["AcyclicModulesContract", "OptionalImportsContract", "module_level_import_lines"]

Edge = tuple[str, str]


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _lines(graph: ImportGraph, importer: str, imported: str) -> list[int]:
    details = graph.get_import_details(importer=importer, imported=imported)
    return sorted({d["line_number"] for d in details})


def _render_chain(chain: list[Edge], lines: Mapping[Edge, Iterable[int]]) -> str:
    steps = [chain[0][0]]
    for edge in chain:
        numbers = ", ".join(f"l.{n}" for n in lines[edge])
        steps.append(f"-> {edge[1]} ({numbers})")
    return " ".join(steps)


def _strong_components(nodes: list[str], successors: Mapping[str, list[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in nodes:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            following = successors[node]
            if child < len(following):
                work.append((node, child + 1))
                nxt = following[child]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return components


def _shortest_path(start: str, goal: str, successors: Mapping[str, Iterable[str]]) -> list[Edge]:
    """The shortest chain of imports from ``start`` to ``goal`` (``[]`` if there is none)."""
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in successors.get(node, ()):
            if nxt == goal:
                chain = [(node, goal)]
                while node != start:
                    chain.insert(0, (previous[node], node))
                    node = previous[node]
                return chain
            if nxt not in previous and nxt != start:
                previous[nxt] = node
                queue.append(nxt)
    return []


class AcyclicModulesContract(Contract):
    """No module of ``package`` imports itself through other modules of ``package``."""

    type_name = "acyclic_modules"

    package = fields.StringField()

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        package = str(self.package)  # type: ignore[attr-defined]
        modules = sorted(m for m in graph.modules if _inside(m, package))
        successors = {
            m: sorted(i for i in graph.find_modules_directly_imported_by(m) if _inside(i, package))
            for m in modules
        }
        cycles = []
        for component in _strong_components(modules, successors):
            first = component[0]
            if len(component) > 1 or first in successors[first]:
                inside = {m: [i for i in successors[m] if i in component] for m in component}
                chain = _shortest_path(first, first, inside)
                lines = {edge: _lines(graph, *edge) for edge in chain}
                cycles.append(_render_chain(chain, lines))
        return ContractCheck(kept=not cycles, warnings=[], metadata={"cycles": cycles})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for cycle in check.metadata["cycles"]:
            output.print_error(f"import cycle: {cycle}", bold=False)
            output.new_line()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def module_level_import_lines(source: str) -> set[int]:
    """The lines of the import statements that run when the module is imported: at module
    level, in class bodies, ``if``/``try``/``with`` blocks; not in functions, not under
    ``if TYPE_CHECKING:`` (its ``else`` runs, so it counts)."""
    lines: set[int] = set()
    pending: list[ast.stmt] = list(ast.parse(source).body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            lines.add(node.lineno)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        elif isinstance(node, ast.If):
            pending.extend(node.orelse)
            if not _is_type_checking(node.test):
                pending.extend(node.body)
        else:
            for name in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, name, ()):
                    if isinstance(child, ast.ExceptHandler):
                        pending.extend(child.body)
                    elif isinstance(child, ast.stmt):
                        pending.extend([child])
            for case in getattr(node, "cases", ()):  # match statements
                pending.extend(case.body)
    return lines


def _source_file(root: Path, module: str) -> Path:
    parts = module.split(".")[1:]
    package = root.joinpath(*parts, "__init__.py")
    return package if package.exists() else root.joinpath(*parts).with_suffix(".py")


class OptionalImportsContract(Contract):
    """Importing a module of ``package`` never imports an optional dependency.

    ``extras``: one entry per requirement of an extra, ``distribution`` or
    ``distribution=import_name`` when they differ (``pydantic-ai-slim=pydantic_ai``).
    ``homes``: ``import_name: subpackage`` for an extra whose own subpackage may import it
    at module level (the rest of the package may then import that subpackage only lazily).
    """

    type_name = "optional_imports"

    package = fields.StringField()
    extras = fields.ListField(subfield=fields.StringField())
    homes = fields.ListField(subfield=fields.StringField(), required=False, default=[])

    def _names(self) -> dict[str, str | None]:
        """import name -> its home subpackage, or ``None``."""
        homes = {}
        for entry in self.homes:  # type: ignore[attr-defined]
            name, _, home = entry.partition(":")
            homes[name.strip()] = home.strip()
        names: dict[str, str | None] = {}
        for entry in self.extras:  # type: ignore[attr-defined]
            distribution, _, name = entry.partition("=")
            name = (name or distribution).strip().replace("-", "_")
            names[name] = homes.get(name)
        return names

    def _module_level_edges(self, graph: ImportGraph, package: str) -> dict[str, list[str]]:
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.origin is not None, package
        root = Path(spec.origin).parent
        edges: dict[str, list[str]] = {}
        for module in sorted(m for m in graph.modules if _inside(m, package)):
            eager = module_level_import_lines(_source_file(root, module).read_text("utf-8"))
            edges[module] = sorted(
                imported
                for imported in graph.find_modules_directly_imported_by(module)
                if eager.intersection(_lines(graph, module, imported))
            )
        return edges

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        package = str(self.package)  # type: ignore[attr-defined]
        edges = self._module_level_edges(graph, package)
        found = []
        for name, home in sorted(self._names().items(), key=lambda item: item[0]):
            for module in edges:
                if home is not None and _inside(module, home):
                    continue
                chain = _shortest_path(module, name, edges)
                if chain:
                    lines = {edge: _lines(graph, *edge) for edge in chain}
                    found.append(f"{name}: {_render_chain(chain, lines)}")
        return ContractCheck(kept=not found, warnings=[], metadata={"chains": found})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for chain in check.metadata["chains"]:
            output.print_error(f"imported when the module is imported: {chain}", bold=False)
            output.new_line()
