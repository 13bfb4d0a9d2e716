"""One exception hierarchy, enforced: every exception class the package defines derives from
``AnalyticsError``, and no package code raises a bare built-in exception, so a user's
``except AnalyticsError`` catches whatever the package raises on purpose."""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import pkgutil
from pathlib import Path

import airflow_provider_analytics
from airflow_provider_analytics.core.errors import AnalyticsError

PACKAGE = Path(airflow_provider_analytics.__file__).parent
PROTOCOL = frozenset({"AttributeError", "StopIteration", "StopAsyncIteration", "GeneratorExit"})
"""Raised to keep a Python protocol (a module's ``__getattr__``, an iterator), not errors."""
BUILT_IN_ERRORS = frozenset(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException) and name not in PROTOCOL
)


def modules() -> list[str]:
    return [
        info.name
        for info in pkgutil.walk_packages([str(PACKAGE)], prefix="airflow_provider_analytics.")
    ]


def test_every_exception_class_of_the_package_is_an_analytics_error() -> None:
    outside = []
    for name in modules():
        module = importlib.import_module(name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            defined_here = value.__module__ == name and issubclass(value, BaseException)
            if defined_here and not issubclass(value, AnalyticsError):
                outside.append(f"{name}.{value.__qualname__}")
    assert len(modules()) > 40
    assert outside == []


def raised_built_ins(source: str) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(target, ast.Name) and target.id in BUILT_IN_ERRORS:
                found.append((node.lineno, target.id))
    return found


def test_no_package_code_raises_a_built_in_exception() -> None:
    raised = [
        f"{path.relative_to(PACKAGE)}:{line}: raise {name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, name in raised_built_ins(path.read_text(encoding="utf-8"))
    ]
    assert raised == []


def test_the_scan_finds_what_it_looks_for() -> None:
    """The check above cannot pass by looking at nothing."""
    source = "raise ValueError('x')\nraise TypeError\nraise KeyError(1)\nraise Custom('y')\n"
    assert raised_built_ins(source) == [(1, "ValueError"), (2, "TypeError"), (3, "KeyError")]
