"""Brute-force reference answers for funnel and event analysis.

Plain Python loops over event dicts, written independently of the emulator's vectorised
engine (it shares only the catalog's data types with it), to check the engine's numbers
and, downstream, the tables the report operators write.

API:

- ``oracle_funnel(events, users, request, *, cohorts=None, data_until=None) -> dict``
- ``oracle_events(events, users, request, *, cohorts=None, data_until=None) -> dict``

``events``: event dicts ``{"user": int, "event": str, "time": "yyyy-MM-dd HH:mm:ss",
"properties": {id: value}}`` (``EventLog.from_records`` shape; ``EventLog.to_records``
gives them for a log). ``users``: user index -> user record as the population returns
it (``{property_id: value}``); missing users or keys read as null, and so do the masked
marker and values of the wrong type. ``request``: a *valid* analysis body (the oracle
does not check requests). ``cohorts``: cohort code -> size (default: the catalog's);
``data_until``: last visible day, None for all. The result is the response body without
``reportUpdateTime``.

The semantics (documented in the emulator's analysis_funnel and analysis_events): events
outside the days, the group, the sample (user % samplingFactor == 0) or the global filter
do not exist; funnels enter a user once at their first step-1 event and walk the steps
greedily, strictly later in time and within the window from step 1; event analyses
aggregate per label combination and series entry, and over the whole range for ``sum``.
"""

from __future__ import annotations

import json
import math
import re
from bisect import bisect_right
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple

from analytics_emulator import catalog

if TYPE_CHECKING:
    from collections.abc import Mapping

UNKNOWN = "未知"
ANY_EVENT = "$Anything"
WINDOW_UNITS = {"DAY": 86_400, "HOUR": 3_600, "MINUTE": 60}
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}( \d{2}:\d{2}:\d{2}(\.\d{3})?)?")


# --- values -------------------------------------------------------------------------


def _event_property_type(prop_id: str) -> str:
    for prop in catalog.GLOBAL_EVENT_PROPERTIES:
        if prop.id == prop_id:
            return prop.data_type
    for event in catalog.EVENTS:
        for prop in event.properties:
            if prop.id == prop_id:
                return prop.data_type
    raise KeyError(prop_id)


def _data_type(expression: str) -> str:
    parts = expression.split(".")
    if parts[0] == "user":
        found = catalog.user_property(parts[1])
        assert found is not None, expression
        return found.data_type
    return _event_property_type(parts[2])


def _parse_datetime(text: str) -> datetime | None:
    if not isinstance(text, str) or not _DATETIME.fullmatch(text):
        return None
    for shape in ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d"):
        try:
            return datetime.strptime(text, shape)
        except ValueError:
            continue
    return None


