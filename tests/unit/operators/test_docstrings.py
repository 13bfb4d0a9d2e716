"""Every public operator and sensor documents each of its parameters on its own class."""

from __future__ import annotations

import importlib
import inspect

import pytest
from airflow.sdk import BaseOperator

from airflow_provider_analytics import get_provider_info

PACKAGE = "airflow_provider_analytics"


def _public_operators() -> list[type[BaseOperator]]:
    info = get_provider_info()
    found = []
    for key in ("operators", "sensors"):
        for entry in info[key]:
            for name in entry["python-modules"]:
                module = importlib.import_module(name)
                found += [
                    cls
                    for attr, cls in vars(module).items()
                    if inspect.isclass(cls)
                    and issubclass(cls, BaseOperator)
                    and cls.__module__ == name
                    and not attr.startswith("_")
                ]
    return found


def _own_parameters(cls: type[BaseOperator]) -> set[str]:
    """Keyword parameters the provider's classes in the MRO add (not BaseOperator's)."""
    names: set[str] = set()
    for klass in cls.__mro__:
        if klass.__module__.startswith(PACKAGE) and "__init__" in vars(klass):
            names |= set(inspect.signature(klass.__init__).parameters) - {"self", "kwargs"}
    return names


OPERATORS = _public_operators()


def test_every_operator_of_the_provider_info_is_checked() -> None:
    assert len(OPERATORS) == 14


@pytest.mark.parametrize("cls", OPERATORS, ids=lambda cls: cls.__name__)
def test_each_parameter_has_a_param_line(cls: type[BaseOperator]) -> None:
    doc = inspect.getdoc(cls) or ""
    missing = sorted(name for name in _own_parameters(cls) if f":param {name}:" not in doc)
    assert not missing, f"{cls.__name__} does not document {missing}"
    # every operator but the Iceberg maintenance (which never calls the platform) takes the
    # platform's connection
    connection = (
        "iceberg_conn_id" if cls.__name__ == "IcebergMaintenanceOperator" else ("analytics_conn_id")
    )
    assert connection in _own_parameters(cls)
