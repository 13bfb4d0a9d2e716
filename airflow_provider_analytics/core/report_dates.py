"""Dates as analysis answers write them: ``series`` entries, funnel ``dateList`` entries and
``reportUpdateTime``, and the moment an answer was sent (its ``Date`` header).

Shared by the declared answers (which check that dates are real, unique and inside the
asked range) and the report tables (which place numbers on those days), so both read a
label the same way.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from email.utils import parsedate_to_datetime
from typing import Final

from airflow_provider_analytics.core.errors import AnalyticsProtocolError


class ReportDateError(AnalyticsProtocolError, ValueError):
    """A date label of an analysis answer in no accepted form; the message names it."""


ALL_DATES_LABEL: Final = "$ALL"
"""The funnel's ``dateList`` entry holding the result over the whole date range."""

_REPORT_DATETIME_FORMATS: Final = (
    (re.compile(r"\d{4}-\d{2}-\d{2}"), "%Y-%m-%d"),
    (re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}"), "%Y-%m-%d %H:%M"),
    (re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}"), "%Y-%m-%d %H:%M:%S"),
    (re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{1,6}"), "%Y-%m-%d %H:%M:%S.%f"),
    (re.compile(r"\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}"), "%Y/%m/%d %H:%M:%S"),
)
ACCEPTED_DATETIME_FORMATS: Final = (
    "yyyy-MM-dd, yyyy-MM-dd HH:mm, yyyy-MM-dd HH:mm:ss, yyyy-MM-dd HH:mm:ss.SSS, "
    "yyyy/MM/dd HH:mm:ss"
)
"""The forms spec 2.5 gives for date-times, the funnel examples' slashed form, and minutes."""


def parse_report_datetime(text: object, *, what: str) -> datetime:
    """Parse a date or date-time as analysis responses write them.

    Accepted: :data:`ACCEPTED_DATETIME_FORMATS` (spec 2.5's three, with or without
    milliseconds, and ``yyyy/MM/dd HH:mm:ss``, the funnel examples' form). Anything else is
    refused rather than guessed, because a misread date silently moves numbers to the wrong day.

    :param text: the label from the response.
    :param what: what the label is (e.g. ``"funnel dateList[2]"``), for the error message.
    :raises ValueError: naming ``what`` and the value when it is not in an accepted format.
    """
    if isinstance(text, str):
        for pattern, fmt in _REPORT_DATETIME_FORMATS:
            if pattern.fullmatch(text):
                try:
                    return datetime.strptime(text, fmt)
                except ValueError:
                    break
    raise ReportDateError(
        f"{what} {shown_label(text)} is not a date in one of the accepted formats: "
        f"{ACCEPTED_DATETIME_FORMATS}"
    )


def shown_label(text: object) -> str:
    shown = repr(text) if isinstance(text, str | int | float | None) else type(text).__name__
    return shown if len(shown) <= 80 else shown[:77] + "..."


def parse_funnel_date(text: object, *, what: str) -> date:
    """Parse a funnel ``dateList`` entry (other than ``$ALL``) into a calendar date.

    A funnel column is a whole day, so a time of day other than midnight means the label
    was not understood; it is refused instead of being truncated.

    :param text: the label, e.g. ``2019/06/17 00:00:00`` or ``2019-06-17``.
    :param what: where the label sits, for the error message.
    :raises ValueError: when the label is not a date or carries a time other than 00:00:00.
    """
    moment = parse_report_datetime(text, what=what)
    if moment.time() != datetime.min.time():
        raise ReportDateError(
            f"{what} {shown_label(text)} is not a whole day: its time of day is not 00:00:00"
        )
    return moment.date()


def sent_at(date_header: str | None) -> datetime | None:
    """An HTTP ``Date`` header (``Wed, 01 May 2024 08:00:01 GMT``) as a UTC datetime; ``None``
    when it is missing or unreadable (then there is no evidence, never an error)."""
    if not date_header:
        return None
    try:
        moment = parsedate_to_datetime(date_header)
    except (TypeError, ValueError, IndexError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)
