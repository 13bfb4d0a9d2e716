"""Answers that are valid JSON with the wrong meaning, sent by a server on 127.0.0.1: each is
refused by name, by every path that receives it, and never becomes a number, a row, a page
or a "ready" signal.

Regression tests for the faults found from outside: readiness judged on ``NaN``, ``"7"`` or
a day counted twice; funnel and event counts read from strings, booleans and negatives;
repeated report dates; a paged listing that never ends; and a trigger that ended with an
error that named nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_analytics.client import AnalyticsClient, AnalyticsProtocolError, ClientConfig
from airflow_provider_analytics.client.async_api import AsyncAnalyticsClient
from airflow_provider_analytics.client.data_ready import DataReadyCheck
from airflow_provider_analytics.operators.reports import EventReportOperator, FunnelReportOperator
from airflow_provider_analytics.sensors.data_ready import AnalyticsDataSensor
from airflow_provider_analytics.triggers.data_ready import AnalyticsDataReadyTrigger
from tests.loopback import ServedOnLoopback
from tests.run_context import run_context

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

pytestmark = pytest.mark.integration

TOKEN = "tok-Hostile-4410-secret"
APP_KEY = "app-Hostile-7123"
DAY = "2024-01-15"


class AnsweringServer(ServedOnLoopback):
    """Answers every POST or GET with ``respond(path, request_body)``: raw bytes, so an
    answer may hold what ``json.dumps`` would never write. Counts the requests per path."""

    def __init__(self, respond: Callable[[str, Any], bytes]) -> None:
        self.requests: dict[str, int] = defaultdict(int)
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                path = self.path.split("?")[0]
                server.requests[path] += 1
                payload = respond(path, json.loads(raw) if raw else None)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        super().__init__(ThreadingHTTPServer(("127.0.0.1", 0), Handler))


def serving(respond: Callable[[str, Any], bytes]) -> AnsweringServer:
    return AnsweringServer(respond)


def config(server: AnsweringServer) -> ClientConfig:
    return ClientConfig(server.base_url, token=TOKEN, app_key=APP_KEY, max_attempts=1)


@pytest.fixture
def connect(monkeypatch: pytest.MonkeyPatch) -> Callable[[AnsweringServer], None]:
    """Point ``analytics_default`` at a server, as a deployment's connection would."""

    def point(server: AnsweringServer) -> None:
        connection = {
            "conn_type": "analytics",
            "host": server.base_url,
            "password": TOKEN,
            "extra": {"app_key": APP_KEY, "max_attempts": 1},
        }
        monkeypatch.setenv("AIRFLOW_CONN_ANALYTICS_DEFAULT", json.dumps(connection))

    return point


# The data-ready check: the same refusal through the sensor, the trigger and both transports


def counts(series: list[str], values: str) -> bytes:
    """An event-analysis answer of one measure; ``values`` is written as given (raw JSON)."""
    row = '{"byValue": [], "values": [' + values + '], "sum": null}'
    head = '{"measures": ["event.$Anything.count"], "series": ' + json.dumps(series)
    return (head + ', "rows": [' + row + "]}").encode()


TWO_DAYS = ["2024-01-14", "2024-01-15"]
HOSTILE_COUNTS = {
    "NaN": (counts(TWO_DAYS, "[5, NaN]"), "NaN is not a JSON value"),
    "Infinity": (counts(TWO_DAYS, "[5, Infinity]"), "Infinity is not a JSON value"),
    "a numeric string": (counts(TWO_DAYS, '[5, "7"]'), r"rows\[0\]\.values\[0\]\[1\].*got '7'"),
    "an exponent string": (counts(TWO_DAYS, '[5, "1e3"]'), r"values\[0\]\[1\].*got '1e3'"),
    "a boolean": (counts(TWO_DAYS, "[5, true]"), r"values\[0\]\[1\].*got True"),
    "a count beyond a double": (counts(TWO_DAYS, "[5, 1e400]"), "1e400 is beyond a double's"),
    "an integer of 5000 digits": (counts(TWO_DAYS, "[5, " + "9" * 5000 + "]"), "than 4300 digits"),
    "a negative count": (counts(TWO_DAYS, "[5, -1]"), r"values\[0\]\[1\] is -1, .* counts"),
    "a fraction": (counts(TWO_DAYS, "[5, 2.5]"), r"values\[0\]\[1\] is 2\.5, .* counts"),
    "the same day twice, 0 and 1": (
        counts(["2024-01-15", "2024-01-15"], "[0, 1]"),
        r"series\[1\] '2024-01-15' repeats series\[0\]",
    ),
    "the same day in two forms": (
        counts(["2024-01-15", "2024-01-15 00:00:00"], "[0, 1]"),
        r"series\[1\] '2024-01-15 00:00:00' repeats series\[0\]",
    ),
    "a day in other digits": (  # strptime reads fullwidth or Arabic-Indic digits as ASCII
        counts(["2024-01-14", "\uff12\uff10\uff12\uff14-01-15"], "[5, 5]"),
        r"series\[1\] '２０２４-01-15' is not a date",
    ),
    "a day outside the window": (
        counts(["2024-01-15", "2024-01-16"], "[5, 5]"),
        r"series\[1\] is 2024-01-16, outside the asked range",
    ),
    "more values than days": (counts(TWO_DAYS, "[5, 5, 5]"), r"values\[0\] has 3 entries"),
    "a row that is text": (
        b'{"series": ["2024-01-15"], "rows": ["x"]}',
        r"rows\[0\] must be a JSON object",
    ),
    "a repeated key": (
        b'{"series": ["2024-01-15"], "series": [], "rows": []}',
        "the key 'series' is given twice",
    ),
}


