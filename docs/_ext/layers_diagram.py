"""The architecture's layers as an SVG, and the import graph it is read from.

Every module of a package is parsed (not imported) into the modules of the same package that
running it imports (:func:`read_modules`). Imports under ``if TYPE_CHECKING:`` are left out:
they cost nothing at run time. Imports inside functions are kept: a deferred import is still a
dependency, and deferring one does not break a circle, it only hides it. The same graph gives

- the layers (:func:`read_layers`): imports between layers counted per layer, with the ones
  pointing up the stack drawn in red, so the picture shows a broken rule as soon as one appears;
- the circles (:func:`cycles`): the strongly connected components of the module graph;
- the imports of an enclosing package's namespace (:attr:`ModuleGraph.upward`), which need that
  package's ``__init__`` finished before the module inside it can run.

The checks in ``tests/docs/test_figures.py`` run these on the provider and on the emulator.
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

PACKAGE = "airflow_provider_analytics"
Stack = tuple[tuple[str, tuple[str, ...]], ...]
TYPE_GUARDS = ("TYPE_CHECKING", "typing.TYPE_CHECKING")
"""The tests of an ``if`` whose body only a type checker runs."""
LAYERS: Stack = (
    ("Airflow surface", ("hooks", "operators", "sensors", "triggers")),
    ("Facade and old names", ("jobs", "sinks", "tabular", "storage")),
    ("Jobs", ("export", "reports", "plan")),
    ("Output", ("output",)),
    ("Client", ("client",)),
    ("Core", ("core", "_moved")),
)
"""Top to bottom, each with the sub-packages or top-level modules it holds (the architecture
page's table of layers, which a test compares with this)."""


@dataclass(frozen=True)
class ModuleGraph:
    """The modules of one package (dotted names, a package by its own name for its
    ``__init__``), what each imports of the same package when it runs, and every module name
    each imports from anywhere (for the Airflow check)."""

    imports: dict[str, set[str]]
    imported: dict[str, set[str]]

    @property
    def upward(self) -> list[tuple[str, str]]:
        """Imports of a name from the ``__init__`` of a package that encloses the importer
        (``from analytics_emulator import EmulatorServer`` inside ``analytics_emulator``).
        There should be none: the facade is for users, and the modules behind it import from
        the module that defines a name."""
        return sorted(
            (module, target)
            for module, targets in self.imports.items()
            for target in targets
            if module.startswith(f"{target}.")
        )


def _ancestors(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:end]) for end in range(1, len(parts))}


