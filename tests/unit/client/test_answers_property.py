"""Property tests of the declared answers: valid JSON with hostile meaning.

For every answer type, Hypothesis builds a sound answer and then spoils it: a value
replaced by a numeric string, a boolean, NaN, Infinity, a negative, a fraction, a huge
number, null, a list or an object; an entry repeated or dropped. Each answer must then be
either refused by name (``AnswerShapeError`` naming the operation and a field), or give
exactly what an independent reference, written below without the package's code, gives.

The references read the spec's rules plainly, one value at a time.
"""

from __future__ import annotations

import copy
import datetime as dt
import math
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_provider_analytics.client.answers import AnswerShapeError, decode
from airflow_provider_analytics.client.data_ready import DataReadyCheck
from airflow_provider_analytics.reports.event_frame import event_table
from airflow_provider_analytics.reports.funnel_frame import funnel_table

HOSTILE = (
    "7",
    "1e3",
    True,
    False,
    None,
    -3,
    2.5,
    math.nan,
    math.inf,
    -math.inf,
    10**30,
    [],
    {},
    "",
)
DAY_FORMATS = ("%Y-%m-%d", "%Y-%m-%d 00:00:00", "%Y/%m/%d 00:00:00")
FIRST_DAY = dt.date(2024, 3, 1)


class Refused(Exception):
    """The reference's verdict: this answer must be refused."""


def refuse(why: str) -> Any:
    raise Refused(why)


# The reference's reading of single values


def is_count(value: Any) -> bool:
    """A JSON integer from 0 to the largest int64."""
    return type(value) is int and 0 <= value <= 2**63 - 1


def is_number(value: Any) -> bool:
    """A finite number; an integer only within +-2**53, where a double holds it exactly."""
    return (type(value) is int and abs(value) <= 2**53) or (
        type(value) is float and math.isfinite(value)
    )


def is_label(value: Any) -> bool:
    """A split value or label: text, any JSON integer, a finite number, or null."""
    return value is None or type(value) in (str, int) or is_number(value)


def label_of(value: Any) -> str | None:
    return value if value is None or type(value) is str else str(value)


def day_of(label: Any, *, whole_day: bool) -> dt.datetime:
    """The moment a date label names, by the forms the platform writes."""
    if type(label) is not str:
        refuse("a date that is not text")
    forms = {
        r"\d{4}-\d{2}-\d{2}": "%Y-%m-%d",
        r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}": "%Y-%m-%d %H:%M",
        r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}": "%Y-%m-%d %H:%M:%S",
        r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{1,6}": "%Y-%m-%d %H:%M:%S.%f",
        r"\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}": "%Y/%m/%d %H:%M:%S",
    }
    for pattern, form in forms.items():
        if re.fullmatch(pattern, label):
            try:
                moment = dt.datetime.strptime(label, form)
            except ValueError:
                break
            if whole_day and moment.time() != dt.time():
                refuse("a funnel date with a time of day")
            return moment
    return refuse("a date in no accepted form")


def a_list(value: Any, length: int | None = None) -> list[Any]:
    if type(value) is not list:
        refuse("not a list")
    if length is not None and len(value) != length:
        refuse("a length that disagrees")
    return value


def an_object(value: Any) -> dict[str, Any]:
    return value if type(value) is dict else refuse("not an object")


def optional_text(value: Any) -> str | None:
    return value if value is None or type(value) is str else refuse("not text")


# Spoiling a sound answer


def leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every position in a JSON value (objects' keys and lists' indexes), the root last."""
    found: list[tuple[Any, ...]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            found += leaves(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += leaves(item, (*path, index))
    found.append(path)
    return found


def lists_in(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    return [p for p in leaves(value, path) if isinstance(at(value, p), list) and at(value, p)]


def at(value: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        value = value[part]
    return value


@st.composite
def spoiled(draw: st.DrawFn, sound: Any) -> Any:
    """``sound``, or ``sound`` with one value replaced, or one list entry repeated or dropped."""
    answer = copy.deepcopy(sound)
    kind = draw(st.sampled_from(("none", "replace", "replace", "repeat", "drop")))
    if kind == "replace":
        path = draw(st.sampled_from(leaves(answer)))
        value = draw(st.sampled_from(HOSTILE))
        if not path:
            return value
        at(answer, path[:-1])[path[-1]] = value
    elif kind in {"repeat", "drop"} and lists_in(answer):
        target = at(answer, draw(st.sampled_from(lists_in(answer))))
        index = draw(st.integers(0, len(target) - 1))
        if kind == "repeat":
            target.insert(index, copy.deepcopy(target[index]))
        else:
            del target[index]
    return answer


# Funnel answers


@st.composite
def funnel_answers(draw: st.DrawFn) -> dict[str, Any]:
    n_steps = draw(st.integers(1, 3))
    n_days = draw(st.integers(0, 3))
    form = draw(st.sampled_from(DAY_FORMATS))
    dates = [(FIRST_DAY + dt.timedelta(days=n)).strftime(form) for n in range(n_days)]
    date_list = (["$ALL"] if draw(st.booleans()) else []) + dates
    steps = [f"event.e{n}" for n in range(n_steps)]
    split = draw(st.lists(st.sampled_from(["-1", "北京", "上海", "x"]), max_size=3, unique=True))
    count = st.integers(0, 10**6)
    rows = []
    for value in split:
        rows.append(
            {
                "byValue": value,
                "stepsDetail": [
                    {
                        "expression": step,
                        "convertedUser": draw(
                            st.lists(count, min_size=len(date_list), max_size=len(date_list))
                        ),
                    }
                    for step in steps
                ],
                "medianConvertedTime": [
                    {
                        "stepsExpress": f"e{n}~e{n + 1}",
                        "median": draw(
                            st.none()
                            | st.lists(
                                st.none() | count, min_size=len(date_list), max_size=len(date_list)
                            )
                        ),
                    }
                    for n in range(n_steps - 1)
                ],
            }
        )
    return {
        "dateList": date_list,
        "byField": "user.city",
        "byValues": split,
        "stepEvents": steps,
        "rows": rows,
        "reportUpdateTime": "2024-03-05 10:00:00",
    }


def reference_funnel(answer: Any) -> list[tuple[Any, ...]]:
    """(split value, day, step number, users) per output row, in the table's order."""
    answer = an_object(answer)
    labels = a_list(answer.get("dateList"))
    if len(set(map(repr, labels))) != len(labels):
        refuse("a repeated date label")
    days = [None if label == "$ALL" else day_of(label, whole_day=True).date() for label in labels]
    real_days = [day for day in days if day is not None]
    if len(set(real_days)) != len(real_days):
        refuse("one day in two forms")
    rows = [an_object(row) for row in a_list(answer.get("rows"))]
    by_values = answer.get("byValues")
    if by_values is not None and not all(is_label(v) for v in a_list(by_values, len(rows))):
        refuse("a split value of the wrong type")
    if not is_label(answer.get("byField")):
        refuse("byField")
    optional_text(answer.get("reportUpdateTime"))
    step_events = answer.get("stepEvents")
    if step_events is not None:
        steps = [value if type(value) is str else refuse("a step") for value in a_list(step_events)]
    elif rows:
        details = [an_object(detail) for detail in a_list(rows[0].get("stepsDetail"))]
        steps = [str(optional_text(detail.get("expression"))) for detail in details]
    else:
        steps = []
    table = []
    for position, row in enumerate(rows):
        if "byValue" in row:
            if not is_label(row["byValue"]):
                refuse("byValue")
            label = label_of(row["byValue"])
            if by_values is not None and label_of(by_values[position]) != label:
                refuse("byValue and byValues disagree")
        else:
            label = None if by_values is None else label_of(by_values[position])
        details = [an_object(detail) for detail in a_list(row.get("stepsDetail"), len(steps))]
        users = []
        for detail, step in zip(details, steps, strict=True):
            expression = optional_text(detail.get("expression"))
            if expression is not None and expression.removeprefix("event.") != step.removeprefix(
                "event."
            ):
                refuse("a step named differently")
            counts = a_list(detail.get("convertedUser"), len(labels))
            users.append([value if is_count(value) else refuse("a count") for value in counts])
        medians = row.get("medianConvertedTime")
        if medians is not None:
            for pair, entry in enumerate(a_list(medians, max(len(steps) - 1, 0))):
                entry = an_object(entry)
                express = optional_text(entry.get("stepsExpress"))
                if express is not None:
                    left, tilde, right = express.partition("~")
                    if (
                        not tilde
                        or left.strip().removeprefix("event.") != steps[pair].removeprefix("event.")
                        or right.strip().removeprefix("event.")
                        != steps[pair + 1].removeprefix("event.")
                    ):
                        refuse("a step pair named differently")
                median = entry.get("median")
                if median is not None:
                    for value in a_list(median, len(labels)):
                        if value is not None and not is_count(value):
                            refuse("a median")
        for date_index, day in enumerate(days):
            for step in range(len(steps)):
                table.append((label, day, step + 1, users[step][date_index]))
    return table