ONE_DAY_CASES = frozenset(
    {"the same day twice, 0 and 1", "the same day in two forms", "a row that is text"}
)


def _window(name: str) -> DataReadyCheck:
    """The check of the case: the two days of ``TWO_DAYS``, or the one day it lists."""
    return DataReadyCheck(DAY if name in ONE_DAY_CASES else "2024-01-14", DAY)


def _sync_outcome(server: AnsweringServer, check: DataReadyCheck) -> str:
    with AnalyticsClient(config(server)) as client, pytest.raises(AnalyticsProtocolError) as caught:
        check.evaluate(client.request_json(check.call()))
    return str(caught.value)


def _async_outcome(server: AnsweringServer, check: DataReadyCheck) -> str:
    async def main() -> str:
        async with AsyncAnalyticsClient(config(server)) as client:
            with pytest.raises(AnalyticsProtocolError) as caught:
                check.evaluate(await client.request_json(check.call()))
        return str(caught.value)

    return asyncio.run(main())


@pytest.mark.parametrize("name", list(HOSTILE_COUNTS))
def test_both_transports_refuse_a_hostile_count_alike(name: str) -> None:
    body, says = HOSTILE_COUNTS[name]
    check = _window(name)
    with serving(lambda path, request: body) as server:
        sync, asynchronous = _sync_outcome(server, check), _async_outcome(server, check)
    assert sync == asynchronous
    assert sync.startswith("analyze_events: ")
    assert TOKEN not in sync
    assert re.search(says, sync), sync


@pytest.mark.parametrize("name", ["NaN", "a numeric string", "the same day twice, 0 and 1"])
def test_the_sensor_keeps_waiting_and_logs_the_refusal(
    name: str, connect: Callable[[AnsweringServer], None], capfd: pytest.CaptureFixture[str]
) -> None:
    body, says = HOSTILE_COUNTS[name]
    check = _window(name)
    with serving(lambda path, request: body) as server:
        connect(server)
        sensor = AnalyticsDataSensor(
            task_id="wait", from_date=check.from_date, to_date=check.to_date
        )
        result = sensor.poke(run_context(DAY))
    logged = capfd.readouterr().out
    assert result.is_done is False
    assert "will poke again: analyze_events: " in logged
    assert re.search(says, logged), logged


def test_a_valid_answer_is_judged_alike_by_both_transports() -> None:
    """The control: the same server with valid counts makes both paths ready."""
    body = counts(TWO_DAYS, "[5, 7]")
    check = DataReadyCheck("2024-01-14", DAY, threshold=5)

    async def via_async(server: AnsweringServer) -> Any:
        async with AsyncAnalyticsClient(config(server)) as client:
            return check.evaluate(await client.request_json(check.call()))

    with serving(lambda path, request: body) as server:
        with AnalyticsClient(config(server)) as client:
            sync = check.evaluate(client.request_json(check.call()))
        asynchronous = asyncio.run(via_async(server))
    assert sync == asynchronous
    assert sync.ready and sync.detail["counts"] == {"2024-01-14": 5, DAY: 7}


