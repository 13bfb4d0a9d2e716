"""Tests follow the rooms (issue 31, item 9): every module of the package that holds logic is
imported by at least one test module, directly or through the public entry that re-exports it.

What counts, read from the source with :mod:`ast` (nothing of the package runs but the facades
asked which module a re-exported name comes from):

- a module holds logic when it defines a function or a class; ``__init__`` facades, the
  deprecated aliases made by ``_moved.moved_module`` and ``provider_info`` (a table for
  Airflow) are left out;
- a test module (``test_*.py`` under ``tests/``) imports a module by ``import m``,
  ``from m import name``, or ``from package import m``; a name imported from a package's
  facade counts for the module that defines it.
"""

from __future__ import annotations

import ast
import importlib
import warnings
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "airflow_provider_analytics"
SKIPPED = {f"{PACKAGE}.provider_info"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules_with_logic() -> set[str]:
    found = set()
    for path in (ROOT / PACKAGE).rglob("*.py"):
        name = _module_name(path)
        source = path.read_text(encoding="utf-8")
        if path.name == "__init__.py" or name in SKIPPED or "moved_module(" in source:
            continue
        tree = ast.parse(source)
        if any(
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            for node in tree.body
        ):
            found.add(name)
    return found


@cache
def _home_of(package: str, name: str) -> str | None:
    """The module that defines ``name`` re-exported by the facade ``package``, if any."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a deprecated alias warns when it is asked
        try:
            value = getattr(importlib.import_module(package), name)
        except (ImportError, AttributeError):
            return None
    home = getattr(value, "__module__", None)
    return home if isinstance(home, str) else None


def _imported_by(path: Path, packages: set[str]) -> set[str]:
    imported = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imported.add(node.module)
            for alias in node.names:
                imported.add(f"{node.module}.{alias.name}")  # a submodule, when it is one
                if node.module in packages:
                    home = _home_of(node.module, alias.name)
                    if home is not None:
                        imported.add(home)
    return {name for name in imported if name == PACKAGE or name.startswith(f"{PACKAGE}.")}


def modules_no_test_imports() -> list[str]:
    """The package's modules with logic that no test module imports, sorted."""
    packages = {_module_name(path) for path in (ROOT / PACKAGE).rglob("__init__.py")}
    imported: set[str] = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        imported |= _imported_by(path, packages)
    return sorted(_modules_with_logic() - imported)


@pytest.mark.xfail(
    strict=False,
    reason="modules of other rooms may still wait for the tests their rooms are adding",
)
def test_every_module_with_logic_is_imported_by_a_test() -> None:
    missing = modules_no_test_imports()
    print("modules with logic that no test imports:", *missing, sep="\n  ")
    assert not missing, f"no test imports {', '.join(missing)}"


def test_the_check_sees_the_modules_and_the_imports() -> None:
    """The check itself: it finds modules with logic, leaves out facades and aliases, and
    reads a test's imports (a module, a name from it, a name from a facade)."""
    modules = _modules_with_logic()
    assert f"{PACKAGE}.core.identity" in modules
    assert f"{PACKAGE}.client" not in modules  # a facade
    assert f"{PACKAGE}.storage" not in modules  # a deprecated alias
    assert f"{PACKAGE}.provider_info" not in modules
    packages = {_module_name(path) for path in (ROOT / PACKAGE).rglob("__init__.py")}
    imported = _imported_by(Path(__file__), packages)
    assert imported == set()  # this module imports nothing of the package
    here = ROOT / "tests" / "unit" / "core" / "test_identity.py"
    assert f"{PACKAGE}.core.identity" in _imported_by(here, packages)
