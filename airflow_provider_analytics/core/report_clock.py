"""What an analysis answer's ``reportUpdateTime`` tells about the project's time zone.

``reportUpdateTime`` is written ``yyyy-MM-dd HH:mm:ss`` on the project's clock, with no offset
(spec 4.16/4.17, ``API_NOTES.md``), so on its own it cannot tell the zone. Beside the
answer's ``Date`` header (the moment the platform sent it, in UTC) it can tell one thing for
certain: a report is updated before it is sent, never after, so a ``reportUpdateTime`` that,
read as UTC, lies later than ``Date`` shows a clock that runs ahead of UTC by at least that
lead. An earlier one shows nothing: the report may come from the platform's cache, or the
zone may be behind UTC.

The rule, :func:`clock_lead`: read as UTC, ``reportUpdateTime`` more than
:data:`CLOCK_TOLERANCE` after ``Date`` is a lead; anything else is no evidence. The lead is
a lower bound of the project's offset, not the offset (a cached report shows less, and an
offset says nothing of summer time), so it is reported, never used to read times.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Final

from airflow_provider_analytics.core.report_dates import ReportDateError, parse_report_datetime

CLOCK_TOLERANCE: Final = dt.timedelta(minutes=15)
"""How far ``reportUpdateTime`` may lie after ``Date`` before it counts as a lead: room for
clocks of different machines that disagree by minutes."""


@dataclass(frozen=True)
class ClockLead:
    """Evidence that the project's clock runs ahead of UTC.

    :param report_time: ``reportUpdateTime`` as the platform wrote it.
    :param sent_at: the answer's ``Date``, in UTC.
    :param lead: ``report_time`` read as UTC, minus ``sent_at``.
    """

    report_time: str
    sent_at: dt.datetime
    lead: dt.timedelta

    @property
    def rounded(self) -> str:
        """The lead to the nearest quarter hour, as ``+08:00``."""
        quarters = round(self.lead / dt.timedelta(minutes=15))
        hours, minutes = divmod(quarters * 15, 60)
        return f"+{hours:02d}:{minutes:02d}"


def sent_at(date_header: str | None) -> dt.datetime | None:
    """An HTTP ``Date`` header (``Wed, 01 May 2024 08:00:01 GMT``) as a UTC datetime; ``None``
    when it is missing or unreadable (then there is no evidence, never an error)."""
    if not date_header:
        return None
    try:
        moment = parsedate_to_datetime(date_header)
    except (TypeError, ValueError, IndexError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.astimezone(dt.UTC)


def clock_lead(report_update_time: object, sent: dt.datetime | None) -> ClockLead | None:
    """The lead ``reportUpdateTime`` shows over the answer's ``Date``, if it is evidence.

    :param report_update_time: the answer's ``reportUpdateTime`` (any value; one in no
        accepted form is no evidence).
    :param sent: the answer's ``Date`` (:func:`sent_at`).
    """
    if sent is None or not isinstance(report_update_time, str):
        return None
    try:
        written = parse_report_datetime(report_update_time, what="reportUpdateTime")
    except ReportDateError:
        return None
    lead = written.replace(tzinfo=dt.UTC) - sent
    if lead <= CLOCK_TOLERANCE:
        return None
    return ClockLead(report_update_time, sent, lead)