@pytest.mark.parametrize("name", ["a row that is text", "a boolean"])
def test_the_trigger_logs_the_refusal_and_polls_on(
    name: str, connect: Callable[[AnsweringServer], None], caplog: pytest.LogCaptureFixture
) -> None:
    """A malformed answer is named (operation, field) in the triggerer's log and the trigger
    keeps polling; it used to end with "'str' object has no attribute 'get'"."""
    body, says = HOSTILE_COUNTS[name]
    check = _window(name)
    events: list[dict[str, Any]] = []

    async def run_for_a_while() -> None:
        trigger = AnalyticsDataReadyTrigger(
            "analytics_default",
            {"from_date": check.from_date, "to_date": check.to_date},
            poke_interval=0.05,
        )

        async def collect() -> None:
            async for event in trigger.run():
                events.append(dict(event.payload))

        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(collect(), 1.5)

    with serving(lambda path, request: body) as server:
        connect(server)
        with caplog.at_level(logging.WARNING):
            asyncio.run(run_for_a_while())
        polls = server.requests["/uba/api/events/analyze"]
    assert events == []
    assert polls >= 2
    assert "analyze_events: " in caplog.text
    assert re.search(says, caplog.text), caplog.text
    assert "has no attribute" not in caplog.text


# Report operators: refused by name, nothing written


FUNNEL_REQUEST = {
    "steps": [{"expression": "event.$startup"}, {"expression": "event.purchase"}],
    "crowds": ["$ALL"],
    "fromDate": "2024-01-14",
    "toDate": DAY,
}


def funnel_answer(counts_text: str, dates: str = '["$ALL", "2024-01-14", "2024-01-15"]') -> bytes:
    steps = '"stepEvents": ["event.$startup", "event.purchase"]'
    first = '{"expression": "event.$startup", "convertedUser": [10, 6, 4]}'
    second = '{"expression": "event.purchase", "convertedUser": ' + counts_text + "}"
    row = '{"byValue": "-1", "stepsDetail": [' + first + ", " + second + "]}"
    head = '{"dateList": ' + dates + ', "byValues": ["-1"], ' + steps
    return (head + ', "rows": [' + row + "]}").encode()


HOSTILE_FUNNELS = {
    "a numeric string": (funnel_answer('[5, "10", 1]'), r"convertedUser\[1\].*got '10'"),
    "a boolean": (funnel_answer("[5, true, 1]"), r"convertedUser\[1\].*got True"),
    "a negative count": (funnel_answer("[5, -3, 1]"), r"convertedUser\[1\] must be >= 0, got -3"),
    "a repeated date": (
        funnel_answer("[5, 3, 1]", '["$ALL", "2024-01-15", "2024-01-15"]'),
        r"dateList\[2\] '2024-01-15' repeats dateList\[1\]",
    ),
    "a date outside the request": (
        funnel_answer("[5, 3, 1]", '["$ALL", "2024-01-14", "2024-01-20"]'),
        r"dateList\[2\] is 2024-01-20, outside the asked range",
    ),
}


EVENT_REQUEST = {
    "measures": [
        {"expression": "event.$Anything", "aggregator": "TOTAL_COUNT"},
        {"expression": "event.purchase.amount", "aggregator": "AVG"},
    ],
    "crowds": ["$ALL"],
    "fromDate": "2024-01-14",
    "toDate": DAY,
    "unit": "DAY",
}


def event_answer(first: str, second: str = "[1.5, 2.5]", series: str = "") -> bytes:
    """An answer of two measures; the value lists are written as given (raw JSON)."""
    row = '{"byValue": [], "values": [' + first + ", " + second + '], "sum": null}'
    head = '{"measures": ["a", "b"], "series": ' + (series or json.dumps(TWO_DAYS))
    return (head + ', "rows": [' + row + "]}").encode()


HOSTILE_EVENTS = {
    "NaN in a count": (event_answer("[3, NaN]"), "NaN is not a JSON value"),
    "Infinity in an average": (event_answer("[3, 4]", "[1.5, Infinity]"), "Infinity"),
    "a numeric string": (event_answer('[3, "7"]'), r"values\[0\]\[1\].*got '7'"),
    "a boolean": (event_answer("[3, true]"), r"values\[0\]\[1\].*got True"),
    "a fraction in a count": (event_answer("[3, 0.5]"), r"values\[0\]\[1\] is 0\.5, .* counts"),
    "a repeated series date": (
        event_answer("[3, 4]", series='["2024-01-15", "2024-01-15"]'),
        r"series\[1\] '2024-01-15' repeats series\[0\]",
    ),
}


