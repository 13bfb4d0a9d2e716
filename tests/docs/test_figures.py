"""The facts the site's figures are drawn from: the package's layers and the day rule."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "docs" / "_ext"))

import day_timeline  # noqa: E402
import layers_diagram  # noqa: E402
import layout_diagram  # noqa: E402


def test_imports_only_point_down_and_only_the_airflow_surface_imports_airflow() -> None:
    layers = layers_diagram.read_layers(REPO / "airflow_provider_analytics")

    assert layers.upward == []
    assert layers.edges, "no imports between layers were found"
    surface = 0
    assert layers.airflow[surface]
    assert all(not modules for layer, modules in layers.airflow.items() if layer != surface)


def test_an_upward_import_is_found(tmp_path: Path) -> None:
    package = tmp_path / "airflow_provider_analytics"
    (package / "client").mkdir(parents=True)
    (package / "jobs").mkdir()
    (package / "client" / "api.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from airflow_provider_analytics.jobs import reports\n"
        "if TYPE_CHECKING:\n    from airflow_provider_analytics.jobs import other\n"
    )
    (package / "jobs" / "reports.py").write_text("from ..client import api\n")

    layers = layers_diagram.read_layers(package)

    client, jobs = 4, 1
    assert layers.upward == [(client, jobs)]
    assert layers.edges[(jobs, client)] == 1
    assert "pointing up: 1" in layers_diagram.render(layers)


@pytest.mark.parametrize(
    ("label", "first", "last"),
    [
        ("scheduled @daily (cron)", "2024-01-15", "2024-01-15"),
        ("scheduled, weekly data intervals", "2024-01-15", "2024-01-21"),
        ("manual, --logical-date 2024-01-15", "2024-01-15", "2024-01-15"),
        ("manual, no logical date", "2024-01-17", "2024-01-17"),
    ],
)
def test_the_timeline_rows_are_the_day_rules_answers(label: str, first: str, last: str) -> None:
    (run,) = [run for run in day_timeline.RUNS if run.label == label]
    assert run.covered().dates == (first, last)


def test_the_layout_tree_reads_partitions_and_files(tmp_path: Path) -> None:
    for day in ("2024-01-14", "2024-01-15"):
        folder = tmp_path / "checkout_funnel" / "funnel" / f"dt={day}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"step": [1, 2, 3]}), folder / "funnel.parquet")
    tree = layout_diagram.read_tree(tmp_path, dt.date(2024, 1, 15), {"checkout_funnel": "f"})

    (prefix,) = tree.children
    assert (prefix.name, prefix.note) == ("checkout_funnel/", "written by task f")
    (table,) = prefix.children
    assert [(node.name, node.kind) for node in table.children] == [
        ("dt=2024-01-14/funnel.parquet", "look_back"),
        ("dt=2024-01-15/funnel.parquet", "own_day"),
    ]
    assert table.children[1].note.startswith("3 rows, ")
    assert layout_diagram.count_files(tree) == 2
