"""The rows of the fault matrix: every operation of the hook, every operator, the sensor and
the trigger, each with the operation its faults are aimed at.

A subject is run in a :class:`Workspace`: the emulator (over real HTTP), a fresh destination
folder and an Airflow context. It returns a JSON-able result; :func:`normalise` removes what
legitimately changes from run to run (timings, timestamps, the folder's path).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final

import pyarrow.parquet as pq
from analytics_emulator.errors import BadRequest

from airflow_provider_analytics.client import AnalyticsClient
from airflow_provider_analytics.client import operations as ops
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
from airflow_provider_analytics.reports.schemas import REPORT_TIME_COLUMNS
from airflow_provider_analytics.sensors.data_ready import AnalyticsDataSensor
from airflow_provider_analytics.triggers.data_ready import AnalyticsDataReadyTrigger

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    import pyarrow as pa
    from analytics_emulator.server import EmulatorServer
    from analytics_emulator.state import EmulatorState

DAY: Final = "2024-01-15"
START: Final = dt.datetime(2024, 1, 15, tzinfo=dt.UTC)
EXPORT_COHORT: Final = "cohort_small"
EXPORT_COLUMNS: Final = (
    "distinct_id",
    "nickname",
    "age",
    "register_time",
    "is_vip",
    "interests",
    "tag.tag_rfm",
)
"""Columns of the exports: every data type, an id beyond 2**53 and a tag."""
REQUESTED_PROPERTIES: Final = ["distinct_id", "nickname", "age", "is_vip", "tag_rfm"]
"""Properties named by the hook's cohort calls (a tag is asked for by its bare code)."""
ACCOUNT_EMAIL: Final = "matrix@example.com"
FUNNEL_REQUEST: Final = {
    "steps": [
        {"expression": "event.$startup", "filter": None},
        {"expression": "event.add_to_cart", "filter": None},
        {"expression": "event.purchase", "filter": None},
    ],
    "crowds": ["$ALL"],
    "fromDate": "2024-01-10",
    "toDate": "2024-01-20",
    "convertTime": 1,
    "convertTimeUnit": "DAY",
}
EVENT_REQUEST: Final = {
    "measures": [
        {"expression": "event.purchase", "aggregator": "TOTAL_COUNT"},
        {"expression": "event.purchase.amount", "aggregator": "SUM"},
    ],
    "crowds": ["$ALL"],
    "fromDate": "2024-01-10",
    "toDate": "2024-01-20",
    "unit": "DAY",
    "byFields": [{"expression": "event.purchase.price", "buckets": [100, 500]}],
}
SYNC_PLAN: Final = {
    "user_properties": [
        {"id": "vip_level", "name": "VIP level", "data_type": "number"},
        {"id": "age", "name": "Age", "data_type": "number"},
    ],
    "events": [
        {
            "id": "refund",
            "name": "Refund",
            "properties": [
                {"id": "refund_amount", "name": "Refund amount", "data_type": "number"},
                {"id": "refund_reason", "name": "Reason", "data_type": "string"},
            ],
        },
        {
            "id": "purchase",
            "name": "Purchase",
            "properties": [
                {"id": "amount", "name": "Order amount", "data_type": "number", "remark": "tax"}
            ],
        },
    ],
}
"""Adds a user property, adds an event property, modifies another and skips the rest."""

VOLATILE_KEYS: Final = frozenset(
    {"seconds", "rows_per_second", "attempts", "createTime", "updateTime", "reportUpdateTime"}
)
"""Result fields that differ between two correct runs (timings, clocks, attempt counts)."""
VOLATILE_COLUMNS: Final = REPORT_TIME_COLUMNS
"""Output columns that carry the server's clock."""
OPERATIONS: Final[dict[str, ops.Operation]] = {
    o.name: o for o in vars(ops).values() if isinstance(o, ops.Operation)
}


class Layer(StrEnum):
    """Where a subject sits; decides how a client error surfaces."""

    OPERATION = "hook operation"
    OPERATOR = "operator"
    SENSOR = "sensor"
    TRIGGER = "trigger"


class TriggerErrorEvent(Exception):
    """The trigger fired ``{"status": "error"}``: the deferred task fails with its message."""


