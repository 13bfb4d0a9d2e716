"""Invalid arguments to the hook, the operators and the sensor, each with the field its error
must name. Every one must be refused before any HTTP request is made."""

from __future__ import annotations

import datetime as dt
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.accounts import (
    AccountActivationOperator,
    RegisterAccountOperator,
)
from airflow_provider_analytics.operators.campaigns import (
    CreateUtmOperator,
    DeleteUtmOperator,
    UtmConversionOperator,
)
from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator
from airflow_provider_analytics.operators.reports import EventReportOperator, FunnelReportOperator
from airflow_provider_analytics.operators.tracking_plan import TrackingPlanSyncOperator
from airflow_provider_analytics.sensors.data_ready import AnalyticsDataSensor
from tests.reliability.subjects import EVENT_REQUEST, FUNNEL_REQUEST, OutletEvent

if TYPE_CHECKING:
    from collections.abc import Callable

    from airflow.sdk import BaseOperator

START: Final = dt.datetime(2024, 1, 15, tzinfo=dt.UTC)
LONG_ID: Final = "a" * 101
DESTINATION: Final = "file:///nonexistent-bad-input-destination/"
"""Never written: every case fails before it would be."""


@dataclass(frozen=True)
class BadInput:
    """One invalid input.

    :param target: the hook method, operator or connection the input is given to.
    :param label: what is wrong, in words.
    :param field: the field the error must name.
    :param call: makes the call with the invalid input.
    :param connection: connection fields replacing the good ones (for connection cases).
    :param hostile: crafted to break out (of a path, a header, a parser) rather than a slip;
        listed in the report's hostile-input section.
    """

    target: str
    label: str
    field: str
    call: Callable[[], Any]
    connection: dict[str, Any] = field(default_factory=dict)
    hostile: bool = False

    @property
    def id(self) -> str:
        return f"{self.target}: {self.label}"


def context() -> dict[str, Any]:
    return {
        "ds": "2024-01-15",
        "logical_date": START,
        "data_interval_start": START,
        "data_interval_end": START + dt.timedelta(days=1),
        "outlet_events": defaultdict(OutletEvent),
    }


def hook_call(method: str, *args: Any, **kwargs: Any) -> Callable[[], Any]:
    """Calls the hook client's ``<method>(*args, **kwargs)`` and consumes what it returns."""

    def call() -> Any:
        result = getattr(AnalyticsHook().get_conn(), method)(*args, **kwargs)
        return list(result) if method == "iter_cohort_user_pages" else result

    return call


def executed(operator_class: type[BaseOperator], **kwargs: Any) -> Callable[[], Any]:
    """Builds the operator (``task_id`` from its class) and runs ``execute``."""

    def call() -> Any:
        operator = operator_class(task_id="bad_input", **kwargs)
        return operator.execute(context())  # type: ignore[arg-type]

    return call


