"""The output layout as an SVG tree: the folders and files one run of the daily pipeline wrote.

Read from the files themselves (names, rows from the Parquet footers, sizes), so the picture
is whatever the operators write today.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from typing import TYPE_CHECKING

import pyarrow.parquet as pq

if TYPE_CHECKING:
    import datetime as dt
    from pathlib import Path

ROW = 22
INDENT = 22
CHAR = 7.4  # width of one character of 12 px monospace text
TOP = 64
COLORS = {
    "root": "#1f2933",
    "prefix": "#2563eb",
    "table": "#0891b2",
    "partition": "#7b8794",
    "own_day": "#059669",
    "look_back": "#d97706",
    "file": "#1f2933",
    "note": "#7b8794",
}


@dataclass
class Node:
    """One line of the tree."""

    name: str
    kind: str
    note: str = ""
    children: list[Node] = field(default_factory=list)


def _file_note(path: Path) -> str:
    rows = pq.read_metadata(path).num_rows
    return f"{rows:,} rows, {path.stat().st_size / 1024:,.1f} KiB"


def read_tree(root: Path, day: dt.date, owners: dict[str, str]) -> Node:
    """The folders and files under ``root``; ``owners`` names the task that wrote each
    prefix (its first folder)."""

    def walk(folder: Path, depth: int) -> list[Node]:
        nodes = []
        for path in sorted(folder.iterdir()):
            if path.is_file():
                nodes.append(Node(path.name, "file", _file_note(path)))
                continue
            kind, note = "table", ""
            if depth == 0:
                kind, note = "prefix", f"written by task {owners.get(path.name, '?')}"
            elif path.name.startswith("dt="):
                own = path.name == f"dt={day.isoformat()}"
                kind = "own_day" if own else "look_back"
                note = "the run's day" if own else "re-pulled (lookback_days)"
            elif "=" in path.name:
                kind = "partition"
            children = walk(path, depth + 1)
            if len(children) == 1 and children[0].kind == "file" and kind != "prefix":
                # a partition holding one file: one line, "dt=.../name.parquet"
                (only,) = children
                notes = ", ".join(part for part in (only.note, note) if part)
                nodes.append(Node(f"{path.name}/{only.name}", kind, notes))
                continue
            nodes.append(Node(f"{path.name}/", kind, note, walk(path, depth + 1)))
        return nodes

    return Node("ANALYTICS_OUTPUT_ROOT/", "root", "", walk(root, 0))


def _lines(node: Node, depth: int = 0) -> list[tuple[int, Node, bool]]:
    lines = [(depth, node, bool(node.children))]
    for child in node.children:
        lines.extend(_lines(child, depth + 1))
    return lines


def render(tree: Node, title: str) -> str:
    """The tree as an SVG document: connectors, coloured names, notes in a column."""
    lines = _lines(tree)
    name_right = max(20 + depth * INDENT + len(node.name) * CHAR for depth, node, _ in lines)
    note_x = name_right + 24
    width = note_x + max(len(node.note) for _, node, _ in lines) * CHAR * 0.95 + 20
    height = TOP + len(lines) * ROW + 12
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height}" '
        f'viewBox="0 0 {width:.0f} {height}" font-family="DejaVu Sans Mono, monospace" '
        'font-size="12">',
        '<rect width="100%" height="100%" fill="#ffffff"/>',
        f'<text x="20" y="24" font-family="DejaVu Sans, sans-serif" font-size="14" '
        f'fill="{COLORS["root"]}">{escape(title)}</text>',
    ]
    legend = [("prefix", "prefix (the Asset)"), ("table", "table"), ("own_day", "run's day")]
    legend.append(("look_back", "look-back day"))
    x = 20.0
    for kind, label in legend:
        parts.append(f'<rect x="{x}" y="36" width="10" height="10" fill="{COLORS[kind]}"/>')
        parts.append(
            f'<text x="{x + 14}" y="45" font-family="DejaVu Sans, sans-serif" font-size="11" '
            f'fill="{COLORS["note"]}">{escape(label)}</text>'
        )
        x += 24 + len(label) * 6.4
    parent_rows: dict[int, int] = {}
    for index, (depth, node, _) in enumerate(lines):
        y = TOP + index * ROW
        x_name = 20 + depth * INDENT
        if depth > 0:
            parent_y = TOP + parent_rows[depth - 1] * ROW + 5
            x_line = x_name - INDENT + 6
            parts.append(
                f'<path d="M{x_line} {parent_y} V{y - 4} H{x_name - 4}" fill="none" '
                'stroke="#cbd2d9" stroke-width="1"/>'
            )
        parent_rows[depth] = index
        weight = ' font-weight="bold"' if node.kind in {"prefix", "own_day"} else ""
        folder, _, file_name = node.name.rpartition("/")
        if file_name and node.kind != "file":  # a partition and its one file
            label = (
                f'{escape(folder)}/<tspan fill="{COLORS["file"]}" font-weight="normal">'
                f"{escape(file_name)}</tspan>"
            )
        else:
            label = escape(node.name)
        color = COLORS[node.kind]
        parts.append(f'<text x="{x_name}" y="{y}" fill="{color}"{weight}>{label}</text>')
        if node.note:
            parts.append(
                f'<text x="{note_x:.0f}" y="{y}" font-family="DejaVu Sans, sans-serif" '
                f'font-size="11" fill="{COLORS["note"]}">{escape(node.note)}</text>'
            )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def count_files(tree: Node) -> int:
    """How many files the tree holds."""
    return sum(1 for _, node, _ in _lines(tree) if node.name.endswith(".parquet"))