REPORTS = {
    **{
        f"funnel, {name}": (FunnelReportOperator, FUNNEL_REQUEST, *c)
        for name, c in HOSTILE_FUNNELS.items()
    },
    **{
        f"events, {name}": (EventReportOperator, EVENT_REQUEST, *c)
        for name, c in HOSTILE_EVENTS.items()
    },
}


@pytest.mark.parametrize("name", list(REPORTS))
def test_a_report_operator_refuses_by_name_and_writes_nothing(
    name: str, connect: Callable[[AnsweringServer], None], tmp_path: Path
) -> None:
    operator_class, request, body, says = REPORTS[name]
    with serving(lambda path, asked: body) as server:
        connect(server)
        operator = operator_class(
            task_id="report", request=request, destination=f"file://{tmp_path}/"
        )
        with pytest.raises(AnalyticsProtocolError, match=says) as caught:
            operator.execute(run_context(DAY))
    operation = "analyze_funnel" if operator_class is FunnelReportOperator else "analyze_events"
    assert str(caught.value).startswith(f"{operation}: ")
    assert list(tmp_path.rglob("*.parquet")) == []


def test_a_valid_event_answer_is_written() -> None:
    """The control for the cases above: the same answer with sound numbers is accepted."""
    with (
        serving(lambda path, request: event_answer("[3, 4]")) as server,
        AnalyticsClient(config(server)) as client,
    ):
        answer = client.analyze_events(EVENT_REQUEST)
    assert answer["rows"][0]["values"] == [[3, 4], [1.5, 2.5]]


# The paged listing: bounded and consistent


def page_of(count: int, page: int, users: list[int]) -> bytes:
    listed = [{"distinct_id": user} for user in users]
    body = {"count": count, "page": page, "size": len(listed), "users": listed}
    return json.dumps(body).encode()


def echoing(count: int, users_of: Callable[[int], list[int]], count_of: Any = None) -> Any:
    def respond(path: str, request: Any) -> bytes:
        number = request["page"]
        return page_of(count_of(number) if count_of else count, number, users_of(number))

    return respond


HOSTILE_PAGES: dict[str, tuple[Any, str, int]] = {
    "page 1 forever, count 10**12": (
        lambda path, request: page_of(10**12, 1, [1, 2]),
        "get_cohort_users: page is 1, but page 2 was asked",
        2,
    ),
    "the same users on every page": (
        echoing(10**12, lambda page: [1, 2]),
        r"page 2: users\[0\] repeats distinct_id 1 of page 1",
        2,
    ),
    "a negative count": (
        lambda path, request: page_of(-5, 1, []),
        "count must be >= 0, got -5",
        1,
    ),
    "a count that changes": (
        echoing(0, lambda page: [2 * page, 2 * page + 1], lambda page: 10 + page),
        "page 2: count is 12, but page 1 said 11",
        2,
    ),
    "more users than count": (
        lambda path, request: page_of(1, 1, [1, 2]),
        "users holds 2 users, more than count 1",
        1,
    ),
    "a user twice on one page": (
        echoing(4, lambda page: [7, 7]),
        r"page 1: users\[1\] repeats distinct_id 7 of page 1",
        1,
    ),
    "pages past count": (
        echoing(3, lambda page: [2 * page, 2 * page + 1]),
        r"page 2: 4 users arrived, more than the 3 asked",
        2,
    ),
}


@pytest.mark.parametrize("name", list(HOSTILE_PAGES))
def test_the_paged_listing_refuses_naming_the_page(name: str) -> None:
    respond, says, requests = HOSTILE_PAGES[name]
    with serving(respond) as server:
        with AnalyticsClient(config(server)) as client:
            pages = client.iter_cohort_user_pages("cohort_small", page_size=2)
            with pytest.raises(AnalyticsProtocolError, match=says):
                for _ in pages:
                    pass
        assert server.requests["/uba/api/cohort/users"] == requests


def test_the_paged_listing_stops_after_the_pages_count_promises() -> None:
    """A sound server with 5 users in pages of 2: exactly 3 requests, 5 distinct users."""
    with serving(
        echoing(5, lambda page: [n for n in (2 * page - 2, 2 * page - 1) if n < 5])
    ) as server:
        with AnalyticsClient(config(server)) as client:
            pages = list(client.iter_cohort_user_pages("cohort_small", page_size=2))
        assert server.requests["/uba/api/cohort/users"] == 3
    assert [user["distinct_id"] for page in pages for user in page["users"]] == [0, 1, 2, 3, 4]