def _runtime_imports(
    tree: ast.Module, module: str, *, is_package: bool, modules: set[str], typing: bool
) -> Iterator[tuple[str, bool]]:
    """The modules the import statements outside ``if TYPE_CHECKING:`` (with ``typing``, all
    of them) run, as (absolute name, whether its namespace must be complete).

    ``import a.b.c`` runs ``a``, ``a.b`` and ``a.b.c``; ``from a.b import c`` runs ``a`` and
    ``a.b``, and ``a.b.c`` if that is a module, and otherwise reads the name ``c`` from
    ``a.b``'s finished ``__init__``. Relative imports are resolved against the module's
    package (a package's ``__init__`` is its own package)."""
    package = module if is_package else module.rpartition(".")[0]

    def chain(name: str) -> Iterator[tuple[str, bool]]:
        parts = name.split(".")
        for end in range(1, len(parts) + 1):
            yield ".".join(parts[:end]), False

    def visit(node: ast.AST) -> Iterator[tuple[str, bool]]:
        if not typing and isinstance(node, ast.If) and ast.unparse(node.test) in TYPE_GUARDS:
            for branch in node.orelse:
                yield from visit(branch)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from chain(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield from chain(base)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                if submodule in modules:
                    yield submodule, False
                else:
                    yield base, True
        for child in ast.iter_child_nodes(node):
            yield from visit(child)

    yield from visit(tree)


def read_modules(package_dir: Path, *, typing: bool = False) -> ModuleGraph:
    """Parse every module under ``package_dir`` into a :class:`ModuleGraph`.

    With ``typing``, imports under ``if TYPE_CHECKING:`` count too: the graph a type checker
    follows, in which a circle is harmless at run time but still a tangle for a reader.

    An edge from a module to a package that encloses it is kept only when the module reads a
    name from that package's namespace: merely running inside it, or importing a sibling
    through it, needs nothing of its ``__init__`` beyond having started."""
    sources: dict[str, Path] = {}
    packages: set[str] = set()
    for path in sorted(package_dir.rglob("*.py")):
        relative = path.relative_to(package_dir.parent).with_suffix("")
        module = ".".join(relative.parts).removesuffix(".__init__")
        sources[module] = path
        if path.name == "__init__.py":
            packages.add(module)
    names = set(sources)
    imports: dict[str, set[str]] = {}
    imported: dict[str, set[str]] = {}
    for module, path in sources.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found = list(
            _runtime_imports(
                tree, module, is_package=module in packages, modules=names, typing=typing
            )
        )
        imported[module] = {name for name, _ in found}
        enclosing = _ancestors(module)
        imports[module] = {
            name
            for name, needs_namespace in found
            if name in names and name != module and (needs_namespace or name not in enclosing)
        }
    return ModuleGraph(imports, imported)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: every strongly connected component of more than one module, and
    every module that imports itself, each sorted (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in graph:
                    continue
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1 or node in graph[node]:
                        found.append(sorted(component))
    return sorted(found)


@dataclass(frozen=True)
class Layers:
    """What the diagram shows: the modules of each layer, the imports between layers (by
    layer index, counted once per importing module and imported layer) and the modules of each
    layer that import Airflow when they run; ``stack`` is the layers they were read by."""

    stack: Stack
    modules: dict[int, list[str]]
    edges: Counter[tuple[int, int]]
    airflow: dict[int, list[str]]

    @property
    def upward(self) -> list[tuple[int, int]]:
        """Imports from a lower layer into a higher one (there should be none)."""
        return sorted(edge for edge in self.edges if edge[0] > edge[1])


def layer_of(module: str, layers: Stack = LAYERS) -> int | None:
    """The index of the layer holding ``module`` (by its first name below the package), or
    None for the package's own ``__init__`` and modules outside every layer."""
    parts = module.split(".")
    if len(parts) < 2:
        return None
    for index, (_, members) in enumerate(layers):
        if parts[1] in members:
            return index
    return None


def read_layers(package_dir: Path, layers: Stack = LAYERS) -> Layers:
    """Parse every module under ``package_dir`` into :class:`Layers`."""
    graph = read_modules(package_dir)
    modules: dict[int, list[str]] = {index: [] for index in range(len(layers))}
    edges: Counter[tuple[int, int]] = Counter()
    airflow: dict[int, list[str]] = {index: [] for index in range(len(layers))}
    for module in sorted(graph.imports):
        layer = layer_of(module, layers)
        if layer is None:
            continue
        short = module.partition(".")[2]
        modules[layer].append(short)
        if any(n == "airflow" or n.startswith("airflow.") for n in graph.imported[module]):
            airflow[layer].append(short)
        targets = {layer_of(name, layers) for name in graph.imports[module]} - {None, layer}
        for target in targets:
            assert target is not None
            edges[(layer, target)] += 1
    return Layers(layers, modules, edges, airflow)


BOX_W = 560
BOX_H = 62
GAP = 26
LEFT = 20
ARROW_X0 = LEFT + BOX_W + 30
FONT = "DejaVu Sans, sans-serif"


def render(layers: Layers) -> str:
    """The layers stacked top to bottom, with the imports between them on the right."""
    count = len(layers.stack)
    pairs = sorted(layers.edges)
    width = ARROW_X0 + 10 + 16 * len(pairs) + 250
    top = 40
    height = top + count * (BOX_H + GAP) + 30
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="{FONT}" font-size="12">',
        '<rect width="100%" height="100%" fill="#ffffff"/>',
        '<defs><marker id="head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0 0 L10 5 L0 10 z" '
        'fill="context-stroke"/></marker></defs>',
        f'<text x="{LEFT}" y="22" font-size="14" fill="#1f2933">Layers of {PACKAGE}, '
        "from the imports of its modules</text>",
    ]

    def middle(index: int) -> float:
        return top + index * (BOX_H + GAP) + BOX_H / 2

    for index, (name, members) in enumerate(layers.stack):
        y = top + index * (BOX_H + GAP)
        airflow_modules = layers.airflow[index]
        fill = "#e8f0fe" if airflow_modules else "#f5f7fa"
        parts.append(
            f'<rect x="{LEFT}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="6" fill="{fill}" '
            'stroke="#9aa5b1"/>'
        )
        heading = f"{name}: {', '.join(members)}"
        parts.append(
            f'<text x="{LEFT + 12}" y="{y + 20}" font-weight="bold" fill="#1f2933">'
            f"{escape(heading)}</text>"
        )
        modules = layers.modules[index]
        summary = f"{len(modules)} modules"
        if airflow_modules:
            summary += f"; {len(airflow_modules)} import Airflow"
        else:
            summary += "; no Airflow import"
        parts.append(f'<text x="{LEFT + 12}" y="{y + 38}" fill="#52606d">{escape(summary)}</text>')
        names = ", ".join(m.split(".")[-1] for m in modules if m not in members)
        if len(names) > 86:
            names = names[:83].rsplit(",", 1)[0] + ", …"
        parts.append(
            f'<text x="{LEFT + 12}" y="{y + 54}" font-size="10.5" fill="#7b8794">'
            f"{escape(names)}</text>"
        )
    for column, (source, target) in enumerate(pairs):
        x = ARROW_X0 + 10 + column * 16
        upward = source > target
        color = "#dc2626" if upward else "#9aa5b1"
        y1, y2 = middle(source), middle(target) + (-8 if upward else 8)
        parts.append(
            f'<path d="M{LEFT + BOX_W} {y1} H{x} V{y2} H{LEFT + BOX_W + 4}" fill="none" '
            f'stroke="{color}" stroke-width="1.2" marker-end="url(#head)" opacity="0.85"/>'
        )
        parts.append(
            f'<text x="{x - 2}" y="{y1 - 4}" font-size="9" text-anchor="end" fill="{color}">'
            f"{layers.edges[(source, target)]}</text>"
        )
    legend_x = ARROW_X0 + 10 + 16 * len(pairs) + 14
    notes = [
        ("#9aa5b1", "modules importing a lower layer"),
        ("#dc2626", f"pointing up: {len(layers.upward)}"),
    ]
    for row, (color, label) in enumerate(notes):
        y = top + 10 + row * 20
        parts.append(
            f'<line x1="{legend_x}" y1="{y}" x2="{legend_x + 22}" y2="{y}" stroke="{color}" '
            'stroke-width="2"/>'
        )
        parts.append(f'<text x="{legend_x + 28}" y="{y + 4}" fill="#52606d">{label}</text>')
    parts.append(
        f'<rect x="{legend_x}" y="{top + 54}" width="14" height="12" fill="#e8f0fe" '
        'stroke="#9aa5b1"/>'
    )
    parts.append(f'<text x="{legend_x + 20}" y="{top + 64}" fill="#52606d">imports Airflow</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
