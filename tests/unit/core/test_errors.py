"""One exception hierarchy, enforced: every exception class the package defines derives from
``AnalyticsError``, and no package code raises a bare built-in exception, so a user's
``except AnalyticsError`` catches whatever the package raises on purpose. Each error class says
whether it is transient: the one place that decides what the retry engine repeats."""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import pickle
import pkgutil
from pathlib import Path

import pytest

import airflow_provider_analytics
from airflow_provider_analytics.core import errors
from airflow_provider_analytics.core.cohort_records import ExportRecordError
from airflow_provider_analytics.core.errors import (
    AnalyticsError,
    CohortChangedError,
    ExportDataError,
    ExportIncompleteError,
    FailurePhase,
    ShardStagingError,
    is_transient,
)
from airflow_provider_analytics.output.iceberg import IcebergCommitError, IcebergSchemaError

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


def transport(phase: FailurePhase | None) -> errors.AnalyticsTransportError:
    error = errors.AnalyticsTransportError("x")
    error.phase = phase
    return error


TRANSIENT: list[tuple[str, BaseException, bool]] = [
    *(
        (f"HTTP {status}", errors.AnalyticsApiError("x", status=status), status in transient)
        for status, transient in ((s, {429, 500, 502, 503, 504}) for s in (301, 400, 404, 429))
    ),
    ("server 500", errors.AnalyticsServerError("x", status=500), True),
    ("server 502", errors.AnalyticsServerError("x", status=502), True),
    ("server 503", errors.AnalyticsServerError("x", status=503), True),
    ("server 504", errors.AnalyticsServerError("x", status=504), True),
    ("server 505", errors.AnalyticsServerError("x", status=505), False),
    ("rate limit 429", errors.AnalyticsRateLimitError("x", status=429), True),
    ("rate limit, hold-off past the deadline", errors.AnalyticsRateLimitError("x"), True),
    ("bad request", errors.AnalyticsBadRequestError("x", status=400), False),
    ("authentication", errors.AnalyticsAuthenticationError("x", status=401), False),
    ("not found", errors.AnalyticsNotFoundError("x", status=404), False),
    ("media type", errors.AnalyticsUnsupportedMediaTypeError("x", status=415), False),
    ("not completed", errors.AnalyticsNotCompletedError("x", status=501), False),
    ("quota", errors.AnalyticsQuotaExceededError("x", status=501), False),
    ("already exists", errors.AnalyticsAlreadyExistsError("x", status=501), False),
    ("disabled", errors.AnalyticsDisabledError("x", status=501), False),
    ("operation failed", errors.AnalyticsOperationFailedError("x", status=200), False),
    ("could not connect", transport(FailurePhase.CONNECT), True),
    ("dropped after sending", transport(FailurePhase.EXCHANGE), True),
    ("deadline or no turn", transport(None), True),
    ("TLS", transport(FailurePhase.TLS), False),
    ("request not made", transport(FailurePhase.OTHER), False),
    ("stream", errors.AnalyticsStreamError("x"), True),
    ("protocol", errors.AnalyticsProtocolError("x"), True),
    ("export record", ExportRecordError("x"), False),
    ("validation", errors.AnalyticsValidationError("f", "rule"), False),
    ("configuration", errors.AnalyticsConfigurationError("x"), False),
    ("usage", errors.AnalyticsUsageError("x"), False),
    ("base", errors.AnalyticsError("x"), False),
    ("export incomplete", ExportIncompleteError("x"), True),
    ("cohort changed", CohortChangedError("x"), False),
    ("staging record", ShardStagingError("x"), False),
    ("refused value", ExportDataError("x"), False),
    ("iceberg lost race", IcebergCommitError("x"), True),
    ("iceberg schema", IcebergSchemaError("x"), False),
    (
        "look-back in part, lost race",
        errors.ReportWrittenInPartError(["a"], ["b"], IcebergCommitError("x")),
        True,
    ),
    ("look-back in part, storage", errors.ReportWrittenInPartError(["a"], ["b"], OSError()), False),
    ("not ours", ValueError("x"), False),
    ("not ours, claims it", type("Claims", (Exception,), {"transient": True})("x"), False),
]


@pytest.mark.parametrize(
    ("error", "transient"), [(e, t) for _, e, t in TRANSIENT], ids=[n for n, _, _ in TRANSIENT]
)
def test_each_error_says_whether_it_is_transient(error: BaseException, transient: bool) -> None:
    assert is_transient(error) is transient
    if isinstance(error, errors.AnalyticsError):
        assert error.transient is transient


def test_the_answer_survives_pickling() -> None:
    error = pickle.loads(pickle.dumps(transport(FailurePhase.TLS)))
    assert error.phase is FailurePhase.TLS and not error.transient
