"""The example-pipelines tables of the README and of the docs list every file of
``example_dags/``, and nothing else."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = ("README.md", "docs/example_dags.md")
_FIRST_CELL = re.compile(r"^\|\s*`(?P<file>[\w.]+\.py)`")


def listed(text: str) -> list[str]:
    """The ``*.py`` files named in the first cell of a table's rows."""
    return [m["file"] for line in text.splitlines() if (m := _FIRST_CELL.match(line))]


def test_a_table_row_names_its_file() -> None:
    text = "| file | what |\n|---|---|\n| `a.py` | x |\n| `b.py` (dag `b`) | y |\nnot `c.py`\n"
    assert listed(text) == ["a.py", "b.py"]


@pytest.mark.parametrize("page", PAGES)
def test_the_table_lists_every_example_dag(page: str) -> None:
    files = sorted(path.name for path in (REPO / "example_dags").glob("*.py"))
    rows = listed((REPO / page).read_text(encoding="utf-8"))
    assert len(rows) == len(set(rows)), f"{page} lists a file twice"
    assert sorted(rows) == files
