"""What Airflow hands an operator's ``execute`` for a daily run, for tests that call it
directly."""

from __future__ import annotations

import datetime as dt
from typing import Any


class OutletEvents(dict):  # type: ignore[type-arg]
    """``context["outlet_events"]``: any outlet gets an object with an ``extra`` slot."""

    def __missing__(self, key: Any) -> Any:
        value = type("AssetEvent", (), {"extra": None})()
        self[key] = value
        return value


def run_context(day: str) -> dict[str, Any]:
    """The context of the daily run of ``day`` (``yyyy-MM-dd``, UTC)."""
    start = dt.datetime.fromisoformat(day).replace(tzinfo=dt.UTC)
    return {
        "ds": day,
        "logical_date": start,
        "data_interval_start": start,
        "data_interval_end": start + dt.timedelta(days=1),
        "outlet_events": OutletEvents(),
    }
