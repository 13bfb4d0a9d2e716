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

PROVIDER = REPO / "airflow_provider_analytics"
EMULATOR = REPO / "emulator" / "src" / "analytics_emulator"


def test_imports_only_point_down_and_only_the_surface_and_output_import_airflow() -> None:
    """Output speaks ``ObjectStoragePath`` (the Airflow SDK's object storage); the client, the
    jobs and the core run in a plain Python process."""
    layers = layers_diagram.read_layers(PROVIDER)
    names = [name for name, _ in layers_diagram.LAYERS]
    surface, output = names.index("Airflow surface"), names.index("Output")

    assert layers.upward == []
    assert layers.edges, "no imports between layers were found"
    assert layers.airflow[surface]
    importing = {layer for layer, modules in layers.airflow.items() if modules}
    assert importing <= {surface, output}


def test_every_module_of_the_provider_is_in_a_layer() -> None:
    """A module outside every layer would escape the check above; only the package's own
    ``__init__`` and its entry point's table may."""
    graph = layers_diagram.read_modules(PROVIDER)
    outside = sorted(m for m in graph.imports if layers_diagram.layer_of(m) is None)

    assert outside == [
        "airflow_provider_analytics",
        "airflow_provider_analytics.provider_info",
    ]


@pytest.mark.parametrize("typing", [False, True], ids=["at run time", "for a type checker"])
def test_the_provider_has_no_import_circle_between_modules_or_folders(typing: bool) -> None:
    """No circle between modules, counting imports only a type checker follows too, and none
    between the package's folders (``hooks`` importing ``operators`` and back)."""
    graph = layers_diagram.read_modules(PROVIDER, typing=typing)
    folders: dict[str, set[str]] = {}
    for module, imported in graph.imports.items():
        folder = module.split(".")[1] if module.count(".") else module
        for other in imported:
            target = other.split(".")[1] if other.count(".") else other
            if target != folder:
                folders.setdefault(folder, set()).add(target)

    assert layers_diagram.cycles(graph.imports) == []
    assert layers_diagram.cycles(folders) == []


def test_the_emulator_has_no_import_circle_and_no_import_of_its_own_facade() -> None:
    """The emulator has no layers of its own, so the rule is the plain one: no circle between
    its modules, and none reads a name from ``analytics_emulator/__init__.py`` (the facade that
    users import from), which would put the facade under the modules behind it. It holds even
    counting the imports made only for type checking."""
    graph = layers_diagram.read_modules(EMULATOR)

    assert len(graph.imports) > 30
    assert sum(map(len, graph.imports.values())) > 60, "no imports between modules were found"
    assert layers_diagram.cycles(graph.imports) == []
    assert graph.upward == []
    with_types = layers_diagram.read_modules(EMULATOR, typing=True)
    assert layers_diagram.cycles(with_types.imports) == [], "a circle through type-only imports"


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


def test_the_layers_are_data(tmp_path: Path) -> None:
    """The same reader judges any stack of layers it is given (the re-layout changes only the
    tuple)."""
    package = tmp_path / "pkg"
    (package / "low").mkdir(parents=True)
    (package / "high.py").write_text("from pkg.low import base\n")
    (package / "low" / "base.py").write_text("def f():\n    import pkg.high\n")

    layers = layers_diagram.read_layers(package, (("High", ("high",)), ("Low", ("low",))))

    assert layers.modules == {0: ["high"], 1: ["low.base"]}
    assert layers.upward == [(1, 0)]
    assert "High: high" in layers_diagram.render(layers)


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / next(iter(files)).split("/")[0]


def test_an_import_circle_is_found(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from . import b\n",
            # relative, two levels, and inside a function: a deferred import still counts
            "pkg/sub/__init__.py": "",
            "pkg/sub/c.py": "def f():\n    from ..a import NAME\n",
            "pkg/b.py": "from pkg.sub import c\n",
            # a circle only through type checking is no circle at run time
            "pkg/d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.e\n",
            "pkg/e.py": "import pkg.d\n",
        },
    )

    graph = layers_diagram.read_modules(package)

    assert graph.imports["pkg.sub.c"] == {"pkg.a"}
    assert graph.imports["pkg.b"] == {"pkg.sub", "pkg.sub.c"}
    assert graph.imports["pkg.d"] == set()
    assert layers_diagram.cycles(graph.imports) == [["pkg.a", "pkg.b", "pkg.sub.c"]]
    with_types = layers_diagram.read_modules(package, typing=True)
    assert layers_diagram.cycles(with_types.imports) == [
        ["pkg.a", "pkg.b", "pkg.sub.c"],
        ["pkg.d", "pkg.e"],
    ]


def test_a_name_read_from_the_package_facade_is_an_import_of_its_init(tmp_path: Path) -> None:
    """``from pkg import Server`` needs ``pkg/__init__.py`` run to its end; when that
    ``__init__`` (even lazily, in a module ``__getattr__``) imports the module, the two form a
    circle. ``from pkg import config`` only needs the sibling module, and is no circle."""
    package = _package(
        tmp_path,
        {
            "pkg/__init__.py": (
                "def __getattr__(name):\n    from pkg import server\n"
                "    return getattr(server, name)\n"
            ),
            "pkg/server.py": "from pkg import config\nfrom . import helpers\n",
            "pkg/config.py": "CONFIG = 1\n",
            "pkg/helpers.py": "from pkg import Server\n",
        },
    )

    graph = layers_diagram.read_modules(package)

    assert graph.imports["pkg"] == {"pkg.server"}
    assert graph.imports["pkg.server"] == {"pkg.config", "pkg.helpers"}
    assert graph.imports["pkg.helpers"] == {"pkg"}
    assert graph.upward == [("pkg.helpers", "pkg")]
    assert layers_diagram.cycles(graph.imports) == [["pkg", "pkg.helpers", "pkg.server"]]


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
