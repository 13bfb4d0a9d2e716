"""The data-ready event trigger of asset watchers, polling the emulator over real HTTP: one
event per ready day, none below the threshold, no day twice across a restart (the asset state
store), and one poll for watchers of the same project, event and window (Airflow's own
SharedStreamManager)."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import subprocess
import sys
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import pytest
from airflow.triggers.shared_stream import SharedStreamManager

from airflow_provider_analytics.core.errors import AnalyticsError, AnalyticsValidationError
from airflow_provider_analytics.operators.intervals import announced_days, covered_days
from airflow_provider_analytics.triggers.data_ready_event import (
    AnalyticsDataReadyEventTrigger,
    watched_window,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from analytics_emulator.server import EmulatorServer

    from tests.emulator_helpers import EmulatorAdmin

pytestmark = pytest.mark.integration

SHANGHAI = ZoneInfo("Asia/Shanghai")
DAYS = ("2024-01-10", "2024-01-11", "2024-01-12")


@pytest.fixture
def connection(monkeypatch: pytest.MonkeyPatch, emulator: EmulatorServer) -> None:
    config = emulator.config
    monkeypatch.setenv(
        "AIRFLOW_CONN_ANALYTICS_DEFAULT",
        json.dumps(
            {
                "conn_type": "analytics",
                "host": emulator.base_url,
                "password": config.token,
                "extra": {"app_key": config.app_key, "timezone": "Asia/Shanghai"},
            }
        ),
    )


def events_on(day: str, count: int, event: str = "purchase") -> list[dict[str, Any]]:
    return [
        {"user": n + 1, "event": event, "time": f"{day} 10:{n // 60:02d}:{n % 60:02d}"}
        for n in range(count)
    ]


SINCE_2024 = (
    float(
        (dt.datetime.now(dt.UTC) - dt.datetime(2024, 1, 1, tzinfo=dt.UTC)).total_seconds() // 86_400
        + 2
    )
    * 86_400
)
"""A timeout that keeps January 2024 in the watched window."""


def watcher(threshold: float = 4, **kwargs: Any) -> AnalyticsDataReadyEventTrigger:
    settings: dict[str, Any] = {
        "event": "purchase",
        "threshold": threshold,
        "poke_interval": 0.2,
        "timeout": SINCE_2024,
        "first_day": DAYS[0],
        "last_day": DAYS[-1],
    }
    return AnalyticsDataReadyEventTrigger(**{**settings, **kwargs})


class StateStore:
    """One asset's state store as the triggerer hands it to a watcher (``aget``/``aset``)."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    async def aget(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    async def aset(self, key: str, value: Any) -> None:
        self.values[key] = json.loads(json.dumps(value))


async def take(stream: AsyncIterator[Any], count: int, timeout: float = 20) -> list[dict]:
    """The payloads of the first ``count`` events of ``stream``."""

    async def collect() -> list[dict]:
        found: list[dict] = []
        async for event in stream:
            found.append(dict(event.payload))
            if len(found) == count:
                break
        return found

    return await asyncio.wait_for(collect(), timeout)


async def nothing_within(stream: AsyncIterator[Any], seconds: float) -> None:
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(stream.__anext__(), seconds)


def test_the_window_holds_the_complete_days_still_within_the_timeout() -> None:
    now = dt.datetime(2024, 1, 15, 1, 0, tzinfo=SHANGHAI)  # early on the 15th in Shanghai
    assert watched_window(now, SHANGHAI, 2 * 86_400) == ("2024-01-13", "2024-01-14")
    # the 12th ended at midnight before the 13th: more than 49 hours ago is out
    assert watched_window(now, SHANGHAI, 49 * 3600 + 1) == ("2024-01-12", "2024-01-14")
    # counted in UTC, it is still the 14th: the 14th is not over yet
    assert watched_window(now, dt.UTC, 2 * 86_400) == ("2024-01-12", "2024-01-13")
    assert watched_window(now, SHANGHAI, 86_400, first_day="2024-01-14") == (
        "2024-01-14",
        "2024-01-14",
    )
    assert watched_window(now, SHANGHAI, 86_400, last_day="2024-01-10") is None


def test_bad_settings_are_refused_by_name_when_the_dag_is_parsed() -> None:
    for settings, field in (
        ({"threshold": 0}, "threshold"),
        ({"threshold": "5"}, "threshold"),
        ({"poke_interval": -1}, "poke_interval"),
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"first_day": "2024-01-12", "last_day": "2024-01-10"}, "last_day"),
        ({"event": "bad event"}, "event"),
    ):
        with pytest.raises(AnalyticsValidationError, match=field):
            AnalyticsDataReadyEventTrigger(**settings)


