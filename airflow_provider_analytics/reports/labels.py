"""The label strings analysis responses carry: dates, periods, bucket intervals, expressions.

Funnel and event analyses describe their dimensions with text: date columns such as
``$ALL`` or ``2019/06/17 00:00:00``, split values such as ``-1`` or ``600~800``, measures
such as ``event.$Anything.unique``. These functions turn one label into typed values; the
frame builders call them once per distinct label, never once per output cell.
"""

from __future__ import annotations

import logging
import re
from datetime import datetime
from typing import Final, NamedTuple

from airflow_provider_analytics.core.report_dates import (
    ACCEPTED_DATETIME_FORMATS,
    parse_report_datetime,
    shown_label,
)

log = logging.getLogger(__name__)

OVERALL_BY_VALUE: Final = "-1"
"""The funnel's first ``byValues`` entry, holding the result over all split values."""

UNKNOWN_BUCKET_LABEL: Final = "未知"
"""The split label the platform uses for a bucketed property without a value ("unknown")."""

EVENT_PREFIX: Final = "event."

_NUMBER: Final = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_BUCKET_LABEL: Final = re.compile(rf"\s*(?P<lower>-∞|{_NUMBER})\s*~\s*(?P<upper>\+?∞|{_NUMBER})\s*")

_EVENT_AGGREGATORS: Final = frozenset({"TRIGGER_USER_COUNT", "TOTAL_COUNT", "AVG_COUNT"})
_PROPERTY_AGGREGATORS: Final = frozenset(
    {"REMOVE_DUMPLICATE", "SUM", "AVG", "MAX", "MIN", "AVG_PER"}
)
_DISTINCT_SUFFIX: Final = "UNIQUE"


class BucketBounds(NamedTuple):
    """Bounds of a bucket label; ``None`` marks an open side (or an unknown value)."""

    lower: float | None
    upper: float | None


def optional_report_datetime(text: object, *, what: str) -> datetime | None:
    """A metadata date-time such as ``reportUpdateTime``, which no number depends on.

    Parsed like :func:`parse_report_datetime`; ``None`` (a field left out) stays ``None``. A
    value in no accepted form is not fatal: it is logged as it came (shortened) and ``None``
    is returned, so one odd metadata field never fails a whole report.

    :param text: the field's value.
    :param what: which field, for the log.
    """
    if text is None:
        return None
    try:
        return parse_report_datetime(text, what=what)
    except ValueError:
        log.warning(
            "%s %s is not a date-time in an accepted form (%s); left empty",
            what,
            shown_label(text),
            ACCEPTED_DATETIME_FORMATS,
        )
        return None


def parse_bucket_label(label: str | None) -> BucketBounds | None:
    """Bounds of a bucketed split value such as ``-∞~600``, ``600~800`` or ``800~+∞``.

    :param label: the split value as the response wrote it.
    :return: the bounds (``None`` for an open side); ``BucketBounds(None, None)`` for the
        unknown-value label or a missing value; ``None`` when the label is not a bucket.
    """
    if label is None or label == UNKNOWN_BUCKET_LABEL:
        return BucketBounds(None, None)
    match = _BUCKET_LABEL.fullmatch(label)
    if match is None:
        return None
    lower, upper = match.group("lower"), match.group("upper")
    return BucketBounds(
        None if lower.endswith("∞") else float(lower),
        None if upper.endswith("∞") else float(upper),
    )


def is_bucket_label(label: str | None) -> bool:
    """Whether a split value is an interval label (not the unknown label, not a plain value)."""
    return label is not None and _BUCKET_LABEL.fullmatch(label) is not None


def label_text(value: object) -> str | None:
    """A split value as text: JSON strings unchanged, numbers and booleans as JSON writes them.

    :param value: one ``byValue`` entry; ``None`` stays ``None``.
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def event_id_of(expression: str) -> str:
    """The event id of a step expression: ``event.$startup`` and ``$startup`` give ``$startup``."""
    return expression.removeprefix(EVENT_PREFIX)


def steps_express_matches(steps_express: str, from_step: str, to_step: str) -> bool:
    """Whether a ``stepsExpress`` such as ``$startup~$pageview`` names the given step pair.

    Both the ``event.``-prefixed and the bare form are accepted on either side.

    :param steps_express: the label from ``medianConvertedTime``.
    :param from_step: the expression of the earlier step.
    :param to_step: the expression of the later step.
    """
    left, separator, right = steps_express.partition("~")
    return (
        bool(separator)
        and event_id_of(left.strip()) == event_id_of(from_step)
        and event_id_of(right.strip()) == event_id_of(to_step)
    )


def split_measure_label(label: str) -> tuple[str, str | None]:
    """Best-effort expression and aggregator of an event-analysis measure label.

    The response does not repeat the request's measure strings (``event.$Anything`` with
    TRIGGER_USER_COUNT comes back as ``event.$Anything.unique``). A trailing segment is
    read as an aggregator only where that aggregator fits the expression before it: event
    aggregators after ``event.<id>``, property aggregators after ``event.<id>.<property>``;
    ``unique`` is the distinct count of either. Otherwise the whole label is the expression
    and the aggregator is unknown (``None``).

    :param label: one entry of the response's ``measures``.
    """
    head, dot, suffix = label.rpartition(".")
    if not dot or not head.startswith(EVENT_PREFIX):
        return label, None
    key = suffix.upper()
    segments = head.count(".") + 1
    if segments == 2:
        if key == _DISTINCT_SUFFIX:
            return head, "TRIGGER_USER_COUNT"
        if key in _EVENT_AGGREGATORS:
            return head, key
    if segments == 3:
        if key == _DISTINCT_SUFFIX:
            return head, "REMOVE_DUMPLICATE"
        if key in _PROPERTY_AGGREGATORS:
            return head, key
    return label, None


def column_slug(expression: str) -> str:
    """Column-safe slug of an expression: ``event.purchase.$city`` -> ``event_purchase_city``.

    Every run of characters other than ASCII letters and digits becomes one underscore, so
    the result is a safe column name in every warehouse; it may be empty.
    """
    return re.sub(r"[^0-9a-z]+", "_", expression.lower()).strip("_")
