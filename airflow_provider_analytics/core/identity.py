"""What a table holds: the identity of each run's rows, so many writers can share one table.

A cohort table holds cohorts, and its rows carry ``cohort_code``; a report table holds reports,
and its rows carry ``report_key``. A run replaces exactly its own (identity, day): two cohorts
exported to one table on one day both stay, and so do two funnels with different steps.

The report key is a stable name the user gives (``checkout_funnel``), or else a digest of the
request without its dates (``funnel_1f3a9c0e2b7d``): the same request gets the same key on
every day and in every look-back, and a request with other steps, filters or splits gets
another one. The digest covers the request as sent, so reordering the keys of a request does
not change it, and changing any value does.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from airflow_provider_analytics.core import rules

if TYPE_CHECKING:
    from collections.abc import Mapping

COHORT_COLUMN: Final = "cohort_code"
"""The column a cohort table names each row's cohort in."""

REPORT_COLUMN: Final = "report_key"
"""The column a report table names each row's report in."""

IDENTITY_METADATA_KEY: Final = "analytics.identity"
"""Parquet file metadata key holding ``<column>=<value>`` of the rows the object holds."""

COHORT_FILE: Final = "users"
"""The table name of a cohort export (its file is ``users.parquet``)."""

DATE_KEYS: Final = frozenset({"fromDate", "toDate"})
"""Request keys that change from run to run and so stay out of a report's digest."""

REPORT_KEY_RULE: Final = (
    "must be 1 to 64 characters of ASCII letters, digits, '_', '-' and '.', starting with a "
    "letter or a digit (it names the report's rows in a shared table)"
)
_REPORT_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@dataclass(frozen=True)
class Identity:
    """The rows a run writes: ``column`` holds ``value`` in each of them.

    :param column: ``cohort_code`` or ``report_key``.
    :param value: the cohort's code or the report's key.
    """

    column: str
    value: str

    def __str__(self) -> str:
        return f"{self.column}={self.value}"

    @classmethod
    def parse(cls, text: str) -> Identity | None:
        """An identity as :meth:`__str__` writes it, or ``None`` when ``text`` is not one."""
        column, equals, value = text.partition("=")
        if not equals or column not in (COHORT_COLUMN, REPORT_COLUMN) or not value:
            return None
        return cls(column, value)


def cohort_identity(cohort_code: str) -> Identity:
    """The identity of a cohort export's rows (the code is checked by the client's rules)."""
    return Identity(COHORT_COLUMN, cohort_code)


def report_identity(report_name: str, body: Mapping[str, Any], report_key: Any = None) -> Identity:
    """The identity of a report's rows: the key given, or the digest of the request.

    :param report_name: ``funnel`` or ``events``, the digest's prefix.
    :param body: the request as it will be sent (its dates are left out of the digest).
    :param report_key: the user's stable name, checked by :data:`REPORT_KEY_RULE`.
    :raises AnalyticsValidationError: naming ``report_key``.
    """
    if report_key is not None:
        if not isinstance(report_key, str) or not _REPORT_KEY.fullmatch(report_key):
            rules.fail("report_key", REPORT_KEY_RULE, report_key)
        return Identity(REPORT_COLUMN, report_key)
    return Identity(REPORT_COLUMN, f"{report_name}_{request_digest(body)}")


def request_digest(body: Mapping[str, Any]) -> str:
    """Twelve hex digits of SHA-256 over the request without its dates, keys sorted."""
    kept = {key: value for key, value in body.items() if key not in DATE_KEYS}
    text = json.dumps(kept, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:12]
