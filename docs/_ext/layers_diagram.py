"""The architecture's layers as an SVG, read from the package's own imports.

Every module of ``airflow_provider_analytics`` is parsed (not imported); its imports of other
modules of the package, and of Airflow, are counted per layer. Imports under
``if TYPE_CHECKING:`` are left out: they cost nothing at run time. An import that points up
the stack is drawn in red, so the picture shows a broken rule as soon as one appears.
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
LAYERS = (
    ("Airflow surface", ("hooks", "operators", "sensors", "triggers", "destinations")),
    ("Jobs", ("jobs",)),
    ("Sinks and storage", ("sinks", "storage", "pipeline")),
    ("Tables", ("tabular",)),
    ("Client", ("client",)),
    ("Core", ("core",)),
)
"""Top to bottom, each with its sub-packages or modules (the architecture page's table)."""


@dataclass(frozen=True)
class Layers:
    """What the diagram shows: the modules of each layer, the imports between layers (by
    layer index, counted once per importing module and imported module) and the modules of each
    layer that import Airflow when they run."""

    modules: dict[int, list[str]]
    edges: Counter[tuple[int, int]]
    airflow: dict[int, list[str]]

    @property
    def upward(self) -> list[tuple[int, int]]:
        """Imports from a lower layer into a higher one (there should be none)."""
        return sorted(edge for edge in self.edges if edge[0] > edge[1])


def _layer_of(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != PACKAGE or len(parts) < 2:
        return None
    for index, (_, members) in enumerate(LAYERS):
        if parts[1] in members:
            return index
    return None


def _runtime_imports(tree: ast.Module, module: str) -> Iterator[str]:
    """Absolute names of the modules imported outside ``if TYPE_CHECKING:`` blocks."""
    package = module.rsplit(".", 1)[0]

    def visit(node: ast.AST) -> Iterator[str]:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (name for child in node.orelse for name in visit(child))
            return
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            yield from visit(child)

    yield from visit(tree)


def read_layers(package_dir: Path) -> Layers:
    """Parse every module under ``package_dir`` into :class:`Layers`."""
    modules: dict[int, list[str]] = {index: [] for index in range(len(LAYERS))}
    edges: Counter[tuple[int, int]] = Counter()
    airflow: dict[int, list[str]] = {index: [] for index in range(len(LAYERS))}
    for path in sorted(package_dir.rglob("*.py")):
        relative = path.relative_to(package_dir.parent).with_suffix("")
        module = ".".join(relative.parts).removesuffix(".__init__")
        layer = _layer_of(module)
        if layer is None:
            continue
        short = module.removeprefix(f"{PACKAGE}.")
        modules[layer].append(short)
        imported = set(_runtime_imports(ast.parse(path.read_text(encoding="utf-8")), module))
        if any(name == "airflow" or name.startswith("airflow.") for name in imported):
            airflow[layer].append(short)
        targets = {_layer_of(name) for name in imported} - {None, layer}
        for target in targets:
            assert target is not None
            edges[(layer, target)] += 1
    return Layers(modules, edges, airflow)


BOX_W = 560
BOX_H = 62
GAP = 26
LEFT = 20
ARROW_X0 = LEFT + BOX_W + 30
FONT = "DejaVu Sans, sans-serif"


def render(layers: Layers) -> str:
    """The layers stacked top to bottom, with the imports between them on the right."""
    count = len(LAYERS)
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

    for index, (name, members) in enumerate(LAYERS):
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
