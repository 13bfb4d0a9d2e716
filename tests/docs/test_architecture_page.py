"""The architecture page is checked against the code, so the map cannot drift from it: every
module it names exists, every room of the package is named on it, and its table of layers is
the one the import checker (``docs/_ext/layers_diagram.py``) judges the imports by."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "airflow_provider_analytics"
PAGE = ROOT / "docs" / "architecture.md"
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

import layers_diagram  # noqa: E402


def named_modules() -> set[str]:
    """Module paths the page names in backticks: ``client/api.py``, ``output/storage.py``, or a
    bare file name such as ``attempts.py`` inside its package's section."""
    return set(re.findall(r"`([\w/]+\.py)`", PAGE.read_text(encoding="utf-8")))


def layer_table() -> list[tuple[str, tuple[str, ...]]]:
    """The rows of the page's table of layers: each layer's name and the folders (``jobs/``)
    and modules (``output/storage.py``) of its second column, by their import names."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    assert rows[0].split("|")[1].strip() == "Layer", "the page's table of layers has moved"
    table = []
    for row in rows[2:]:
        name, package = (cell.strip() for cell in row.split("|")[1:3])
        members = re.findall(r"`(\w+)(?:/|\.py)`", package)
        table.append((name, tuple(members)))
    return table


def rooms() -> list[str]:
    """The package's rooms as the page writes them: each sub-package (``jobs/``) and each
    top-level module a layer holds (``output/storage.py``)."""
    folders = [f"{p.parent.name}/" for p in sorted(PACKAGE.glob("*/__init__.py"))]
    members = {m for _, layer in layers_diagram.LAYERS for m in layer}
    modules = [p.name for p in sorted(PACKAGE.glob("*.py")) if p.stem in members]
    return folders + modules


def test_every_module_the_architecture_page_names_exists() -> None:
    names = named_modules()
    assert len(names) > 30
    package_files = {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")}
    missing = sorted(
        name
        for name in names
        if name not in package_files
        and not any(f.endswith(f"/{name}") for f in package_files)
        and not (ROOT / name).exists()
    )
    assert missing == []


def test_every_room_of_the_package_is_named_on_the_architecture_page() -> None:
    text = PAGE.read_text(encoding="utf-8")
    found = rooms()
    assert len(found) > 5

    assert [room for room in found if f"`{room}`" not in text] == []


def test_the_pages_layers_are_the_ones_the_imports_are_checked_by() -> None:
    page = [(name, set(members)) for name, members in layer_table()]

    assert page == [(name, set(members)) for name, members in layers_diagram.LAYERS]


def test_the_layer_table_is_read_from_the_page() -> None:
    """The two checks above read the page's table for real (what they compare today)."""
    table = layer_table()

    assert len(table) >= 5
    assert all(name and members for name, members in table)
    assert "operators" in table[0][1]
    assert "core/" in rooms()
    assert "storage.py" in rooms()
