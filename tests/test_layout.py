"""Tests follow the rooms (issue 31, item 9): every module of the package that holds logic is
imported by at least one test module, directly or through the public entry that re-exports it;
and a module's tests are where a reader looks for them, ``tests/unit/<room>/`` and
``tests/integration/<room>/`` (see docs/development.md), never loose beside the rooms.

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


TOOLS = ("emulator", "devtools")
"""The repository's tools with tests of their own: the emulator's distribution and the
development scripts (packaging, the stack, the ports)."""
TOP_LEVEL = "package"
"""The folder for the tests of the package's own top-level modules (``provider_info``)."""
FIXTURES = "conftest.py"
"""May sit beside the rooms or in one: pytest's fixtures for the folders below it."""
SHARED = {"unit": frozenset[str](), "integration": frozenset({"export_servers.py"})}
"""The helper modules that may sit directly in ``tests/unit`` or ``tests/integration``, shared
by their rooms' tests (``export_servers.py``: the scripted export servers)."""


def rooms(root: Path = ROOT) -> set[str]:
    """The folder names a test folder may have: the package's subpackages, ``package`` for
    its top-level modules, and the tools present in the repository."""
    found = {path.parent.name for path in (root / PACKAGE).glob("*/__init__.py")}
    return found | {TOP_LEVEL} | {tool for tool in TOOLS if (root / tool).is_dir()}


def misplaced_tests(tests: Path, known_rooms: set[str]) -> list[str]:
    """The Python files under ``tests/unit`` and ``tests/integration`` that are not in the folder
    of a room, or sit loose beside the rooms without being a shared file, in order."""
    found = []
    for kind, shared in SHARED.items():
        for path in sorted((tests / kind).rglob("*.py")):
            parts = path.relative_to(tests / kind).parts
            loose = len(parts) == 1
            if loose and parts[0] in shared | {FIXTURES}:
                continue
            if loose:
                found.append(f"{kind}/{parts[0]}: loose; move it to {kind}/<room>/")
            elif parts[0] not in known_rooms:
                found.append(f"{kind}/{'/'.join(parts)}: {parts[0]!r} names no room")
            elif len(parts) > 2:
                found.append(f"{kind}/{'/'.join(parts)}: nested below its room's folder")
    return found


def test_each_test_is_in_the_folder_of_a_room_that_exists() -> None:
    tests = ROOT / "tests"
    for kind, shared in SHARED.items():
        gone = {name for name in shared if not (tests / kind / name).is_file()}
        assert not gone, f"drop {', '.join(sorted(gone))} from SHARED: gone from tests/{kind}"
    assert misplaced_tests(tests, rooms()) == []


def test_the_layout_check_sees_loose_and_misfiled_tests(tmp_path: Path) -> None:
    """The check itself: the rooms are read from the tree, and a loose test, a test in a folder
    that names no room, and one nested deeper are each reported."""
    assert {"core", "client", "export", "output", "operators", "triggers"} <= rooms()
    assert {"package", "emulator", "devtools"} <= rooms()
    kept = ("unit/core/test_a.py", "unit/core/conftest.py", "integration/export_servers.py")
    for name in kept:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).touch()
    assert misplaced_tests(tmp_path, {"core"}) == []
    for name in ("unit/test_b.py", "integration/nowhere/test_c.py", "unit/core/deep/test_d.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).touch()
    assert misplaced_tests(tmp_path, {"core"}) == [
        "unit/core/deep/test_d.py: nested below its room's folder",
        "unit/test_b.py: loose; move it to unit/<room>/",
        "integration/nowhere/test_c.py: 'nowhere' names no room",
    ]