@given(funnel_answers().flatmap(spoiled))
def test_a_funnel_answer_is_refused_by_name_or_read_as_the_reference_reads_it(answer: Any) -> None:
    try:
        expected = reference_funnel(answer)
    except Refused:
        with pytest.raises(AnswerShapeError, match=r"^analyze_funnel: \S"):
            funnel_table(answer)
        return
    table = funnel_table(answer).to_pydict()
    got = list(
        zip(
            table["by_value"],
            table["date"],
            table["step_number"],
            table["converted_users"],
            strict=True,
        )
    )
    assert got == expected


# Event answers

AGGREGATORS = ("TRIGGER_USER_COUNT", "TOTAL_COUNT", "AVG_COUNT", "REMOVE_DUMPLICATE", "SUM", "AVG")


@st.composite
def event_cases(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    aggregators = draw(st.lists(st.sampled_from(AGGREGATORS), min_size=1, max_size=3))
    n_fields = draw(st.integers(0, 2))
    n_days = draw(st.integers(0, 3))
    form = draw(st.sampled_from(("%Y-%m-%d", "%Y-%m-%d %H:%M:%S", "%Y/%m/%d %H:%M:%S")))
    series = [(FIRST_DAY + dt.timedelta(days=n)).strftime(form) for n in range(n_days)]
    request = {
        "measures": [{"expression": "event.e", "aggregator": a} for a in aggregators],
        "crowds": ["$ALL"],
        "fromDate": FIRST_DAY.isoformat(),
        "toDate": (FIRST_DAY + dt.timedelta(days=5)).isoformat(),
        "byFields": [{"expression": f"user.p{n}"} for n in range(n_fields)],
    }

    def number(aggregator: str) -> st.SearchStrategy[Any]:
        if aggregator in {"TRIGGER_USER_COUNT", "TOTAL_COUNT", "REMOVE_DUMPLICATE"}:
            return st.none() | st.integers(0, 10**9)
        return st.none() | st.integers(-(10**6), 10**6) | st.floats(-1e6, 1e6, allow_nan=False)

    rows = []
    for split in range(draw(st.integers(0, 3))):
        rows.append(
            {
                "byValue": [f"v{split}"] * n_fields,
                "values": [
                    draw(st.lists(number(a), min_size=n_days, max_size=n_days)) for a in aggregators
                ],
                "sum": [draw(number(a)) for a in aggregators],
            }
        )
    answer = {
        "measures": [f"m{n}" for n in range(len(aggregators))],
        "byFields": [f"user.p{n}" for n in range(n_fields)],
        "series": series,
        "rows": rows,
        "numRows": len(rows),
    }
    return request, answer


def reference_events(answer: Any, request: dict[str, Any]) -> list[tuple[Any, ...]]:
    """(row, measure, period or None for the total, count, value) per output row."""
    aggregators = [measure["aggregator"] for measure in request["measures"]]
    counting = [
        a in {"TRIGGER_USER_COUNT", "TOTAL_COUNT", "REMOVE_DUMPLICATE"} for a in aggregators
    ]
    n_fields = len(request["byFields"])
    first = dt.date.fromisoformat(request["fromDate"])
    last = dt.date.fromisoformat(request["toDate"])
    answer = an_object(answer)
    labels = answer.get("measures")
    if labels is not None and not all(is_label(m) for m in a_list(labels, len(aggregators))):
        refuse("a measure label")
    if answer.get("byFields") is not None:
        for field in a_list(answer["byFields"], n_fields):
            if type(field) is not str:
                refuse("a split field")
    if answer.get("numRows") is not None and not is_count(answer["numRows"]):
        refuse("numRows")
    optional_text(answer.get("reportUpdateTime"))
    starts = [day_of(label, whole_day=False) for label in a_list(answer.get("series"))]
    if len(set(starts)) != len(starts):
        refuse("a repeated period")
    if any(not first <= start.date() <= last for start in starts):
        refuse("a period outside the request")
    table = []
    for position, row in enumerate(a_list(answer.get("rows"))):
        row = an_object(row)
        by_value = row.get("byValue", [])
        if not all(is_label(v) for v in a_list(by_value, n_fields)):
            refuse("a split value")
        values = a_list(row.get("values"), len(aggregators))
        totals = row.get("sum")
        totals = [None] * len(aggregators) if totals is None else a_list(totals, len(aggregators))
        for measure, (cells, total) in enumerate(zip(values, totals, strict=True)):
            cells = a_list(cells, len(starts))
            for period, value in enumerate([*cells, total]):
                if value is None:
                    pass
                elif not is_number(value) or (counting[measure] and not is_count(value)):
                    refuse("a number")
                count = value if counting[measure] else None
                amount = None if counting[measure] or value is None else float(value)
                table.append(
                    (position, measure, None if period == len(cells) else period, count, amount)
                )
    return table


@given(event_cases().flatmap(lambda case: spoiled(case[1]).map(lambda answer: (case[0], answer))))
def test_an_event_answer_is_refused_by_name_or_read_as_the_reference_reads_it(
    case: tuple[dict[str, Any], Any],
) -> None:
    request, answer = case
    try:
        expected = reference_events(answer, request)
    except Refused:
        with pytest.raises(AnswerShapeError, match=r"^analyze_events: \S"):
            event_table(answer, request)
        return
    table = event_table(answer, request).to_pydict()
    n_series = len(answer["series"])
    periods = [
        None if total else index % (n_series + 1) for index, total in enumerate(table["is_total"])
    ]
    rows = [index // ((n_series + 1) * len(request["measures"])) for index in range(len(periods))]
    got = list(
        zip(rows, table["measure_index"], periods, table["count"], table["value"], strict=True)
    )
    assert got == expected


# The data-ready check


@st.composite
def readiness_cases(draw: st.DrawFn) -> tuple[DataReadyCheck, Any]:
    n_days = draw(st.integers(1, 3))
    threshold = draw(st.integers(1, 5))
    check = DataReadyCheck(
        FIRST_DAY.isoformat(),
        (FIRST_DAY + dt.timedelta(days=n_days - 1)).isoformat(),
        threshold=threshold,
    )
    listed = draw(st.lists(st.integers(0, n_days - 1), max_size=n_days, unique=True))
    form = draw(st.sampled_from(DAY_FORMATS))
    series = [(FIRST_DAY + dt.timedelta(days=n)).strftime(form) for n in sorted(listed)]
    values = draw(
        st.lists(st.none() | st.integers(0, 9), min_size=len(series), max_size=len(series))
    )
    rows = (
        [{"byValue": [], "values": [values], "sum": [None]}]
        if draw(st.booleans()) or series
        else []
    )
    answer = {"measures": ["event.$Anything.total"], "series": series, "rows": rows}
    return check, draw(spoiled(answer))


def reference_readiness(check: DataReadyCheck, answer: Any) -> bool:
    first = dt.date.fromisoformat(check.from_date)
    days = [
        first + dt.timedelta(days=n)
        for n in range((dt.date.fromisoformat(check.to_date) - first).days + 1)
    ]
    answer = an_object(answer)
    if answer.get("measures") is not None and not all(
        is_label(m) for m in a_list(answer["measures"], 1)
    ):
        refuse("a measure label")
    if answer.get("byFields") not in (None, []):
        refuse("a split field")
    starts = [day_of(label, whole_day=False) for label in a_list(answer.get("series"))]
    if len(set(starts)) != len(starts) or len({s.date() for s in starts}) != len(starts):
        refuse("a day twice")
    if any(start.date() not in days for start in starts):
        refuse("a day outside the window")
    rows = [an_object(row) for row in a_list(answer.get("rows"))]
    if len(rows) > 1:
        refuse("more than one row")
    found: dict[dt.date, int | None] = {}
    for row in rows:
        if not all(is_label(v) for v in a_list(row.get("byValue", []), 0)):
            refuse("a split value")
        (values,) = a_list(row.get("values"), 1)
        totals = row.get("sum")
        for value in [*a_list(values, len(starts)), *([] if totals is None else a_list(totals, 1))]:
            if value is not None and not is_count(value):
                refuse("a count")
        found = {start.date(): value for start, value in zip(starts, values, strict=True)}
    return all(found.get(day) is not None and found[day] >= check.threshold for day in days)


@given(readiness_cases())
def test_readiness_is_refused_by_name_or_judged_as_the_reference_judges(
    case: tuple[DataReadyCheck, Any],
) -> None:
    check, answer = case
    try:
        expected = reference_readiness(check, answer)
    except Refused:
        with pytest.raises(AnswerShapeError, match=r"^analyze_events: \S"):
            check.evaluate(answer)
        return
    assert check.evaluate(answer).ready is expected


# The small answers: the plan listings, a created link, a registered account, a page


PLAN_EVENT = {"id": "buy", "name": "Buy", "plan": 1, "dataStatus": 0, "preset": 0, "enable": 1}
USER_PROPERTY = {**PLAN_EVENT, "id": "age", "dataType": "number", "visible": 1, "masking": 0}
SMALL = {
    "list_events": [PLAN_EVENT, {**PLAN_EVENT, "id": "view"}],
    "list_user_properties": [USER_PROPERTY],
    "create_utm": {"success": 0, "campaignId": 12345},
    "register_account": {"userId": 7, "email": "a@b.io"},
    "get_cohort_users": {"count": 3, "page": 1, "size": 2, "users": [{"x": 1}, {"x": 2}]},
    "delete_utm": {"success": 0},
    "list_event_properties": [{**USER_PROPERTY, "id": "$url", "global": 1, "remark": None}],
    "get_utm_conversion": {"success": 0, "rows": [1, 2]},
    "export_cohort_users": {"code": 500, "msg": "internal error", "data": None},
    "get_utm": {
        "id": 1,
        "campaignId": "1001",
        "pageUrl": "https://a.io",
        "url": "https://a.io/?c=1",
        "shortUrl": None,
        "userId": 3,
        "status": 1,
        "createTime": 1_561_939_200_000,
        "remarks": "",
    },
}
COMMON_FLAGS = {"plan", "dataStatus", "preset", "enable"}
FLAGS = {  # the spec's 0/1 fields of each listing (2.3, 2.2, 2.4); others are kept as sent
    "list_events": COMMON_FLAGS,
    "list_user_properties": COMMON_FLAGS | {"visible", "dict", "masking"},
    "list_event_properties": COMMON_FLAGS | {"global", "dict", "masking"},
}
UTM_TEXTS = [
    "utmType",
    "callbackUrl",
    "utmCampaign",
    "utmMedium",
    "utmSource",
    "utmContent",
    "utmTerm",
    "shortUrl",
    "remarks",
    "appKey",
    "uniqueSign",
]
UTM_INTEGERS = ("id", "userId", "status", "canOperated")
UTM_MILLIS = ("createTime", "updateTime")


def reference_small(operation: str, answer: Any) -> None:
    """Refuses what the spec's fields forbid; returns when the answer fits."""
    if operation in {"list_events", "list_user_properties", "list_event_properties"}:
        ids = []
        for item in a_list(answer):
            item = an_object(item)
            if type(item.get("id")) is not str or not item["id"]:
                refuse("id")
            ids.append(item["id"])
            optional_text(item.get("name"))
            for flag in FLAGS[operation] & item.keys():
                if item[flag] is not None and (
                    type(item[flag]) is not int or item[flag] not in (0, 1)
                ):
                    refuse("a flag")
            if operation == "list_event_properties":
                optional_text(item.get("remark"))
            if operation != "list_events" and item.get("dataType") not in (
                "string",
                "number",
                "boolean",
                "datetime",
                "array<string>",
            ):
                refuse("dataType")
        if len(set(ids)) != len(ids):
            refuse("an id twice")
    elif operation == "create_utm":
        answer = an_object(answer)
        if answer.get("success", "missing") != 0 or type(answer["success"]) is not int:
            refuse("success")
        campaign = answer.get("campaignId")
        if not ((type(campaign) is int and campaign >= 0) or (type(campaign) is str and campaign)):
            refuse("campaignId")
    elif operation == "register_account":
        answer = an_object(answer)
        if not (
            type(answer.get("userId")) is int
            or (type(answer.get("userId")) is str and answer["userId"])
        ):
            refuse("userId")
        if type(answer.get("email")) is not str or len(answer["email"]) < 3:
            refuse("email")
    elif operation == "get_cohort_users":
        answer = an_object(answer)
        if not is_count(answer.get("count")):
            refuse("count")
        page = answer.get("page")
        if page is not None and (type(page) is not int or page < 1):
            refuse("page")
        users = [an_object(user) for user in a_list(answer.get("users"))]
        size = answer.get("size")
        if size is not None and (not is_count(size) or size != len(users)):
            refuse("size")
        if len(users) > answer["count"]:
            refuse("more users than count")
    elif operation == "delete_utm":
        answer = an_object(answer)
        if answer.get("success", "missing") != 0 or type(answer["success"]) is not int:
            refuse("success")
    elif operation == "get_utm_conversion":
        answer = an_object(answer)
        success = answer.get("success")
        if success is not None and (type(success) is not int or success != 0):
            refuse("success")
    elif operation == "export_cohort_users":
        answer = an_object(answer)
        code = answer.get("code")
        if code is not None and type(code) not in (int, str):
            refuse("code")
        optional_text(answer.get("msg"))
    elif operation == "get_utm":
        answer = an_object(answer)
        campaign = answer.get("campaignId")
        if not (type(campaign) is int or (type(campaign) is str and campaign)):
            refuse("campaignId")
        for key in ("pageUrl", "url"):
            if type(answer.get(key)) is not str:
                refuse(key)
        for key in UTM_TEXTS:
            optional_text(answer.get(key))
        for key in UTM_INTEGERS:
            if answer.get(key) is not None and type(answer[key]) is not int:
                refuse(key)
        for key in UTM_MILLIS:
            if answer.get(key) is not None and not is_count(answer[key]):
                refuse(key)


@given(st.sampled_from(sorted(SMALL)).flatmap(lambda op: spoiled(SMALL[op]).map(lambda a: (op, a))))
def test_a_small_answer_is_refused_by_name_or_accepted_as_the_reference_accepts_it(
    case: tuple[str, Any],
) -> None:
    operation, answer = case
    try:
        reference_small(operation, answer)
    except Refused:
        with pytest.raises(AnswerShapeError, match=rf"^{operation}: \S"):
            decode(operation, answer)
        return
    decode(operation, answer)
