"""Dates as analysis answers write them (``series``, funnel ``dateList``, ``reportUpdateTime``)
and the moment an answer was sent (its ``Date`` header): the declared answers and the report
tables read a label the same way.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from email.utils import parsedate_to_datetime
from typing import Final

from airflow_provider_analytics.core.errors import AnalyticsProtocolError, bounded_repr


class ReportDateError(AnalyticsProtocolError, ValueError):
    """A date label of an analysis answer in no accepted form; the message names it."""


ALL_DATES_LABEL: Final = "$ALL"  # the funnel's dateList entry over the whole range

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
"""Spec 2.5's forms, the funnel examples' slashed form, and minutes."""


def parse_report_datetime(text: object, *, what: str) -> datetime:
    """A label in one of :data:`ACCEPTED_DATETIME_FORMATS`; anything else is refused naming
    ``what`` (``funnel dateList[2]``), not guessed: a misread date moves numbers to another day."""
    if isinstance(text, str) and text.isascii():  # strptime reads "２０２４" as 2024
        for pattern, fmt in _REPORT_DATETIME_FORMATS:
            if pattern.fullmatch(text):
                try:
                    return datetime.strptime(text, fmt)
                except ValueError:
                    break
    raise ReportDateError(
        f"{what} {bounded_repr(text)} is not a date in one of the accepted formats: "
        f"{ACCEPTED_DATETIME_FORMATS}"
    )


def parse_funnel_date(text: object, *, what: str) -> date:
    """A funnel ``dateList`` entry (not ``$ALL``) as a date; a time other than midnight means
    the label was not understood, and is refused rather than truncated."""
    moment = parse_report_datetime(text, what=what)
    if moment.time() != datetime.min.time():
        raise ReportDateError(
            f"{what} {bounded_repr(text)} is not a whole day: its time of day is not 00:00:00"
        )
    return moment.date()


def sent_at(date_header: str | None) -> datetime | None:
    """An HTTP ``Date`` header (``Wed, 01 May 2024 08:00:01 GMT``) as a UTC datetime; ``None``
    when it is missing or unreadable (then there is no evidence, never an error)."""
    if not date_header:
        return None
    try:
        moment = parsedate_to_datetime(date_header)
        return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)
    except (TypeError, ValueError, IndexError, OverflowError):  # 31 Dec 9999 -0200: year 10000
        return None
