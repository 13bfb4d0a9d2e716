"""No silent timezone in reports: when none is set, the report's date-times are read as UTC and
the run says so once, with what the answers showed about the platform's clock.

The evidence is the rule of :mod:`~airflow_provider_analytics.core.report_clock`: a
``reportUpdateTime`` later than its answer's ``Date`` shows a clock ahead of UTC. It is told,
not used: it bounds the offset from below and says nothing of summer time, so the times are
still read as UTC until the project's timezone is set.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import TYPE_CHECKING, Final

from airflow_provider_analytics.core.report_clock import ClockLead, clock_lead

if TYPE_CHECKING:
    from airflow_provider_analytics.client.api import AnalysisAnswer

log = logging.getLogger(__name__)

UNSET_TIMEZONE: Final = (
    "no timezone is set (connection extra 'timezone', or the operator's 'timezone')"
)


def _hours(lead: dt.timedelta) -> str:
    minutes = int(lead.total_seconds() // 60)
    return f"{minutes // 60} h {minutes % 60} min"


class UnsetTimezone:
    """Watches the answers of one report run without a timezone, and warns once.

    :param report: the report's name (``funnel``, ``events``), for the message.
    """

    def __init__(self, report: str) -> None:
        self.report = report
        self.evidence: ClockLead | None = None

    def observe(self, answer: AnalysisAnswer) -> None:
        """Read one answer's ``reportUpdateTime`` against its ``Date`` (the first lead found
        is kept)."""
        if self.evidence is None:
            self.evidence = clock_lead(answer.answer.reportUpdateTime, answer.sent_at)

    def warn(self) -> None:
        """Log the warning: with the evidence when an answer showed a clock ahead of UTC."""
        read_as_utc = (
            f"{UNSET_TIMEZONE}: the {self.report} report's date-times (report_updated_at) are "
            "read as UTC"
        )
        found = self.evidence
        if found is None:
            log.warning(
                "%s. A platform in another zone writes its local time (Asia/Shanghai: 8 hours "
                "ahead), and they would be off by that much; the answers' reportUpdateTime "
                "showed no clock ahead of UTC. Set the project's timezone to read them exactly",
                read_as_utc,
            )
            return
        log.warning(
            "%s, but the platform's clock runs ahead of UTC: reportUpdateTime %s is %s after "
            "the answer's Date header (%s UTC), and a report is not updated after it is sent. "
            "The project's zone is about UTC%s or further ahead (Asia/Shanghai is UTC+08:00), "
            "and every date-time read as UTC is off by that much. Set the project's timezone "
            "(an IANA name such as Asia/Shanghai) to read them exactly",
            read_as_utc,
            found.report_time,
            _hours(found.lead),
            found.sent_at.strftime("%Y-%m-%d %H:%M:%S"),
            found.rounded,
        )