def test_watchers_of_one_project_event_and_window_share_a_key_whatever_their_threshold() -> None:
    assert watcher(4).shared_stream_key() == watcher(100).shared_stream_key()
    assert watcher(4).shared_stream_key() != watcher(4, event="login").shared_stream_key()
    assert watcher(4).shared_stream_key() != watcher(4, last_day=DAYS[1]).shared_stream_key()
    classpath, kwargs = watcher(4).serialize()
    assert type(AnalyticsDataReadyEventTrigger(**kwargs).serialize()[1]) is dict
    assert classpath.endswith("data_ready_event.AnalyticsDataReadyEventTrigger")


def test_one_event_per_ready_day_none_below_the_threshold_and_none_twice_after_a_restart(
    connection: None, emulator_admin: EmulatorAdmin
) -> None:
    emulator_admin.replace_event_log(events_on(DAYS[0], 5) + events_on(DAYS[1], 3))
    store = StateStore()

    async def main() -> None:
        first = watcher()
        first.asset_state_store = store  # type: ignore[assignment]
        stream = first.run().__aiter__()
        (event,) = await take(stream, 1)
        assert event["source"] == "analytics.data_ready"
        assert (event["day"], event["partition_key"], event["count"]) == (DAYS[0], DAYS[0], 5)
        await nothing_within(stream, 1.5)  # the 11th has 3 of 4, the 12th none
        await stream.aclose()  # the triggerer stops

        emulator_admin.add_events(events_on(DAYS[1], 1))  # the 11th reaches 4
        restarted = watcher()
        restarted.asset_state_store = store  # type: ignore[assignment]
        stream = restarted.run().__aiter__()
        (event,) = await take(stream, 1)
        assert (event["day"], event["count"]) == (DAYS[1], 4)  # not the 10th again
        await nothing_within(stream, 1.5)
        await stream.aclose()

    asyncio.run(main())
    assert store.values == {"analytics.data_ready.announced:purchase:4": list(DAYS[:2])}


def test_two_ready_days_are_announced_one_per_poll_oldest_first(
    connection: None, emulator_admin: EmulatorAdmin
) -> None:
    emulator_admin.replace_event_log(events_on(DAYS[1], 4) + events_on(DAYS[0], 4))
    polls_before = emulator_admin.stats()["requests"].get("analyze_events", 0)

    async def main() -> list[dict]:
        stream = watcher().run().__aiter__()
        try:
            return await take(stream, 2)
        finally:
            await stream.aclose()

    days = [event["day"] for event in asyncio.run(main())]
    assert days == list(DAYS[:2])
    assert emulator_admin.stats()["requests"]["analyze_events"] - polls_before >= 2


@pytest.mark.parametrize("zone", ["+08:00", None])  # the argument's, or the connection's
def test_a_fixed_offset_counts_the_days(
    connection: None, emulator_admin: EmulatorAdmin, monkeypatch: pytest.MonkeyPatch, zone: Any
) -> None:
    """An offset is a time zone by the rule (and the connection's ``timezone`` extra may be
    one), but ``ZoneInfo("+08:00")`` raised a bare ZoneInfoNotFoundError in the triggerer."""
    conn = json.loads(os.environ["AIRFLOW_CONN_ANALYTICS_DEFAULT"])
    monkeypatch.setenv(
        "AIRFLOW_CONN_ANALYTICS_DEFAULT",
        json.dumps({**conn, "extra": {**conn["extra"], "timezone": "+08:00"}}),
    )
    emulator_admin.replace_event_log(events_on(DAYS[0], 4))

    async def main() -> list[dict]:
        stream = watcher(timezone=zone).run().__aiter__()
        try:
            return await take(stream, 1)
        finally:
            await stream.aclose()

    assert [event["day"] for event in asyncio.run(main())] == [DAYS[0]]