@dataclass
class OutletEvent:
    """What ``context["outlet_events"][asset]`` hands an operator in a real run."""

    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Workspace:
    """One run's surroundings.

    :param server: the emulator, running in this process.
    :param directory: the destination folder (empty at the start of a case).
    :param first_campaign_id: the id the first ad tracking link gets after a reset.
    """

    server: EmulatorServer
    directory: Path
    first_campaign_id: int
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def state(self) -> EmulatorState:
        return self.server.state

    @property
    def destination(self) -> str:
        return f"file://{self.directory}/"

    @staticmethod
    def hook() -> AnalyticsClient:
        """The client of a hook on ``analytics_default`` (the connection the test puts in the
        environment)."""
        return AnalyticsHook().get_conn()

    @staticmethod
    def context() -> dict[str, Any]:
        """What Airflow hands ``execute`` for a daily run of :data:`DAY`."""
        return {
            "ds": DAY,
            "logical_date": START,
            "data_interval_start": START,
            "data_interval_end": START + dt.timedelta(days=1),
            "outlet_events": defaultdict(OutletEvent),
        }


def _nothing(ws: Workspace) -> None:
    return None


@dataclass(frozen=True)
class Subject:
    """One row of the matrix.

    :param name: the hook method or the operator class.
    :param layer: operation, operator, sensor or trigger.
    :param target: the operation the row's faults are aimed at.
    :param run: runs the subject once and returns its result.
    :param prepare: puts the platform in the state the run needs (before any fault).
    :param effects: what the run leaves on the platform (campaigns, accounts, plan).
    :param writes: writes an object under the workspace's destination.
    :param streams: reads the export stream (stream faults apply).
    :param creates: creates something on the platform each time it runs, so a failed run is
        not simply run again (that could make a duplicate).
    """

    name: str
    layer: Layer
    target: str
    run: Callable[[Workspace], Any]
    prepare: Callable[[Workspace], None] = _nothing
    effects: Callable[[Workspace], Any] = _nothing
    writes: bool = False
    streams: bool = False
    creates: bool = False

    @property
    def row(self) -> str:
        return self.name if self.name == self.target else f"{self.name} [{self.target}]"


# Platform state -------------------------------------------------------------------------


def campaigns(ws: Workspace) -> list[dict[str, Any]]:
    """Every ad tracking record created since the reset (ids are consecutive)."""
    records = []
    campaign_id = ws.first_campaign_id
    while True:
        try:
            records.append(ws.state.campaigns.get(campaign_id))
        except BadRequest:
            return records
        campaign_id += 1


def account(ws: Workspace) -> dict[str, Any] | None:
    return ws.state.accounts.find(ACCOUNT_EMAIL)


def plan(ws: Workspace) -> dict[str, Any]:
    tracking = ws.state.plan
    return {
        "user_properties": tracking.user_properties(),
        "events": tracking.events(),
        "refund": tracking.event_properties("refund"),
        "purchase": tracking.event_properties("purchase"),
    }


def create_campaign(ws: Workspace) -> None:
    ws.notes["campaign"] = ws.hook().create_utm(
        "https://shop.example.com/spring", "spring_sale", "cpc", "search"
    )


def register_account(ws: Workspace) -> None:
    ws.hook().register_account(ACCOUNT_EMAIL, name="Matrix")


# Results --------------------------------------------------------------------------------


def normalise(value: Any, ws: Workspace) -> Any:
    """``value`` without volatile fields, the destination folder written ``<dest>``."""
    if isinstance(value, dict):
        return {k: normalise(v, ws) for k, v in value.items() if k not in VOLATILE_KEYS}
    if isinstance(value, list | tuple):
        return [normalise(v, ws) for v in value]
    if isinstance(value, str):
        return value.replace(str(ws.directory), "<dest>")
    return value