def with_keys(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A copy of a request with keys replaced (``None`` removes one)."""
    body = {**base, **changes}
    return {key: value for key, value in body.items() if value is not None}


def funnel(**changes: Any) -> Callable[[], Any]:
    return hook_call("analyze_funnel", with_keys(FUNNEL_REQUEST, **changes))


def events(**changes: Any) -> Callable[[], Any]:
    return hook_call("analyze_events", with_keys(EVENT_REQUEST, **changes))


def measure(expression: str, aggregator: str) -> list[dict[str, str]]:
    return [{"expression": expression, "aggregator": aggregator}]


def condition(expression: str, function: str, *params: Any) -> dict[str, Any]:
    return {
        "conditions": [{"expression": expression, "function": function, "params": list(params)}],
        "relation": "AND",
    }


def _steps(*expressions: str) -> list[dict[str, Any]]:
    return [{"expression": e, "filter": None} for e in expressions]


def _hook_ids() -> list[BadInput]:
    hook = "hook"
    return [
        BadInput(hook, "empty property id", "id", hook_call("add_user_property", "", "number")),
        BadInput(
            hook,
            "id with a leading digit",
            "id",
            hook_call("add_user_property", "9lives", "number"),
        ),
        BadInput(hook, "101-character id", "id", hook_call("add_user_property", LONG_ID, "string")),
        BadInput(
            hook, "id with punctuation", "id", hook_call("add_user_property", "vip-level", "number")
        ),
        BadInput(
            hook,
            "id in Chinese characters",
            "id",
            hook_call("add_user_property", "会员等级", "number"),
        ),
        BadInput(hook, "event id with a space", "id", hook_call("add_event", "new event")),
        BadInput(
            hook,
            "event property id with a leading digit",
            "properties[0].id",
            hook_call("add_event", "refund", properties=[{"id": "1st", "dataType": "number"}]),
        ),
        BadInput(
            hook,
            "event id with a query in it",
            "event_id",
            hook_call("list_event_properties", "purchase?plan=0"),
        ),
        BadInput(hook, "empty id to update", "id", hook_call("update_user_property", "", name="x")),
        BadInput(
            hook,
            "property id with a path in it",
            "property_id",
            hook_call("update_event_property", "purchase", "amount/../price", remark="x"),
        ),
        BadInput(
            hook,
            "101-character event id to update",
            "id",
            hook_call("update_event", LONG_ID, remark="x"),
        ),
        BadInput(
            hook,
            "cohort property with a hyphen",
            "properties[1]",
            hook_call("get_cohort_users", "cohort_tiny", properties=["age", "bad-id"]),
        ),
    ]


def _hook_texts() -> list[BadInput]:
    hook = "hook"
    return [
        BadInput(
            hook,
            "51-character name",
            "name",
            hook_call("add_user_property", "vip", "number", name="n" * 51),
        ),
        BadInput(
            hook,
            "name with markup",
            "name",
            hook_call("add_user_property", "vip", "number", name="VIP <b>"),
        ),
        BadInput(
            hook,
            "101-character remark",
            "remark",
            hook_call("add_user_property", "vip", "number", remark="r" * 101),
        ),
        BadInput(
            hook,
            "remark with a semicolon",
            "remark",
            hook_call("add_event", "refund", remark="drop table;"),
        ),
        BadInput(hook, "empty name", "name", hook_call("update_event", "purchase", name="")),
        BadInput(
            hook,
            "event property name with a line break",
            "properties[0].name",
            hook_call(
                "add_event",
                "refund",
                properties=[{"id": "why", "dataType": "string", "name": "a\nb"}],
            ),
        ),
        BadInput(
            hook,
            "remark with an emoji",
            "remark",
            hook_call("update_event_property", "purchase", "amount", remark="paid 💰"),
        ),
    ]


def _hook_types_and_dates() -> list[BadInput]:
    hook = "hook"
    return [
        BadInput(
            hook, "unknown data type", "data_type", hook_call("add_user_property", "v", "integer")
        ),
        BadInput(
            hook,
            "data type in the wrong case",
            "properties[0].dataType",
            hook_call("add_event", "refund", properties=[{"id": "x", "dataType": "Array<String>"}]),
        ),
        BadInput(
            hook,
            "unknown data type to change to",
            "dataType",
            hook_call("update_event_property", "purchase", "amount", data_type="list"),
        ),
        BadInput(
            hook,
            "reversed dates",
            "to_date",
            hook_call("get_utm_conversion", "1001", "2024-02-01", "2024-01-01"),
        ),
        BadInput(
            hook,
            "date with slashes",
            "from_date",
            hook_call("get_utm_conversion", "1001", "2024/01/01", "2024-01-02"),
        ),
        BadInput(
            hook,
            "30 February",
            "to_date",
            hook_call("get_utm_conversion", "1001", "2024-02-01", "2024-02-30"),
        ),
        BadInput(hook, "date without dashes", "fromDate", funnel(fromDate="20240110")),
        BadInput(hook, "reversed analysis dates", "toDate", events(toDate="2024-01-01")),
        BadInput(hook, "date as a number", "toDate", funnel(toDate=20240120)),
    ]


def _hook_analyses() -> list[BadInput]:
    hook = "hook"
    return [
        BadInput(hook, "convertTime 0", "convertTime", funnel(convertTime=0)),
        BadInput(hook, "negative convertTime", "convertTime", funnel(convertTime=-3)),
        BadInput(hook, "fractional convertTime", "convertTime", funnel(convertTime=1.5)),
        BadInput(
            hook, "unknown convertTimeUnit", "convertTimeUnit", funnel(convertTimeUnit="WEEK")
        ),
        BadInput(hook, "unknown unit", "unit", events(unit="FORTNIGHT")),
        BadInput(hook, "HOUR over several days", "unit", events(unit="HOUR")),
        BadInput(
            hook,
            "unknown aggregator",
            "measures[0].aggregator",
            events(measures=measure("event.purchase", "COUNT")),
        ),
        BadInput(
            hook,
            "unknown filter function",
            "filter.conditions[0].function",
            events(filter=condition("event.purchase.amount", "LIKE", "1")),
        ),
        BadInput(
            hook,
            "SUM of an event",
            "measures[0].aggregator",
            events(measures=measure("event.purchase", "SUM")),
        ),
        BadInput(
            hook,
            "user count of a property",
            "measures[0].aggregator",
            events(measures=measure("event.purchase.amount", "TRIGGER_USER_COUNT")),
        ),
        BadInput(
            hook,
            "conversion measure AVG_COUNT of a property",
            "convert_measures[0].aggregator",
            hook_call(
                "get_utm_conversion",
                "1001",
                "2024-01-01",
                "2024-01-02",
                convert_measures=measure("event.purchase.amount", "AVG_COUNT"),
            ),
        ),
        BadInput(
            hook,
            "step without the event. prefix",
            "steps[0].expression",
            funnel(steps=_steps("purchase", "event.share")),
        ),
        BadInput(
            hook,
            "a property as a funnel step",
            "steps[1].expression",
            funnel(steps=_steps("event.search", "event.purchase.amount")),
        ),
        BadInput(
            hook,
            "expression with an empty part",
            "measures[0].expression",
            events(measures=measure("event..amount", "SUM")),
        ),
        BadInput(
            hook,
            "split on nothing",
            "byFields[0].expression",
            events(byFields=[{"expression": "user.", "buckets": None}]),
        ),
        BadInput(
            hook,
            "filter on an event instead of a property",
            "filter.conditions[0].expression",
            events(filter=condition("event.$Anything", "EQ", "x")),
        ),
        BadInput(
            hook,
            "conversion target with a digit id",
            "expression",
            hook_call(
                "get_utm_conversion", "1001", "2024-01-01", "2024-01-02", expression="event.9x"
            ),
        ),
        BadInput(
            hook,
            "RANGE with one bound",
            "filter.conditions[0].params",
            events(filter=condition("event.purchase.amount", "RANGE", 1)),
        ),
        BadInput(
            hook,
            "unknown relation",
            "filter.relation",
            events(
                filter={
                    "conditions": [{"expression": "user.age", "function": "GT", "params": [3]}],
                    "relation": "XOR",
                }
            ),
        ),
        BadInput(hook, "two cohorts compared", "crowds", events(crowds=["cohort_tiny", "$ALL"])),
        BadInput(hook, "samplingFactor 65", "samplingFactor", funnel(samplingFactor=65)),
        BadInput(hook, "byStepIndex without byField", "byStepIndex", funnel(byStepIndex=0)),
        BadInput(hook, "misspelt key", "fromdate", events(fromdate="2024-01-10")),
        BadInput(hook, "empty steps", "steps", funnel(steps=[])),
        BadInput(hook, "a single step", "steps", funnel(steps=_steps("event.purchase"))),
        BadInput(hook, "empty measures", "measures", events(measures=[])),
        BadInput(hook, "funnel limit 0", "limit", funnel(limit=0)),
    ]


def _hook_others() -> list[BadInput]:
    hook = "hook"
    return [
        BadInput(
            hook,
            "activation as text",
            "activation",
            hook_call("set_account_activation", "ana@example.com", "false"),
        ),
        BadInput(
            hook,
            "activation as 1",
            "activation",
            hook_call("set_account_activation", "ana@example.com", 1),
        ),
        BadInput(hook, "limit 0", "limit", hook_call("get_cohort_users", "cohort_tiny", limit=0)),
        BadInput(
            hook, "negative limit", "limit", hook_call("get_cohort_users", "cohort_tiny", limit=-5)
        ),
        BadInput(
            hook,
            "export limit 0",
            "limit",
            hook_call("export_cohort_users", "cohort_tiny", limit=0),
        ),
        BadInput(
            hook,
            "page without pageSize",
            "page_size",
            hook_call("get_cohort_users", "cohort_tiny", page=2),
        ),
        BadInput(
            hook,
            "page size 0",
            "page_size",
            hook_call("iter_cohort_user_pages", "cohort_tiny", page_size=0),
        ),
        BadInput(
            hook,
            "pageSize above limit",
            "page_size",
            hook_call("get_cohort_users", "cohort_tiny", limit=10, page=1, page_size=20),
        ),
        BadInput(hook, "campaign id with /", "campaign_id", hook_call("get_utm", "12/34")),
        BadInput(hook, "campaign id with ..", "campaign_id", hook_call("delete_utm", "..")),
        BadInput(
            hook,
            "campaign id with ?",
            "campaign_id",
            hook_call("get_utm_conversion", "1?x=1", "2024-01-01", "2024-01-02"),
        ),
        BadInput(hook, "empty campaign id", "campaign_id", hook_call("get_utm", "")),
        BadInput(hook, "not an e-mail", "email", hook_call("register_account", "ana.example.com")),
        BadInput(
            hook,
            "ftp page address",
            "page_url",
            hook_call("create_utm", "ftp://files.example.com/", "c", "m", "s"),
        ),
        BadInput(
            hook,
            "blank campaign name",
            "utm_campaign",
            hook_call("create_utm", "https://shop.example.com/", " ", "m", "s"),
        ),
        BadInput(hook, "empty cohort code", "cohort_code", hook_call("get_cohort_users", "")),
    ]


def _connection_cases() -> list[BadInput]:
    target = "connection"

    def build() -> Any:
        return AnalyticsHook().get_conn()

    return [
        BadInput(
            target,
            "plain http to a remote host",
            "base_url",
            build,
            {"host": "http://analytics.example.com:4005"},
        ),
        BadInput(
            target,
            "credentials in the URL",
            "base_url",
            build,
            {"host": "https://user:pass@analytics.example.com"},
        ),
        BadInput(target, "max_attempts not a number", "max_attempts", build, {"max_attempts": "x"}),
        BadInput(target, "negative read timeout", "read_timeout", build, {"read_timeout": -1}),
        BadInput(
            target,
            "allow_insecure_http neither true nor false",
            "allow_insecure_http",
            build,
            {"allow_insecure_http": "maybe"},
        ),
        BadInput(target, "prefix of two segments", "utm_prefix", build, {"utm_prefix": "/a/b"}),
        BadInput(target, "max_attempts 0", "max_attempts", build, {"max_attempts": 0}),
    ]


def _operator_cases() -> list[BadInput]:
    export = CohortExportToParquetOperator
    good_export: dict[str, Any] = {"cohort_code": "cohort_tiny", "destination": DESTINATION}
    return [
        BadInput(
            "CreateUtmOperator",
            "page address without a scheme",
            "page_url",
            executed(
                CreateUtmOperator,
                page_url="shop.example.com",
                utm_campaign="c",
                utm_medium="m",
                utm_source="s",
            ),
        ),
        BadInput(
            "DeleteUtmOperator",
            "campaign id with /",
            "campaign_id",
            executed(DeleteUtmOperator, campaign_id="1/2"),
        ),
        BadInput(
            "UtmConversionOperator",
            "campaign id ..",
            "campaign_id",
            executed(UtmConversionOperator, campaign_id=".."),
        ),
        BadInput(
            "UtmConversionOperator",
            "month 13",
            "from_date",
            executed(UtmConversionOperator, campaign_id="1001", from_date="2024-13-01"),
        ),
        BadInput(
            "UtmConversionOperator",
            "reversed dates",
            "to_date",
            executed(
                UtmConversionOperator,
                campaign_id="1001",
                from_date="2024-02-01",
                to_date="2024-01-01",
            ),
        ),
        BadInput(
            "RegisterAccountOperator",
            "e-mail without a domain",
            "email",
            executed(RegisterAccountOperator, account_email="ana@"),
        ),
        BadInput(
            "AccountActivationOperator",
            "activation rendered as text",
            "activation",
            executed(
                AccountActivationOperator, account_email="ana@example.com", activation="False"
            ),
        ),
        BadInput(
            "AccountActivationOperator",
            "activation 0",
            "activation",
            executed(AccountActivationOperator, account_email="ana@example.com", activation=0),
        ),
        BadInput(
            "CohortExportToParquetOperator",
            "empty cohort code",
            "cohort_code",
            executed(export, **{**good_export, "cohort_code": ""}),
        ),
        BadInput(
            "CohortExportToParquetOperator",
            "limit 0",
            "limit",
            executed(export, **good_export, limit=0),
        ),
        BadInput(
            "CohortExportToParquetOperator",
            "negative limit",
            "limit",
            executed(export, **good_export, limit=-1),
        ),
        BadInput(
            "CohortExportToParquetOperator",
            "property with a space",
            "properties[1]",
            executed(export, **good_export, properties=["distinct_id", "a b"]),
        ),
        BadInput(
            "CohortExportToParquetOperator",
            "attempts 0",
            "attempts",
            executed(export, **good_export, attempts=0),
        ),
        BadInput(
            "CohortExportToParquetOperator",
            "row_group_rows 0",
            "row_group_rows",
            executed(export, **good_export, row_group_rows=0),
        ),
        BadInput(
            "CohortExportToParquetOperator",
            "unknown time zone",
            "timezone",
            executed(export, **good_export, timezone="Mars/Olympus"),
        ),
        BadInput(
            "CohortExportToParquetOperator",
            "unknown compression",
            "compression",
            executed(export, **good_export, compression="lz5"),
        ),
        BadInput(
            "CohortExportToParquetOperator",
            "unknown column naming",
            "column_names",
            executed(export, **good_export, column_names="snake"),
        ),
        BadInput(
            "CohortExportToParquetOperator",
            "unknown schema contract",
            "schema_contract",
            executed(export, **good_export, schema_contract="merge"),
        ),
        BadInput(
            "CohortExportToParquetOperator",
            "two properties sharing a warehouse column name",
            "properties",
            executed(export, **good_export, properties=["$city", "city"], column_names="warehouse"),
        ),
        BadInput(
            "CohortExportToParquetOperator",
            "schema_overrides naming a column by its id and by its warehouse name",
            "schema_overrides",
            executed(
                export,
                **good_export,
                schema_overrides={"$city": "string", "city": "boolean"},
                column_names="warehouse",
            ),
        ),
        BadInput(
            "FunnelReportOperator",
            "empty steps",
            "steps",
            executed(
                FunnelReportOperator,
                request={**FUNNEL_REQUEST, "steps": []},
                destination=DESTINATION,
            ),
        ),
        BadInput(
            "FunnelReportOperator",
            "convertTime 0",
            "convertTime",
            executed(
                FunnelReportOperator,
                request={**FUNNEL_REQUEST, "convertTime": 0},
                destination=DESTINATION,
            ),
        ),
        BadInput(
            "FunnelReportOperator",
            "unknown compression",
            "compression",
            executed(
                FunnelReportOperator,
                request=FUNNEL_REQUEST,
                destination=DESTINATION,
                compression="lz5",
            ),
        ),
        BadInput(
            "EventReportOperator",
            "empty measures",
            "measures",
            executed(
                EventReportOperator,
                request={**EVENT_REQUEST, "measures": []},
                destination=DESTINATION,
            ),
        ),
        BadInput(
            "EventReportOperator",
            "unknown aggregator",
            "measures[0].aggregator",
            executed(
                EventReportOperator,
                request={**EVENT_REQUEST, "measures": measure("event.purchase", "UNIQUE")},
                destination=DESTINATION,
            ),
        ),
        BadInput(
            "EventReportOperator",
            "negative window_days",
            "window_days",
            executed(
                EventReportOperator,
                request=EVENT_REQUEST,
                destination=DESTINATION,
                window_days=-7,
            ),
        ),
        BadInput(
            "FunnelReportOperator",
            "negative lookback_days",
            "lookback_days",
            executed(
                FunnelReportOperator,
                request=FUNNEL_REQUEST,
                destination=DESTINATION,
                lookback_days=-1,
            ),
        ),
        BadInput(
            "EventReportOperator",
            "lookback_days with an object URI (every re-pulled day would be one object)",
            "lookback_days",
            executed(
                EventReportOperator,
                request=with_keys(EVENT_REQUEST, fromDate=None, toDate=None),
                destination=DESTINATION + "dt=2024-01-15/events.parquet",
                lookback_days=2,
            ),
        ),
        BadInput(
            "EventReportOperator",
            "lookback_days with a request of several days",
            "lookback_days",
            executed(
                EventReportOperator,
                request=EVENT_REQUEST,  # 2024-01-10..2024-01-20
                destination=DESTINATION,
                lookback_days=2,
            ),
        ),
        BadInput(
            "TrackingPlanSyncOperator",
            "user property id with a leading digit",
            "user_properties[0].id",
            executed(
                TrackingPlanSyncOperator,
                plan={"user_properties": [{"id": "9x", "data_type": "number"}]},
            ),
        ),
        BadInput(
            "TrackingPlanSyncOperator",
            "event name over 50 characters",
            "events[0].name",
            executed(TrackingPlanSyncOperator, plan={"events": [{"id": "e", "name": "n" * 51}]}),
        ),
        BadInput(
            "TrackingPlanSyncOperator",
            "unknown data type",
            "events[0].properties[0].data_type",
            executed(
                TrackingPlanSyncOperator,
                plan={"events": [{"id": "e", "properties": [{"id": "p", "data_type": "int"}]}]},
            ),
        ),
    ]


def _sensor_cases() -> list[BadInput]:
    sensor = "AnalyticsDataSensor"

    def poked(**kwargs: Any) -> Callable[[], Any]:
        def call() -> Any:
            return AnalyticsDataSensor(task_id="wait", **kwargs).poke(context())  # type: ignore[arg-type]

        return call

    return [
        BadInput(sensor, "event with a space", "event", poked(event="bad event")),
        BadInput(sensor, "threshold 0", "threshold", poked(threshold=0)),
        BadInput(sensor, "date without padding", "from_date", poked(from_date="2024-1-5")),
        BadInput(sensor, "unknown source", "source", poked(source="logs")),
        BadInput(
            sensor,
            "reversed dates",
            "to_date",
            poked(from_date="2024-02-01", to_date="2024-01-01"),
        ),
        BadInput(
            sensor,
            "event property without the plan source",
            "event_property",
            poked(event="purchase", event_property="amount"),
        ),
    ]


def alias_bomb(levels: int, width: int) -> str:
    """YAML whose each level lists ``width`` aliases of the level below (width**levels values)."""
    lines = ['a0: &a0 ["lol"]']
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * width) + "]")
    lines.append(f"events: [*a{levels - 1}]")
    return "\n".join(lines) + "\n"


def synced_file(text: str) -> Callable[[], Any]:
    """Runs the tracking plan operator on a plan file holding ``text``."""

    def call() -> Any:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "plan.yaml"
            path.write_text(text, encoding="utf-8")
            operator = TrackingPlanSyncOperator(task_id="bad_input", plan=str(path))
            return operator.execute(context())  # type: ignore[arg-type]

    return call


def _hostile_cases() -> list[BadInput]:
    """Values built to escape a path, split a header or a query, or exhaust a parser."""
    export = CohortExportToParquetOperator
    good: dict[str, Any] = {"cohort_code": "cohort_tiny", "destination": DESTINATION}
    exporter = "CohortExportToParquetOperator"

    def exported(**changes: Any) -> Callable[[], Any]:
        return executed(export, **{**good, **changes})

    def funnel_to(destination: str) -> Callable[[], Any]:
        return executed(FunnelReportOperator, request=FUNNEL_REQUEST, destination=destination)

    def hostile(target: str, label: str, field: str, call: Callable[[], Any]) -> BadInput:
        return BadInput(target, label, field, call, hostile=True)

    def connection(label: str, field: str, extra: dict[str, Any]) -> BadInput:
        def build() -> Any:
            return AnalyticsHook().get_conn()

        return BadInput("connection", label, field, build, extra, hostile=True)

    utm = ("https://shop.example.com/", "c", "m", "s")
    return [
        hostile(exporter, "limit rendered as True", "limit", exported(limit=True)),
        hostile(exporter, "limit rendered as 1.9", "limit", exported(limit=1.9)),
        hostile(exporter, "limit rendered as 'abc'", "limit", exported(limit="abc")),
        hostile(exporter, "limit rendered as text '100'", "limit", exported(limit="100")),
        hostile(exporter, "limit 10**30", "limit", exported(limit=10**30)),
        *(
            hostile(
                target,
                f"lookback_days rendered as {value!r}",
                "lookback_days",
                executed(operator, request=request, destination=DESTINATION, lookback_days=value),
            )
            for target, operator, request in (
                ("FunnelReportOperator", FunnelReportOperator, FUNNEL_REQUEST),
                ("EventReportOperator", EventReportOperator, EVENT_REQUEST),
            )
            for value in (True, "2", 1.5)
        ),
        hostile(
            "FunnelReportOperator",
            "lookback_days 10**30",
            "lookback_days",
            executed(
                FunnelReportOperator,
                request=FUNNEL_REQUEST,
                destination=DESTINATION,
                lookback_days=10**30,
            ),
        ),
        hostile(
            exporter, "cohort code ../../../x", "cohort_code", exported(cohort_code="../../../x")
        ),
        hostile(exporter, "cohort code with /", "cohort_code", exported(cohort_code="vip/x")),
        hostile(exporter, "cohort code with NUL", "cohort_code", exported(cohort_code="vip\x00")),
        hostile(
            exporter,
            "cohort code of 10,000 characters",
            "cohort_code",
            exported(cohort_code="c" * 10_000),
        ),
        hostile(exporter, "cohort code with =", "cohort_code", exported(cohort_code="a=b")),
        hostile(
            exporter,
            "rendered destination climbing out with ../",
            "destination",
            exported(destination=DESTINATION + "../../escaped/"),
        ),
        hostile(
            exporter,
            "destination file:///etc/",
            "destination",
            exported(destination="file:///etc/"),
        ),
        hostile(
            exporter,
            "destination //etc/cron.d/ (ObjectStoragePath reads /etc/cron.d)",
            "destination",
            exported(destination="//etc/cron.d/"),
        ),
        hostile(
            exporter,
            "destination file:/etc/cron.d/ (ObjectStoragePath reads /etc/cron.d)",
            "destination",
            exported(destination="file:/etc/cron.d/"),
        ),
        hostile(
            "FunnelReportOperator",
            "rendered destination climbing out with %2e%2e",
            "destination",
            funnel_to("file:///nonexistent-bad-input/reports/%2e%2e/%2e%2e/x/"),
        ),
        hostile(
            "FunnelReportOperator",
            "rendered destination climbing out with ..",
            "destination",
            funnel_to("file:///nonexistent-bad-input/reports/../../../x/"),
        ),
        hostile(
            "FunnelReportOperator",
            "destination with a NUL",
            "destination",
            funnel_to("file:///nonexistent-bad-input/\x00/"),
        ),
        hostile(
            "RegisterAccountOperator",
            "e-mail with NUL",
            "email",
            executed(RegisterAccountOperator, account_email="ana\x00@example.com"),
        ),
        hostile(
            "AccountActivationOperator",
            "login user with CR LF",
            "login_user",
            executed(
                AccountActivationOperator,
                account_email="ana@example.com",
                activation=True,
                login_user="ops\r\nX-Injected: 1",
            ),
        ),
        hostile(
            "AnalyticsDataSensor",
            "threshold rendered as text '5'",
            "threshold",
            lambda: AnalyticsDataSensor(task_id="wait", threshold="5").poke(context()),  # type: ignore[arg-type]
        ),
        hostile(
            "AnalyticsDataSensor",
            "threshold NaN",
            "threshold",
            lambda: AnalyticsDataSensor(task_id="wait", threshold=float("nan")).poke(context()),  # type: ignore[arg-type]
        ),
        hostile("hook", "cohort code with /", "cohort_code", hook_call("get_cohort_users", "a/b")),
        hostile(
            "hook", "cohort code with NUL", "cohort_code", hook_call("get_cohort_users", "a\x00")
        ),
        hostile(
            "hook",
            "cohort code of 10,000 characters",
            "cohort_code",
            hook_call("get_cohort_users", "c" * 10_000),
        ),
        hostile(
            "hook",
            "limit 10**30",
            "limit",
            hook_call("get_cohort_users", "cohort_tiny", limit=10**30),
        ),
        hostile(
            "hook",
            "export limit 10**30",
            "limit",
            hook_call("export_cohort_users", "cohort_tiny", limit=10**30),
        ),
        hostile("hook", "analysis cohort with /", "crowds[0]", events(crowds=["a/../b"])),
        hostile("hook", "convertTime 10**30", "convertTime", funnel(convertTime=10**30)),
        hostile(
            "hook",
            "filter value 10**40",
            "filter.conditions[0].params[0]",
            funnel(filter=condition("event.purchase.amount", "GT", 10**40)),
        ),
        hostile(
            "hook",
            "login user with CR",
            "login_user",
            hook_call("create_utm", *utm, login_user="a\rb"),
        ),
        hostile(
            "hook",
            "login user with LF",
            "login_user",
            hook_call("create_utm", *utm, login_user="a\nb"),
        ),
        hostile(
            "hook",
            "login user with NUL",
            "login_user",
            hook_call("create_utm", *utm, login_user="a\x00"),
        ),
        hostile(
            "hook", "e-mail with NUL", "email", hook_call("register_account", "ana\x00@example.com")
        ),
        hostile(
            "hook",
            "password with NUL",
            "password",
            hook_call("register_account", "ana@example.com", password="pw\x00"),
        ),
        hostile(
            "hook",
            "campaign name of 10,000 characters",
            "utm_campaign",
            hook_call("create_utm", utm[0], "c" * 10_000, "m", "s"),
        ),
        hostile(
            "hook",
            "campaign source with a lone surrogate",
            "utm_source",
            hook_call("create_utm", utm[0], "c", "m", "s\ud800"),
        ),
        connection("xtoken beyond Latin-1", "xtoken", {"xtoken": "xt-\u20ac-secret"}),
        connection("appKey with a C1 control", "app_key", {"app_api_key": "ak-\x85-secret"}),
        connection("CA bundle path naming nothing", "verify", {"verify": "/nonexistent/ca.pem"}),
        hostile(
            "TrackingPlanSyncOperator",
            f"{len(alias_bomb(9, 9).encode())}-byte YAML alias bomb (9**9 values)",
            "file",
            synced_file(alias_bomb(9, 9)),
        ),
        hostile(
            "TrackingPlanSyncOperator",
            f"{len(alias_bomb(10, 10).encode())}-byte YAML alias bomb (10**10 values)",
            "file",
            synced_file(alias_bomb(10, 10)),
        ),
        hostile(
            "TrackingPlanSyncOperator",
            "top-level key given twice",
            "file",
            synced_file("events:\n  - id: a\nevents:\n  - id: b\n"),
        ),
        hostile(
            "TrackingPlanSyncOperator",
            "id given twice in one event",
            "file",
            synced_file("events:\n  - id: a\n    id: b\n"),
        ),
        hostile(
            "TrackingPlanSyncOperator",
            "the same event id twice",
            "events[1].id",
            executed(TrackingPlanSyncOperator, plan={"events": [{"id": "a"}, {"id": "a"}]}),
        ),
    ]


BAD_INPUTS: Final[tuple[BadInput, ...]] = (
    *_hook_ids(),
    *_hook_texts(),
    *_hook_types_and_dates(),
    *_hook_analyses(),
    *_hook_others(),
    *_connection_cases(),
    *_operator_cases(),
    *_sensor_cases(),
    *_hostile_cases(),
)
