"""AnalyticsDataSensor: wait until the platform holds the data for the days the run covers."""

from __future__ import annotations

import datetime as dt
import time
from typing import TYPE_CHECKING, Any, NoReturn

from airflow.sdk import BaseSensorOperator, PokeReturnValue, conf
from airflow.sdk.exceptions import AirflowFailException, AirflowSensorTimeout, AirflowSkipException

from airflow_provider_analytics.client.data_ready import DataReadyCheck
from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.errors import is_transient
from airflow_provider_analytics.operators.base import AnalyticsBaseOperator
from airflow_provider_analytics.operators.intervals import covered_days

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow.sdk import Context


class AnalyticsDataSensor(BaseSensorOperator, AnalyticsBaseOperator):
    """Wait until the platform holds data for every day the run covers (the day rule): each
    day's TOTAL_COUNT of ``event`` reaches ``threshold``, or with ``source="plan"`` the tracking
    plan shows ``dataStatus`` = 1 for ``event`` (or ``event_property``). Transient errors are
    waited through; others fail at once (skip with ``soft_fail``). Poke, reschedule, deferrable.

    :param event: event id; ``$Anything`` (default) is any event (templated).
    :param threshold: events needed on each day (templated).
    :param source: ``events`` or ``plan``.
    :param event_property: with ``source="plan"``, a property of ``event`` that must have data.
    :param from_date: first day, default the first day the run covers (templated).
    :param to_date: last day, default the last day the run covers (templated).
    :param deferrable: wait in the triggerer instead of a worker slot.
    """

    template_fields: Sequence[str] = (
        "analytics_conn_id",
        "event",
        "threshold",
        "event_property",
        "from_date",
        "to_date",
    )
    ui_color = "#e0e7f5"

    def __init__(
        self,
        *,
        event: str = "$Anything",
        threshold: float = 1,
        source: str = "events",
        event_property: str | None = None,
        from_date: str | None = None,
        to_date: str | None = None,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.event = event
        self.threshold = threshold
        self.source = source
        self.event_property = event_property
        self.from_date = from_date
        self.to_date = to_date
        self.deferrable = deferrable

    def data_check(self, context: Context) -> DataReadyCheck:
        """The check for this run (validated: a bad argument fails before any request)."""
        first, last = covered_days(context).dates
        return DataReadyCheck(  # each rendered value checked as it is ("5" refused, not coerced)
            from_date=first if self.from_date is None else self.from_date,  # "" is refused
            to_date=last if self.to_date is None else self.to_date,
            event=self.event,
            threshold=self.threshold,
            source=self.source,  # type: ignore[arg-type]
            event_property=self.event_property,
        )

    def _fail(self, message: str, error: type[Exception] = AirflowFailException) -> NoReturn:
        raise (AirflowSkipException if self.soft_fail else error)(message)

    def poke(self, context: Context) -> PokeReturnValue:
        try:
            check = self.data_check(context)
            readiness = check.evaluate(self.hook.get_conn().request_json(check.call()))
        except Exception as error:
            if not is_transient(error):  # auth, bad request, bad arguments: waiting cannot help
                self._fail(f"data-ready check cannot succeed: {error}")
            self.log.warning("data-ready check failed transiently, will poke again: %s", error)
            return PokeReturnValue(is_done=False)
        self.log.info("data ready: %s; %s", readiness.ready, readiness.detail)
        return PokeReturnValue(is_done=readiness.ready, xcom_value=readiness.detail)

    def execute(self, context: Context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        from airflow_provider_analytics.triggers.data_ready_event import TIMEOUT_MAX

        if float(self.timeout) > TIMEOUT_MAX:  # no deadline a calendar holds (OverflowError)
            rules.fail("timeout", f"must be at most {TIMEOUT_MAX:.0f} s to defer", self.timeout)
        poke_interval = rules.positive(float(self.poke_interval), "poke_interval")  # the trigger's
        first = self.poke(context)
        if first.is_done:
            return first.xcom_value
        from airflow_provider_analytics.triggers.data_ready import AnalyticsDataReadyTrigger

        self.defer(
            trigger=AnalyticsDataReadyTrigger(
                analytics_conn_id=self.analytics_conn_id,
                check=self.data_check(context).as_dict(),
                poke_interval=poke_interval,
                deadline=time.time() + float(self.timeout),
            ),
            method_name="execute_complete",
            timeout=dt.timedelta(seconds=float(self.timeout)),
        )

    def execute_complete(self, context: Context, event: Any) -> Any:
        """Resume after the trigger fired: return what it saw, or fail with its reason. The
        event is decoded through its declared shape (``DataReadyFired``): any other is refused
        by name, never read as the data having landed."""
        from airflow_provider_analytics.client.answers import decode

        fired = decode("data_ready_trigger", event)
        if fired.status == "success":
            self.log.info("data ready: %s", fired.detail)
            return fired.detail
        if fired.status == "timeout":
            message = f"data not ready before the sensor's timeout: {fired.message}"
            self._fail(message, AirflowSensorTimeout)
        self._fail(f"data-ready check cannot succeed: {fired.message}")