def test_watchers_sharing_a_key_share_one_poll_and_judge_it_each_by_its_threshold(
    connection: None, emulator_admin: EmulatorAdmin
) -> None:
    """Under Airflow's own SharedStreamManager, as the triggerer runs them."""
    emulator_admin.replace_event_log(events_on(DAYS[0], 5) + events_on(DAYS[1], 10))
    low, high = watcher(4), watcher(8)
    assert low.shared_stream_key() == high.shared_stream_key()

    async def main() -> tuple[list[dict], list[dict], int]:
        manager = SharedStreamManager()
        key = low.shared_stream_key()
        low_events = low.filter_shared_stream(manager.subscribe(trigger_id=1, trigger=low, key=key))
        high_events = high.filter_shared_stream(
            manager.subscribe(trigger_id=2, trigger=high, key=key)
        )
        before = emulator_admin.stats()["requests"].get("analyze_events", 0)
        try:
            got_low, got_high = await asyncio.gather(take(low_events, 2), take(high_events, 1))
            await asyncio.sleep(1)
            polls = emulator_admin.stats()["requests"]["analyze_events"] - before
        finally:
            await manager.stop_all()
        return got_low, got_high, polls

    got_low, got_high, polls = asyncio.run(main())
    assert [event["day"] for event in got_low] == list(DAYS[:2])
    assert [event["day"] for event in got_high] == [DAYS[1]]  # the 10th has 5 of 8
    # one request per 0.2 s poll for both watchers; two watchers polling alone would make
    # about twice as many
    seconds = 1 + 0.2 * 2
    assert polls <= seconds / 0.2 + 3, polls


def test_a_refused_request_fails_the_watcher_with_its_reason(
    connection: None, emulator_admin: EmulatorAdmin
) -> None:
    emulator_admin.fault("analyze_events", "status", status=401, times=1)

    async def main() -> None:
        async for _ in watcher().run():
            pass

    with pytest.raises(AnalyticsError, match="data-ready poll cannot succeed"):
        asyncio.run(asyncio.wait_for(main(), 20))


class Event:
    def __init__(self, extra: dict[str, Any]) -> None:
        self.extra = extra


def announcement(day: str) -> Event:
    return Event({"from_trigger": True, "payload": {"source": "analytics.data_ready", "day": day}})


def test_a_run_started_by_data_ready_events_covers_the_days_they_announced() -> None:
    events = {"asset": [announcement("2024-01-11")], "other": [Event({"payload": "x"})]}
    context = {"ds": "2026-01-01", "triggering_asset_events": events}
    assert announced_days(context) == ["2024-01-11"]
    assert covered_days(context).dates == ("2024-01-11", "2024-01-11")
    events["asset"].append(announcement("2024-01-12"))
    assert covered_days(context).dates == ("2024-01-11", "2024-01-12")


@pytest.mark.parametrize(
    "day", ["2024-02-30", 20240115, " 2024-01-15", "２０２４-01-15", ["2024-01-15"], None]
)
def test_a_data_ready_event_announcing_no_day_is_refused_by_name(day: Any) -> None:
    """Such an event was skipped, and the run covered the day before it started instead."""
    payload = {"source": "analytics.data_ready"} | ({} if day is None else {"day": day})
    context = {"triggering_asset_events": {"asset": [Event({"payload": payload})]}}
    with pytest.raises(AnalyticsValidationError, match=r"^analytics.data_ready payload.day: must"):
        covered_days(context)


def test_a_run_started_for_days_apart_is_refused_naming_the_days() -> None:
    """Events for the 15th and the 18th made a run cover the 16th and 17th, never announced."""
    events = {"asset": [announcement("2024-01-18"), announcement("2024-01-15")]}
    with pytest.raises(AnalyticsValidationError, match=r"^triggering_asset_events: must announce"):
        covered_days({"triggering_asset_events": events})


def test_a_run_with_a_day_as_partition_key_covers_that_day() -> None:
    class Run:
        partition_key = "2024-01-09"

    assert covered_days({"ds": "2026-01-01", "dag_run": Run()}).dates == ("2024-01-09",) * 2
    Run.partition_key = "us|2024-01-09"  # not a day: the logical date rules
    assert covered_days({"ds": "2026-01-01", "dag_run": Run()}).dates == ("2026-01-01",) * 2


def test_a_dag_file_declaring_a_watcher_loads_nothing_heavy() -> None:
    """The trigger is built when the DAG file is parsed: its module must not load the HTTP
    stack or Arrow (the triggerer loads them when it polls)."""
    script = (
        "import json, sys, airflow.sdk\n"
        "before = set(sys.modules)\n"
        "import airflow_provider_analytics.triggers.data_ready_event\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    added = {name.split(".")[0] for name in json.loads(done.stdout.splitlines()[-1])}
    assert not added & {"httpx", "requests", "pyarrow", "pandas", "numpy", "pyiceberg"}
