"""The provider and the emulator are separate distributions: each declares what it imports,
and the emulator imports nothing from the provider (so it can catch the client's mistakes)."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DISTRIBUTIONS = {
    "airflow-provider-analytics": (ROOT / "pyproject.toml", ROOT / "airflow_provider_analytics"),
    "analytics-emulator": (
        ROOT / "emulator" / "pyproject.toml",
        ROOT / "emulator" / "src" / "analytics_emulator",
    ),
}
OWN_PACKAGES = {"airflow_provider_analytics", "analytics_emulator"}


def _top_level_imports(package: Path) -> dict[str, list[str]]:
    """Top-level module name -> files importing it (absolute imports only)."""
    found: dict[str, list[str]] = {}
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                found.setdefault(name.split(".")[0], []).append(path.name)
    return found


def _declared(pyproject: Path) -> set[str]:
    project = tomllib.loads(pyproject.read_text())["project"]
    requirements = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        requirements += extra
    return {
        re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")
        for requirement in requirements
    }


@pytest.mark.parametrize("distribution", sorted(DISTRIBUTIONS))
def test_every_third_party_import_is_declared(distribution: str) -> None:
    pyproject, package = DISTRIBUTIONS[distribution]
    declared = _declared(pyproject)
    providers = importlib.metadata.packages_distributions()
    undeclared = {}
    for module, files in _top_level_imports(package).items():
        if module in sys.stdlib_module_names or module in OWN_PACKAGES:
            continue
        candidates = {name.lower() for name in providers.get(module, [module])}
        if module == "airflow":
            # Airflow's providers share the namespace; the core is what must be declared.
            candidates = {"apache-airflow"} | {
                d for d in declared if d.startswith("apache-airflow-providers-")
            }
        if not candidates & declared:
            undeclared[module] = sorted(set(files))
    assert undeclared == {}, f"{distribution} imports undeclared packages: {undeclared}"


def test_the_emulator_imports_nothing_from_the_provider() -> None:
    _, package = DISTRIBUTIONS["analytics-emulator"]
    imports = _top_level_imports(package)
    assert "airflow_provider_analytics" not in imports
    assert "airflow" not in imports


def test_the_provider_imports_nothing_from_the_emulator() -> None:
    _, package = DISTRIBUTIONS["airflow-provider-analytics"]
    assert "analytics_emulator" not in _top_level_imports(package)
