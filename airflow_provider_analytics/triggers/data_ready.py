"""AnalyticsDataReadyTrigger: the data-ready check, polled asynchronously in the triggerer."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_provider_analytics.client.data_ready import DataReadyCheck
from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.errors import is_transient
from airflow_provider_analytics.core.redaction import Redactor
from airflow_provider_analytics.hooks.analytics import AnalyticsHook, client_config_from_connection

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

log = logging.getLogger(__name__)


class AnalyticsDataReadyTrigger(BaseTrigger):
    """Poll the platform until the data for a date range has landed; then fire one event:
    ``{"status": "success", "detail": {...}}``, or ``"timeout"`` or ``"error"`` with a
    ``message``. Transient failures are logged and polled through; others end the wait at once.
    It keeps the sensor's timeout itself (``deadline``), whatever runs it.

    :param analytics_conn_id: id of the ``analytics`` connection.
    :param check: :meth:`DataReadyCheck.as_dict` of the check to run.
    :param poke_interval: seconds between checks.
    :param deadline: when to give up, in seconds since the epoch (``time.time()``); ``None``
        waits as long as the triggerer keeps the trigger.
    """

    def __init__(
        self,
        analytics_conn_id: str,
        check: dict[str, Any],
        poke_interval: float,
        deadline: float | None = None,
    ) -> None:
        super().__init__()
        rules.positive(poke_interval, "poke_interval")  # 0 polled in a tight loop
        self.analytics_conn_id = analytics_conn_id
        self.check = check
        self.poke_interval = poke_interval
        self.deadline = deadline

    def serialize(self) -> tuple[str, dict[str, Any]]:
        names = ("analytics_conn_id", "check", "poke_interval", "deadline")
        path = f"{type(self).__module__}.{type(self).__qualname__}"
        return path, {name: getattr(self, name) for name in names}

    async def run(self) -> AsyncIterator[TriggerEvent]:
        # httpx loads here, in the triggerer, never when a DAG file is parsed
        from airflow_provider_analytics.client.async_api import AsyncAnalyticsClient

        try:
            check = DataReadyCheck(**self.check)
            connection = await AnalyticsHook.aget_connection(self.analytics_conn_id)
            config = client_config_from_connection(connection)
        except Exception as error:  # a bad check or connection can never succeed
            yield TriggerEvent({"status": "error", "message": Redactor().excerpt(error)})
            return
        shown = Redactor(config.secrets()).excerpt
        async with AsyncAnalyticsClient(config) as client:
            while True:
                if self._left() <= 0:
                    days = f"{self.check.get('from_date')}..{self.check.get('to_date')}"
                    message = f"the data for {days} had not landed by the sensor's timeout"
                    yield TriggerEvent({"status": "timeout", "message": message})
                    return
                try:
                    readiness = check.evaluate(await client.request_json(check.call()))
                except Exception as error:
                    if not is_transient(error):  # the error says waiting cannot help
                        yield TriggerEvent({"status": "error", "message": shown(error)})
                        return
                    log.warning("data-ready check failed transiently, polling on: %s", shown(error))
                else:
                    if readiness.ready:
                        yield TriggerEvent({"status": "success", "detail": readiness.detail})
                        return
                    log.info("data not ready yet: %s", readiness.detail)
                await asyncio.sleep(max(0.0, min(self.poke_interval, self._left())))

    def _left(self) -> float:
        """Seconds until the deadline (infinite without one)."""
        return float("inf") if self.deadline is None else self.deadline - time.time()