def digest(rows: Any) -> str:
    text = json.dumps(rows, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def table_summary(table: pa.Table) -> dict[str, Any]:
    """Rows, a digest of the values (server clock columns left out) and repeated user ids."""
    stable = table.drop_columns([c for c in VOLATILE_COLUMNS if c in table.column_names])
    summary: dict[str, Any] = {"rows": table.num_rows, "digest": digest(stable.to_pylist())}
    if "distinct_id" in table.column_names:
        ids = table.column("distinct_id").to_pylist()
        summary["repeated_ids"] = len(ids) - len(set(ids))
    return summary


@dataclass(frozen=True)
class Outputs:
    """What is in a destination folder: hidden (temporary) files and readable objects."""

    hidden: list[str]
    objects: dict[str, dict[str, Any]]


def outputs(directory: Path) -> Outputs:
    hidden, objects = [], {}
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        relative = str(path.relative_to(directory))
        if path.name.startswith("."):
            hidden.append(relative)
        else:
            objects[relative] = table_summary(pq.read_table(path))
    return Outputs(hidden, objects)


# Runs -----------------------------------------------------------------------------------


def _records_summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    ids = [r.get("distinct_id") for r in records]
    return {
        "rows": len(records),
        "repeated_ids": len(ids) - len(set(ids)),
        "digest": digest(records),
    }


def _export_records(ws: Workspace) -> dict[str, Any]:
    properties = [c.removeprefix("tag.") for c in EXPORT_COLUMNS]
    with ws.hook().export_cohort_users(EXPORT_COHORT, properties=properties) as export:
        return _records_summary(list(export.iter_records()))


def _cohort_pages(ws: Workspace) -> dict[str, Any]:
    pages = ws.hook().iter_cohort_user_pages(
        EXPORT_COHORT, properties=REQUESTED_PROPERTIES, page_size=300
    )
    return _records_summary([user for page in pages for user in page["users"]])


def _operation_runs() -> dict[str, Callable[[Workspace], Any]]:
    """One call per operation of the interface, through the hook."""

    def hook(ws: Workspace) -> AnalyticsClient:
        return ws.hook()

    return {
        "create_utm": lambda ws: hook(ws).create_utm(
            "https://shop.example.com/spring", "spring_sale", "cpc", "search"
        ),
        "get_utm": lambda ws: hook(ws).get_utm(ws.notes["campaign"]),
        "get_utm_conversion": lambda ws: hook(ws).get_utm_conversion(
            ws.notes["campaign"], "2024-01-10", "2024-01-20", expression="event.purchase"
        ),
        "delete_utm": lambda ws: hook(ws).delete_utm(ws.notes["campaign"]),
        "list_user_properties": lambda ws: hook(ws).list_user_properties(plan=1),
        "list_events": lambda ws: hook(ws).list_events(),
        "list_event_properties": lambda ws: hook(ws).list_event_properties("purchase"),
        "add_user_property": lambda ws: hook(ws).add_user_property(
            "vip_level", "number", name="VIP level"
        ),
        "add_event": lambda ws: hook(ws).add_event(
            "refund", properties=[{"id": "refund_reason", "dataType": "string"}]
        ),
        "update_user_property": lambda ws: hook(ws).update_user_property(
            "pending_flag", name="Pending", data_type="boolean"
        ),
        "update_event": lambda ws: hook(ws).update_event("purchase", remark="paid orders"),
        "update_event_property": lambda ws: hook(ws).update_event_property(
            "purchase", "amount", remark="incl tax"
        ),
        "get_cohort_users": lambda ws: hook(ws).get_cohort_users(
            EXPORT_COHORT, limit=50, properties=REQUESTED_PROPERTIES
        ),
        "export_cohort_users": _export_records,
        "register_account": lambda ws: hook(ws).register_account(ACCOUNT_EMAIL, name="Matrix"),
        "set_account_activation": lambda ws: hook(ws).set_account_activation(ACCOUNT_EMAIL, False),
        "analyze_funnel": lambda ws: hook(ws).analyze_funnel(FUNNEL_REQUEST),
        "analyze_events": lambda ws: hook(ws).analyze_events(EVENT_REQUEST),
    }


_PREPARE: Final[dict[str, Callable[[Workspace], None]]] = {
    "get_utm": create_campaign,
    "get_utm_conversion": create_campaign,
    "delete_utm": create_campaign,
    "set_account_activation": register_account,
}
_EFFECTS: Final[dict[str, Callable[[Workspace], Any]]] = {
    "create_utm": campaigns,
    "delete_utm": campaigns,
    "register_account": account,
    "set_account_activation": account,
    "add_user_property": plan,
    "add_event": plan,
    "update_user_property": plan,
    "update_event": plan,
    "update_event_property": plan,
}


def _operation_subjects() -> list[Subject]:
    subjects = []
    for name, run in _operation_runs().items():
        subjects.append(
            Subject(
                name,
                Layer.OPERATION,
                name,
                run,
                prepare=_PREPARE.get(name, _nothing),
                effects=_EFFECTS.get(name, _nothing),
                streams=name == "export_cohort_users",
                creates=not OPERATIONS[name].idempotent,
            )
        )
        if name == "get_cohort_users":
            subjects.append(
                Subject(
                    "iter_cohort_user_pages", Layer.OPERATION, "get_cohort_users", _cohort_pages
                )
            )
    return subjects


def _create_link(ws: Workspace) -> Any:
    return CreateUtmOperator(
        task_id="create_link",
        page_url="https://shop.example.com/spring",
        utm_campaign="spring_sale",
        utm_medium="cpc",
        utm_source="search",
    ).execute(ws.context())


def _delete_link(ws: Workspace) -> Any:
    return DeleteUtmOperator(task_id="delete_link", campaign_id=ws.notes["campaign"]).execute(
        ws.context()
    )


def _conversion(ws: Workspace) -> Any:
    return UtmConversionOperator(
        task_id="conversion", campaign_id=ws.notes["campaign"], expression="event.purchase"
    ).execute(ws.context())


def _register(ws: Workspace) -> Any:
    return RegisterAccountOperator(
        task_id="register", account_email=ACCOUNT_EMAIL, name="Matrix"
    ).execute(ws.context())


def _disable(ws: Workspace) -> Any:
    return AccountActivationOperator(
        task_id="disable", account_email=ACCOUNT_EMAIL, activation=False
    ).execute(ws.context())


def _export_to_parquet(ws: Workspace) -> Any:
    operator = CohortExportToParquetOperator(
        task_id="export",
        cohort_code=EXPORT_COHORT,
        destination=ws.destination,
        properties=list(EXPORT_COLUMNS),
        attempts=2,
    )
    operator.settings = dataclasses.replace(operator.settings, retry_delay=0.01)
    return operator.execute(ws.context())


def _funnel_report(ws: Workspace) -> Any:
    return FunnelReportOperator(
        task_id="funnel", request=FUNNEL_REQUEST, destination=ws.destination
    ).execute(ws.context())


def _event_report(ws: Workspace) -> Any:
    return EventReportOperator(
        task_id="events", request=EVENT_REQUEST, destination=ws.destination
    ).execute(ws.context())


def _sync_plan(ws: Workspace) -> Any:
    return TrackingPlanSyncOperator(task_id="sync_plan", plan=SYNC_PLAN).execute(ws.context())


def _sense(ws: Workspace) -> Any:
    sensor = AnalyticsDataSensor(task_id="wait", mode="poke", poke_interval=0.05, timeout=2.0)
    return sensor.execute(ws.context())


def _trigger(ws: Workspace) -> Any:
    trigger = AnalyticsDataReadyTrigger(
        "analytics_default", {"from_date": DAY, "to_date": DAY}, poke_interval=0.05
    )

    async def first_event() -> dict[str, Any]:
        async for event in trigger.run():
            return dict(event.payload)
        raise AssertionError("the trigger ended without an event")

    payload = asyncio.run(asyncio.wait_for(first_event(), 30))
    if payload.get("status") != "success":
        raise TriggerErrorEvent(str(payload.get("message")))
    return payload["detail"]


def _operator_subjects() -> list[Subject]:
    export = "CohortExportToParquetOperator"
    sync = "TrackingPlanSyncOperator"
    operator = Layer.OPERATOR
    return [
        *(
            Subject(
                "CreateUtmOperator", operator, target, _create_link, effects=campaigns, creates=True
            )
            for target in ("create_utm", "get_utm")
        ),
        Subject(
            "DeleteUtmOperator",
            operator,
            "delete_utm",
            _delete_link,
            prepare=create_campaign,
            effects=campaigns,
        ),
        Subject(
            "UtmConversionOperator",
            operator,
            "get_utm_conversion",
            _conversion,
            prepare=create_campaign,
        ),
        Subject(
            "RegisterAccountOperator",
            operator,
            "register_account",
            _register,
            effects=account,
            creates=True,
        ),
        Subject(
            "AccountActivationOperator",
            operator,
            "set_account_activation",
            _disable,
            prepare=register_account,
            effects=account,
        ),
        Subject(export, operator, "list_user_properties", _export_to_parquet, writes=True),
        Subject(export, operator, "get_cohort_users", _export_to_parquet, writes=True),
        Subject(
            export, operator, "export_cohort_users", _export_to_parquet, writes=True, streams=True
        ),
        Subject("FunnelReportOperator", operator, "analyze_funnel", _funnel_report, writes=True),
        Subject("EventReportOperator", operator, "analyze_events", _event_report, writes=True),
        Subject(sync, operator, "list_events", _sync_plan, effects=plan),
        Subject(sync, operator, "add_user_property", _sync_plan, effects=plan),
        Subject(sync, operator, "add_event", _sync_plan, effects=plan),
        Subject(sync, operator, "update_event_property", _sync_plan, effects=plan),
        Subject("AnalyticsDataSensor", Layer.SENSOR, "analyze_events", _sense),
        Subject("AnalyticsDataReadyTrigger", Layer.TRIGGER, "analyze_events", _trigger),
    ]


SUBJECTS: Final[tuple[Subject, ...]] = (*_operation_subjects(), *_operator_subjects())
