"""No silent timezone in reports: without one, the report's date-times are read as UTC and the
run says so once, with what the answers showed about the platform's clock.

``reportUpdateTime`` is the project's wall-clock time with no offset. A report is updated
before it is sent, so one that, read as UTC, lies after the answer's ``Date`` header shows a
clock ahead of UTC by at least that lead (:func:`clock_lead`); an earlier one shows nothing
(a cached report, or a zone behind UTC). The lead is told, never used.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from typing import Final

from airflow_provider_analytics.core.report_dates import ReportDateError, parse_report_datetime

log = logging.getLogger(__name__)

UNSET_TIMEZONE: Final = (
    "no timezone is set (connection extra 'timezone', or the operator's 'timezone')"
)
CLOCK_TOLERANCE: Final = dt.timedelta(minutes=15)
"""How far ``reportUpdateTime`` may lie after ``Date`` before it counts as a lead: room for
clocks of different machines that disagree by minutes."""


@dataclass(frozen=True)
class ClockLead:
    """Evidence that the project's clock runs ahead of UTC: ``reportUpdateTime`` as written,
    the answer's ``Date`` (UTC), and the first read as UTC minus the second."""

    report_time: str
    sent_at: dt.datetime
    lead: dt.timedelta

    @property
    def rounded(self) -> str:
        """The lead to the nearest quarter hour, as ``+08:00``."""
        quarters = round(self.lead / dt.timedelta(minutes=15))
        hours, minutes = divmod(quarters * 15, 60)
        return f"+{hours:02d}:{minutes:02d}"


def clock_lead(report_update_time: object, sent: dt.datetime | None) -> ClockLead | None:
    """The lead ``reportUpdateTime`` (any value) shows over the answer's ``Date``, if it is
    evidence."""
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


def warn_unset_timezone(report: str, evidence: ClockLead | None) -> None:
    """Warn once that a run without a timezone read the ``report``'s date-times as UTC, with
    the first ``evidence`` its answers gave of a clock ahead of UTC."""
    read_as_utc = (
        f"{UNSET_TIMEZONE}: the {report} report's date-times (report_updated_at) are read as UTC"
    )
    if evidence is None:
        log.warning(
            "%s. A platform in another zone writes its local time (Asia/Shanghai: 8 hours "
            "ahead), and they would be off by that much; the answers' reportUpdateTime "
            "showed no clock ahead of UTC. Set the project's timezone to read them exactly",
            read_as_utc,
        )
        return
    log.warning(
        "%s, but the platform's clock runs ahead of UTC: reportUpdateTime %s is %d h %d min "
        "after the answer's Date header (%s UTC), and a report is not updated after it is "
        "sent. The project's zone is about UTC%s or further ahead (Asia/Shanghai is "
        "UTC+08:00), and every date-time read as UTC is off by that much. Set the project's "
        "timezone (an IANA name such as Asia/Shanghai) to read them exactly",
        read_as_utc,
        evidence.report_time,
        *divmod(evidence.lead // dt.timedelta(minutes=1), 60),
        evidence.sent_at.strftime("%Y-%m-%d %H:%M:%S"),
        evidence.rounded,
    )
