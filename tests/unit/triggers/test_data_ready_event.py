"""The days a data-ready watcher announced are read back from its asset's state store through
their declared shape: a stored value of any other shape is refused by name, never filtered."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_analytics.core.errors import AnalyticsValidationError
from airflow_provider_analytics.triggers.data_ready_event import AnalyticsDataReadyEventTrigger

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

KEY = "analytics.data_ready.announced:purchase:4"


class StateStore:
    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values

    async def aget(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    async def aset(self, key: str, value: Any) -> None:
        self.values[key] = value


async def no_answers() -> AsyncIterator[Any]:
    return
    yield


def read_back(stored: Any) -> list[Any]:
    trigger = AnalyticsDataReadyEventTrigger(event="purchase", threshold=4)
    trigger.asset_state_store = StateStore({KEY: stored})  # type: ignore[assignment]

    async def main() -> list[Any]:
        return [event async for event in trigger.filter_shared_stream(no_answers())]

    return asyncio.run(main())


@pytest.mark.parametrize("stored", [None, [], ["2024-01-10", "2024-01-11"]])
def test_days_stored_as_the_trigger_writes_them_are_read_back(stored: Any) -> None:
    assert read_back(stored) == []


@pytest.mark.parametrize(
    ("stored", "message"),
    [
        (["2024-01-10", 5], rf"^asset state {KEY}\[1\]: must be a date written yyyy-MM-dd"),
        (["2024-02-30"], rf"^asset state {KEY}\[0\]: must be a date that exists on the calendar"),
        ("2024-01-10", rf"^asset state {KEY}: Input should be a valid list"),
        ({"2024-01-10": True}, rf"^asset state {KEY}: Input should be a valid list"),
    ],
)
def test_a_stored_value_of_another_shape_is_refused_naming_the_key(
    stored: Any, message: str
) -> None:
    with pytest.raises(AnalyticsValidationError, match=message):
        read_back(stored)


def test_a_date_object_is_kept_as_the_text_that_survives_serialization() -> None:
    """``first_day=date(...)`` was accepted, then failed the window with a bare TypeError
    (``fromisoformat`` of a date) and came back from serialization as another value."""
    import datetime as dt

    trigger = AnalyticsDataReadyEventTrigger(
        first_day=dt.date(2024, 1, 10), last_day=dt.date(2024, 1, 12)
    )
    kwargs = trigger.serialize()[1]
    assert (kwargs["first_day"], kwargs["last_day"]) == ("2024-01-10", "2024-01-12")
    assert AnalyticsDataReadyEventTrigger(**kwargs).serialize()[1] == kwargs


@pytest.mark.parametrize("timeout", [1e11, 1e300, 10**15])
def test_a_timeout_no_calendar_holds_is_refused_by_name(timeout: float) -> None:
    """The watched window starts ``timeout`` before now: beyond year 1 it raised a bare
    OverflowError in the triggerer."""
    with pytest.raises(AnalyticsValidationError, match=r"^timeout: must be at most"):
        AnalyticsDataReadyEventTrigger(timeout=timeout)