def _clean(value: Any, data_type: str) -> Any:
    """The value if it has the data type, else None (null, masked marker, wrong type)."""
    if value is None or value == catalog.MASKED_MARKER:
        return None
    if data_type == "number":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
        return value if ok else None
    if data_type == "string":
        return value if isinstance(value, str) else None
    if data_type == "boolean":
        return value if isinstance(value, bool) else None
    if data_type == "datetime":
        return _parse_datetime(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    return None


def _read(expression: str, event: Mapping[str, Any], users: Mapping[int, Mapping[str, Any]]):
    """Value of a property expression at one event (event's own or its user's)."""
    parts = expression.split(".")
    if parts[0] == "user":
        raw = users.get(event["user"], {}).get(parts[1])
    else:
        raw = (event.get("properties") or {}).get(parts[2])
    return _clean(raw, _data_type(expression))


def _label_text(value: Any, data_type: str) -> str:
    if value is None:
        return UNKNOWN
    if data_type == "number":
        if isinstance(value, int):
            return str(value)
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    if data_type == "boolean":
        return "true" if value else "false"
    if data_type == "datetime":
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        return text if value.microsecond == 0 else f"{text}.{value.microsecond // 1000:03d}"
    if data_type == "array<string>":
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return value


def _bound_text(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else repr(float(bound))


def _label(value: Any, data_type: str, buckets: list[float] | None) -> tuple[str, tuple]:
    """(label, sort key) of a split value; see the engine's analysis_splits for the rules."""
    if value is None:
        return UNKNOWN, (1, 0)
    if buckets:
        index = bisect_right(buckets, value)
        low = "-∞" if index == 0 else _bound_text(buckets[index - 1])
        high = "+∞" if index == len(buckets) else _bound_text(buckets[index])
        return f"{low}~{high}", (0, index)
    text = _label_text(value, data_type)
    if text == UNKNOWN:
        return text, (1, 0)
    if data_type in ("number", "datetime", "boolean"):
        return text, (0, value)
    return text, (0, text)


# --- filters ------------------------------------------------------------------------


def _number(param: Any) -> float:
    if isinstance(param, str):
        text = param.strip()
        return int(text) if re.fullmatch(r"[+-]?\d+", text) else float(text)
    return param


def _time_bound(text: str, upper: bool) -> datetime:
    moment = _parse_datetime(text)
    assert moment is not None, text
    if upper and len(text) == 10:
        return moment + timedelta(days=1) - timedelta(milliseconds=1)
    return moment


def _holds(condition: Mapping[str, Any], value: Any, data_type: str) -> bool:
    function = condition["function"]
    params = list(condition.get("params") or [])
    if data_type == "number" and function != "ABSOLUTE_TIME":
        params = [_number(p) for p in params]
    if function == "NULL":
        return value is None
    if function == "NOT_NULL":
        return value is not None
    if function == "EMPTY":
        return value is None or len(value) == 0
    if function == "NOT_EMPTY":
        return value is not None and len(value) > 0
    if function == "NOT_EQ":
        return not _holds({**condition, "function": "EQ"}, value, data_type)
    if function == "NOT_CONTAIN":
        return not _holds({**condition, "function": "CONTAIN"}, value, data_type)
    if value is None:
        return False
    if function == "EQ":
        if data_type == "array<string>":
            return len(value) > 0 and value[0] in params
        return any(value == p for p in params)
    if function == "CONTAIN":
        return params[0] in value
    if function == "TRUE":
        return value is True
    if function == "FALSE":
        return value is False
    if function == "GT":
        return value > params[0]
    if function == "GTE":
        return value >= params[0]
    if function == "LT":
        return value < params[0]
    if function == "LTE":
        return value <= params[0]
    if function == "RANGE":
        return params[0] <= value <= params[1]
    if function == "ABSOLUTE_TIME":
        return _time_bound(params[0], False) <= value <= _time_bound(params[1], True)
    raise ValueError(f"unknown function {function}")


def _passes(flt: Mapping[str, Any] | None, event, users) -> bool:
    if not flt or not flt.get("conditions"):
        return True
    results = [
        _holds(c, _read(c["expression"], event, users), _data_type(c["expression"]))
        for c in flt["conditions"]
    ]
    if str(flt.get("relation") or "AND").upper() == "OR":
        return any(results)
    return all(results)


# --- common scope -------------------------------------------------------------------


def _moment(event: Mapping[str, Any]) -> datetime:
    return datetime.strptime(event["time"], "%Y-%m-%d %H:%M:%S")


def _days(request: Mapping[str, Any]) -> list[date]:
    first = date.fromisoformat(request["fromDate"])
    last = date.fromisoformat(request["toDate"])
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


def _visible(events, users, request, cohorts, data_until) -> list[dict[str, Any]]:
    """Visible events sorted by time (ties keep their given order), with parsed times."""
    days = _days(request)
    last = days[-1] if data_until is None else min(days[-1], data_until)
    crowd = request["crowds"][0]
    size = None if crowd == catalog.ALL_USERS else (cohorts or catalog.COHORTS)[crowd]
    k = int(request.get("samplingFactor") or 1)
    out = []
    for event in events:
        moment = _moment(event)
        user = event["user"]
        if not (days[0] <= moment.date() <= last):
            continue
        if (size is not None and user >= size) or user % k != 0:
            continue
        if not _passes(request.get("filter"), event, users):
            continue
        out.append({**event, "_moment": moment})
    out.sort(key=lambda e: e["_moment"])
    return out


def _matches_event(expression: str, event: Mapping[str, Any]) -> bool:
    event_id = expression.split(".")[1]
    return event_id == ANY_EVENT or event["event"] == event_id


# --- funnel -------------------------------------------------------------------------


class Journey(NamedTuple):
    """One entered user: entry day column, the events that reached each step, split label."""

    column: int
    reached: list[dict[str, Any]]
    label: str
    sort_key: tuple


def _walk(user_events, steps, window: int, users):
    """The events that took one user through the steps (greedy), or [] if never entered."""
    reached: list[dict[str, Any]] = []
    for index, step in enumerate(steps):
        for event in user_events:
            if not _matches_event(step["expression"], event):
                continue
            if not _passes(step.get("filter"), event, users):
                continue
            if index > 0:
                if event["_moment"] <= reached[-1]["_moment"]:
                    continue
                if (event["_moment"] - reached[0]["_moment"]).total_seconds() > window:
                    continue
            reached.append(event)
            break
        else:
            return reached
    return reached


def oracle_funnel(
    events: list[Mapping[str, Any]],
    users: Mapping[int, Mapping[str, Any]],
    request: Mapping[str, Any],
    *,
    cohorts: Mapping[str, int] | None = None,
    data_until: date | None = None,
) -> dict[str, Any]:
    """Funnel response body (no reportUpdateTime) by brute force; see the module docstring."""
    days = _days(request)
    visible = _visible(events, users, request, cohorts, data_until)
    steps = request["steps"]
    window = WINDOW_UNITS["DAY"]
    if request.get("convertTime") is not None:
        window = int(request["convertTime"]) * WINDOW_UNITS[request["convertTimeUnit"]]
    by_field = request.get("byField")
    step_index = request.get("byStepIndex")
    step_index = 0 if step_index is None or step_index == -1 else step_index

    per_user: dict[int, list[dict[str, Any]]] = {}
    for event in visible:
        per_user.setdefault(event["user"], []).append(event)
    journeys: list[Journey] = []
    for user in sorted(per_user):
        reached = _walk(per_user[user], steps, window, users)
        if not reached:
            continue
        label, key = UNKNOWN, (1, 0)
        if by_field:
            expression = by_field["expression"]
            data_type = _data_type(expression)
            if expression.startswith("user."):
                value = _clean(users.get(user, {}).get(expression[5:]), data_type)
            elif step_index < len(reached):
                value = _read(expression, reached[step_index], users)
            else:
                value = None
            label, key = _label(value, data_type, by_field.get("buckets") or None)
        column = days.index(reached[0]["_moment"].date()) + 1
        journeys.append(Journey(column, reached, label, key))

    labels: list[str] = []
    if by_field:
        sizes: dict[str, list] = {}
        for journey in journeys:
            sizes.setdefault(journey.label, [0, journey.sort_key])[0] += 1
        labels = sorted(sizes, key=lambda lb: (-sizes[lb][0], sizes[lb][1]))
        if request.get("limit") is not None:
            labels = labels[: int(request["limit"])]

    width = len(days) + 1
    rows = []
    for by_value in ["-1", *labels]:
        members = [j for j in journeys if by_value in ("-1", j.label)]
        details = []
        for index, step in enumerate(request["steps"]):
            counts = [0] * width
            for member in members:
                if len(member.reached) > index:
                    counts[0] += 1
                    counts[member.column] += 1
            details.append({"expression": step["expression"], "convertedUser": counts})
        medians = []
        for index in range(len(request["steps"]) - 1):
            seconds: list[list[int]] = [[] for _ in range(width)]
            for member in members:
                if len(member.reached) > index + 1:
                    after, before = member.reached[index + 1], member.reached[index]
                    delta = int((after["_moment"] - before["_moment"]).total_seconds())
                    seconds[0].append(delta)
                    seconds[member.column].append(delta)
            median = [_floor_median(s) for s in seconds]
            pair = [request["steps"][index], request["steps"][index + 1]]
            medians.append(
                {
                    "stepsExpress": "~".join(s["expression"][len("event.") :] for s in pair),
                    "median": None if median[0] is None else median,
                }
            )
        rows.append({"byValue": by_value, "stepsDetail": details, "medianConvertedTime": medians})
    return {
        "dateList": ["$ALL", *(d.strftime("%Y/%m/%d 00:00:00") for d in days)],
        "byField": by_field["expression"] if by_field else "",
        "byValues": ["-1", *labels],
        "stepEvents": [s["expression"] for s in request["steps"]],
        "rows": rows,
    }


def _floor_median(values: list[int]) -> int | None:
    if not values:
        return None
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) // 2


# --- event analysis -----------------------------------------------------------------


def _series(request: Mapping[str, Any]) -> tuple[list[str], Any]:
    """Series labels and a function event -> label."""
    unit = request.get("unit") or "DAY"
    days = _days(request)
    if unit == "HOUR":
        labels = [f"{days[0].isoformat()} {h:02d}:00" for h in range(24)]
        return labels, lambda e: f"{e['_moment'].date().isoformat()} {e['_moment'].hour:02d}:00"
    if unit == "DAY":
        return [d.isoformat() for d in days], lambda e: e["_moment"].date().isoformat()
    if unit == "WEEK":

        def monday(day: date) -> str:
            return (day - timedelta(days=day.weekday())).isoformat()

        return sorted({monday(d) for d in days}), lambda e: monday(e["_moment"].date())

    def month(day: date) -> str:
        return day.replace(day=1).isoformat()

    return sorted({month(d) for d in days}), lambda e: month(e["_moment"].date())


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _aggregate(aggregator: str, hits: list[tuple[int, Any]]) -> Any:
    """One measure over (user, value) pairs of the events it counts."""
    users = {user for user, _value in hits}
    values = [value for _user, value in hits if value is not None]
    if aggregator == "TOTAL_COUNT":
        return len(hits)
    if aggregator == "TRIGGER_USER_COUNT":
        return len(users)
    if aggregator == "AVG_COUNT":
        return len(hits) / len(users) if users else 0.0
    if aggregator == "REMOVE_DUMPLICATE":
        return len({_hashable(v) for v in values})
    total = float(sum(values))
    if aggregator == "SUM":
        return total
    if aggregator == "AVG":
        return total / len(values) if values else 0.0
    if aggregator == "AVG_PER":
        return total / len(users) if users else 0.0
    if aggregator == "MAX":
        return float(max(values)) if values else 0.0
    if aggregator == "MIN":
        return float(min(values)) if values else 0.0
    raise ValueError(f"unknown aggregator {aggregator}")


def oracle_events(
    events: list[Mapping[str, Any]],
    users: Mapping[int, Mapping[str, Any]],
    request: Mapping[str, Any],
    *,
    cohorts: Mapping[str, int] | None = None,
    data_until: date | None = None,
) -> dict[str, Any]:
    """Event analysis body (no reportUpdateTime) by brute force; see the module docstring."""
    visible = _visible(events, users, request, cohorts, data_until)
    series_labels, series_of = _series(request)
    fields = list(request.get("byFields") or [])
    measures = request["measures"]

    counted: list[tuple[int, tuple, str, dict]] = []  # (measure, row labels, series, event)
    keys: dict[tuple, tuple] = {}
    for event in visible:
        row = []
        row_key = []
        for field in fields:
            data_type = _data_type(field["expression"])
            value = _read(field["expression"], event, users)
            label, key = _label(value, data_type, field.get("buckets") or None)
            row.append(label)
            row_key.append(key)
        for index, measure in enumerate(measures):
            parts = measure["expression"].split(".")
            if not _matches_event(f"event.{parts[1]}", event):
                continue
            if not _passes(measure.get("filter"), event, users):
                continue
            counted.append((index, tuple(row), series_of(event), event))
            keys[tuple(row)] = tuple(row_key)

    row_labels = sorted(keys, key=lambda r: keys[r]) if fields else [()]
    out_rows = []
    for row in row_labels:
        values, sums = [], []
        for index, measure in enumerate(measures):
            parts = measure["expression"].split(".")

            def value_at(event, parts=parts):
                return _read(".".join(parts), event, users) if len(parts) == 3 else None

            mine = [(s, e) for m, r, s, e in counted if m == index and r == row]
            per_series = []
            for label in series_labels:
                hits = [(e["user"], value_at(e)) for s, e in mine if s == label]
                per_series.append(_aggregate(measure["aggregator"], hits))
            values.append(per_series)
            sums.append(
                _aggregate(measure["aggregator"], [(e["user"], value_at(e)) for _s, e in mine])
            )
        out_rows.append({"byValue": list(row), "values": values, "sum": sums})
    return {
        "measures": [m["expression"] for m in measures],
        "byFields": [f["expression"] for f in fields],
        "series": series_labels,
        "rows": out_rows,
        "numRows": len(out_rows),
    }


# --- helpers for comparing with the engine ------------------------------------------


class UsersPopulation:
    """The oracle's ``users`` mapping behind the population interface the engine reads.

    :param users: user index -> user record (``{property_id: value}``).
    """

    def __init__(self, users: Mapping[int, Mapping[str, Any]]) -> None:
        self.users = users

    def records(self, start: int, stop: int, properties: list[str]) -> list[dict[str, Any]]:
        return [
            {prop: self.users.get(user, {}).get(prop) for prop in properties}
            for user in range(start, stop)
        ]


def differences(actual: Any, expected: Any, path: str = "$") -> list[str]:
    """Where two response bodies differ; floats compare with a relative tolerance of 1e-9.

    :returns: one ``path: actual != expected`` line per difference (empty when equal).
    """
    if isinstance(actual, float) or isinstance(expected, float):
        numbers = all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in (actual, expected)
        )
        if numbers and math.isclose(actual, expected, rel_tol=1e-9, abs_tol=1e-9):
            return []
        return [f"{path}: {actual!r} != {expected!r}"]
    if isinstance(actual, dict) and isinstance(expected, dict):
        if actual.keys() != expected.keys():
            return [f"{path}: keys {sorted(actual)} != {sorted(expected)}"]
        return [d for k in actual for d in differences(actual[k], expected[k], f"{path}.{k}")]
    if isinstance(actual, list) and isinstance(expected, list):
        if len(actual) != len(expected):
            return [f"{path}: length {len(actual)} != {len(expected)}: {actual!r} != {expected!r}"]
        return [
            d
            for i, (a, e) in enumerate(zip(actual, expected, strict=True))
            for d in differences(a, e, f"{path}[{i}]")
        ]
    if type(actual) is not type(expected) or actual != expected:
        return [f"{path}: {actual!r} != {expected!r}"]
    return []
