"""The declared answer of every operation (spec sections 2 and 4, ``API_NOTES.md``): every
path that receives an answer decodes it here (:func:`decode`), so an answer of the wrong shape
is refused by name and never becomes a number, a row or a "ready" signal.

Types are strict (no text read as a number, no bool as an integer; counts are JSON integers
>= 0, other numbers finite); undeclared fields are kept; relations between fields, and with
the request (:class:`Asked`), are part of the declaration.
"""

from __future__ import annotations

import datetime as dt
import functools
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, Protocol, TypeVar, cast

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from airflow_provider_analytics.core import strict_json
from airflow_provider_analytics.core.cohort_records import is_error_object
from airflow_provider_analytics.core.errors import (
    AnalyticsOperationFailedError,
    AnalyticsProtocolError,
)
from airflow_provider_analytics.core.redaction import known, remember
from airflow_provider_analytics.core.report_dates import (
    ALL_DATES_LABEL,
    parse_funnel_date,
    parse_report_datetime,
)
from airflow_provider_analytics.core.rules import CAMPAIGN_ID_PATTERN, INT64_MAX, field_path

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from airflow_provider_analytics.core.page_lines import PageParts


class _RelationFault(AnalyticsProtocolError, ValueError):
    """A relation between fields that does not hold (a ``ValueError``, so pydantic reports it
    with the object's location)."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}{problem}")
        self.where = where
        self.problem = problem

    def refused(self, operation: str) -> AnswerShapeError:
        return AnswerShapeError(f"{operation}: {self.where}{self.problem}", operation=operation)


EXACT_IN_A_DOUBLE: Final = 2**53
"""Integers up to this magnitude are exact in a float64 column."""

Count = Annotated[int, Field(ge=0, le=INT64_MAX)]
"""A number of users, events or values (or seconds, or epoch milliseconds): a JSON integer,
never negative, within int64."""
Flag = Annotated[int, Field(ge=0, le=1)]
"""A 0/1 field of the tracking plan (a JSON integer: ``true`` is not 1)."""
Zero = Annotated[int, Field(ge=0, le=0)]
"""``success`` of a carried-out operation (a JSON integer: ``false`` is not 0)."""


def _utf8(text: str) -> str:
    if not text.isascii():
        try:
            text.encode()
        except UnicodeEncodeError as exc:
            raise _RelationFault("", f" holds a lone surrogate at position {exc.start}") from None
    return text


Text = Annotated[str, AfterValidator(_utf8)]
"""Text a table can hold: a lone surrogate (no UTF-8 can carry it) is refused by name."""

FiniteNumber = int | Annotated[float, Field(allow_inf_nan=False)]
"""A finite JSON number; integers stay exact integers (where a table holds them as doubles,
one beyond +-2**53 is refused by name there)."""
Label = Text | int | Annotated[float, Field(allow_inf_nan=False)] | None
"""A split value as the platform writes it (text, sometimes a number)."""

DataType = Literal["string", "number", "boolean", "datetime", "array<string>"]
"""The plan's data types (spec 2.5)."""

COUNTING_AGGREGATORS: Final = frozenset({"TRIGGER_USER_COUNT", "TOTAL_COUNT", "REMOVE_DUMPLICATE"})
"""Event-analysis aggregators whose numbers are counts (users, events, distinct values)."""


class AnswerShapeError(AnalyticsProtocolError, ValueError):
    """An answer does not fit its operation's declaration; the message names the field."""


class HttpAnswer(Protocol):
    """What is read from an answer: ``requests`` and ``httpx`` responses both fit."""

    @property
    def status_code(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def content(self) -> bytes: ...


@dataclass(frozen=True)
class Asked:
    """What the request asked, for the relations an answer must keep with it.

    :param from_date: first day asked (``yyyy-MM-dd``).
    :param to_date: last day asked.
    :param steps: funnel steps asked.
    :param aggregators: event-analysis aggregators asked, by measure position.
    :param split_fields: event-analysis ``byFields`` asked.
    :param page: cohort page asked.
    :param page_size: cohort page size asked.
    :param limit: most cohort users asked (bounds an unpaged answer).
    :param campaign_id: ad tracking record asked.
    """

    from_date: str | None = None
    to_date: str | None = None
    steps: int | None = None
    aggregators: tuple[str, ...] | None = None
    split_fields: int | None = None
    page: int | None = None
    page_size: int | None = None
    limit: int | None = None
    campaign_id: str | None = None


def _asked(info: ValidationInfo) -> Asked:
    context = info.context
    return context if isinstance(context, Asked) else Asked()


def _within(day: dt.date, asked: Asked, where: str) -> None:
    if asked.from_date is None or asked.to_date is None:
        return
    first, last = dt.date.fromisoformat(asked.from_date), dt.date.fromisoformat(asked.to_date)
    if not first <= day <= last:
        raise _RelationFault(
            where, f" is {day.isoformat()}, outside the asked range {first}..{last}"
        )


def _length(where: str, items: list[Any] | None, expected: int, what: str) -> None:
    if items is not None and len(items) != expected:
        raise _RelationFault(where, f" has {len(items)} entries, expected {expected} ({what})")


class _Shape(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow", frozen=True)


class Succeeded(_Shape):
    """``{success: 0}``: the answer of a write (spec 1)."""

    success: Zero


# Ad tracking (spec 2.1, 4.1 to 4.4)

CampaignText = Annotated[str, Field(min_length=1, pattern=f"^{CAMPAIGN_ID_PATTERN}$")]
"""A campaign id sent as text, as the client's methods take it back
(:func:`~airflow_provider_analytics.core.rules.campaign_id`)."""


class UtmCreated(Succeeded):
    """Answer of 4.1: the new campaign's id, a number by the spec, text in some deployments."""

    campaignId: Count | CampaignText


class UtmRecord(_Shape):
    """The ad tracking record (spec 2.1)."""

    id: int | None = None
    campaignId: int | CampaignText
    utmType: str | None = None
    callbackUrl: str | None = None
    pageUrl: str
    utmCampaign: str | None = None
    utmMedium: str | None = None
    utmSource: str | None = None
    utmContent: str | None = None
    utmTerm: str | None = None
    url: str
    shortUrl: str | None = None
    remarks: str | None = None
    appKey: str | None = None
    userId: int | None = None
    status: int | None = None
    createTime: Count | None = None
    updateTime: Count | None = None
    canOperated: int | None = None
    uniqueSign: str | None = None

    @model_validator(mode="after")
    def _asked_for(self, info: ValidationInfo) -> UtmRecord:
        asked = _asked(info).campaign_id
        if asked is not None and str(self.campaignId) != asked:
            raise _RelationFault("campaignId", f" is {self.campaignId!r}, but {asked!r} was asked")
        return self


class UtmConversion(_Shape):
    """Answer of 4.3: documented only as ``{success: 0}``; the rest is kept as returned."""

    success: Zero | None = None


# Tracking plan (spec 2.2 to 2.4, 4.5 to 4.7)


class _PlanItem(_Shape):
    id: Annotated[str, Field(min_length=1)]
    name: str | None = None
    plan: Flag | None = None
    dataStatus: Flag | None = None
    preset: Flag | None = None
    enable: Flag | None = None


class _TypedPlanItem(_PlanItem):
    dataType: DataType
    has_dict: Flag | None = Field(default=None, alias="dict")
    masking: Flag | None = None


class UserProperty(_TypedPlanItem):
    """A user property of the plan (spec 2.2)."""

    visible: Flag | None = None


class PlanEvent(_PlanItem):
    """An event of the plan (spec 2.3)."""

    remark: str | None = None
    platform: str | None = None


class EventProperty(_TypedPlanItem):
    """A property of an event (spec 2.4)."""

    remark: str | None = None
    is_global: Flag | None = Field(default=None, alias="global")


# Cohort users (spec 2.6, 4.12, 4.13)


class CohortPage(_Shape):
    """One page of a cohort's users (spec 4.12, paging from ``API_NOTES.md``)."""

    count: Count
    page: Annotated[int, Field(ge=1)] | None = None
    size: Count | None = None
    users: list[dict[str, Any]]

    @model_validator(mode="after")
    def _relations(self, info: ValidationInfo) -> CohortPage:
        asked = _asked(info)
        if self.size is not None and self.size != len(self.users):
            raise _RelationFault("size", f" is {self.size}, but users holds {len(self.users)}")
        if asked.page is not None and self.page != asked.page:
            raise _RelationFault("page", f" is {self.page}, but page {asked.page} was asked")
        if asked.page_size is not None and len(self.users) > asked.page_size:
            raise _RelationFault(
                "users",
                f" holds {len(self.users)} users, more than the page size {asked.page_size}",
            )
        if asked.page is None and asked.limit is not None and len(self.users) > asked.limit:
            raise _RelationFault(
                "users", f" holds {len(self.users)} users, more than the limit {asked.limit} asked"
            )
        if len(self.users) > self.count:
            raise _RelationFault(
                "users", f" holds {len(self.users)} users, more than count {self.count}"
            )
        return self


class ErrorBody(_Shape):
    """The platform's error object (``API_NOTES.md``): ``{code, msg, data}``."""

    code: int | str | None = None
    msg: str | None = None
    data: Any = None


# Enterprise accounts (spec 4.14, 4.15)


class AccountRegistered(_Shape):
    """Answer of 4.14."""

    userId: int | Annotated[str, Field(min_length=1)]
    email: Annotated[str, Field(min_length=3)]


# Funnel analysis (spec 4.16)


class FunnelStep(_Shape):
    expression: Text | None = None
    convertedUser: list[Count]


class FunnelMedian(_Shape):
    stepsExpress: Text | None = None
    median: list[Count | None] | None = None


class FunnelRow(_Shape):
    byValue: Label = None
    stepsDetail: list[FunnelStep]
    medianConvertedTime: list[FunnelMedian] | None = None


class FunnelAnswer(_Shape):
    """Answer of 4.16: user counts per (split value, step, date column)."""

    dateList: list[str]
    byField: Label = None
    byValues: list[Label] | None = None
    stepEvents: list[Text] | None = None
    rows: list[FunnelRow]
    reportUpdateTime: Text | None = None

    @property
    def steps(self) -> list[str]:
        """``stepEvents``, or the first row's ``stepsDetail`` expressions."""
        if self.stepEvents is not None:
            return list(self.stepEvents)
        if not self.rows:
            return []
        return [str(detail.expression) for detail in self.rows[0].stepsDetail]

    def split_value(self, position: int) -> Label:
        """Row ``position``'s split value: its ``byValue``, else its ``byValues`` entry."""
        row = self.rows[position]
        if "byValue" in row.model_fields_set or self.byValues is None:
            return row.byValue
        return self.byValues[position]

    @property
    def days(self) -> list[dt.date | None]:
        """Each ``dateList`` entry as a day; ``None`` for the ``$ALL`` column."""
        return [
            None if label == ALL_DATES_LABEL else parse_funnel_date(label, what="")
            for label in self.dateList
        ]

    @model_validator(mode="after")
    def _relations(self, info: ValidationInfo) -> FunnelAnswer:
        return self.keeps(_asked(info))

    def keeps(self, asked: Asked) -> FunnelAnswer:
        seen: dict[str, int] = {}
        days: set[dt.date] = set()
        for position, label in enumerate(self.dateList):
            where = f"dateList[{position}]"
            if label in seen:
                raise _RelationFault(where, f" {label!r} repeats dateList[{seen[label]}]")
            seen[label] = position
            if label != ALL_DATES_LABEL:
                try:
                    days.add(day := parse_funnel_date(label, what=where))
                except ValueError as exc:
                    raise _RelationFault("", str(exc)) from None
                _within(day, asked, where)
        if len(days) != len(seen) - (ALL_DATES_LABEL in seen):
            raise _RelationFault("dateList", " names one day twice in two forms")
        n_steps = len(self.steps) if asked.steps is None else asked.steps  # rows hold them all
        unnamed = self.rows and any(d.expression is None for d in self.rows[0].stepsDetail)
        if self.stepEvents is None and unnamed:
            raise _RelationFault("stepEvents", " is missing, and rows[0] does not name each step")
        if asked.steps is not None:  # else the steps are read from stepEvents or the rows
            _length("stepEvents", self.stepEvents, n_steps, "one per step asked")
        _length("byValues", self.byValues, len(self.rows), "one per row")
        for position, row in enumerate(self.rows):
            self._check_row(position, row, n_steps)
        splits: list[object] = [label_text(self.split_value(at)) for at in range(len(self.rows))]
        if splits[:1] == [OVERALL_BY_VALUE]:  # the overall row: a later "-1" is a real value
            splits[0] = ("the overall row",)
        _unique_splits(splits, "one row per split value")
        return self

    def _check_row(self, position: int, row: FunnelRow, n_steps: int) -> None:
        where = f"rows[{position}]"
        if (
            self.byValues is not None
            and "byValue" in row.model_fields_set
            and label_text(self.byValues[position]) != label_text(row.byValue)
        ):
            raise _RelationFault(
                f"{where}.byValue", f" {row.byValue!r} differs from byValues[{position}]"
            )
        n_dates = len(self.dateList)
        _length(f"{where}.stepsDetail", row.stepsDetail, n_steps, "one per step")
        for index, step in enumerate(row.stepsDetail):
            _length(
                f"{where}.stepsDetail[{index}].convertedUser",
                step.convertedUser,
                n_dates,
                "one per dateList entry",
            )
        if row.medianConvertedTime is None:
            return
        pairs = max(n_steps - 1, 0)
        _length(f"{where}.medianConvertedTime", row.medianConvertedTime, pairs, "one per step pair")
        for index, entry in enumerate(row.medianConvertedTime):
            _length(
                f"{where}.medianConvertedTime[{index}].median",
                entry.median,
                n_dates,
                "one per dateList entry",
            )


OVERALL_BY_VALUE: Final = "-1"
"""The first funnel row's ``byValue`` when it is the overall row (every user, not a split)."""


def label_text(value: object) -> str | None:
    """A split value as text: JSON strings unchanged, numbers and booleans as JSON writes them
    (as the report tables hold it)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _unique_splits(values: Iterable[object], what: str) -> None:
    """Refuse a split value (a row's, as text) given to two rows: a table would hold two rows
    of one grain, and a sum over split values would count it twice."""
    seen: dict[object, int] = {}
    for position, value in enumerate(values):
        if value in seen:
            raise _RelationFault(
                f"rows[{position}].byValue",
                f" {value!r} repeats rows[{seen[value]}]'s, {what}",
            )
        seen[value] = position


# Event analysis (spec 4.17)


class EventRow(_Shape):
    byValue: list[Label] = Field(default_factory=list)
    values: list[list[FiniteNumber | None]]
    sum: list[FiniteNumber | None] | None = None


class EventAnswer(_Shape):
    """Answer of 4.17: one number per (split values, measure, period)."""

    measures: list[Label] | None = None
    byFields: list[Text] | None = None
    series: list[str]
    rows: list[EventRow]
    numRows: Count | None = None
    reportUpdateTime: Text | None = None

    @property
    def days(self) -> list[dt.datetime]:
        """Each ``series`` entry as the start of its period."""
        return [parse_report_datetime(label, what="") for label in self.series]

    @model_validator(mode="after")
    def _relations(self, info: ValidationInfo) -> EventAnswer:
        return self.keeps(_asked(info))

    def keeps(self, asked: Asked) -> EventAnswer:
        seen: dict[dt.datetime, int] = {}
        for position, label in enumerate(self.series):
            where = f"series[{position}]"
            try:
                start = parse_report_datetime(label, what=where)
            except ValueError as exc:
                raise _RelationFault("", str(exc)) from None
            if start in seen:
                raise _RelationFault(where, f" {label!r} repeats series[{seen[start]}]")
            seen[start] = position
            _within(start.date(), asked, where)
        n_measures = len(self.measures) if self.measures is not None else None
        if asked.aggregators is not None:
            _length("measures", self.measures, len(asked.aggregators), "one per measure asked")
            n_measures = len(asked.aggregators)
        n_fields = len(self.byFields) if self.byFields is not None else asked.split_fields
        if asked.split_fields is not None:
            _length("byFields", self.byFields, asked.split_fields, "one per split field asked")
        for position, row in enumerate(self.rows):
            where = f"rows[{position}]"
            expected = len(row.values) if n_measures is None else n_measures
            _length(f"{where}.values", row.values, expected, "one per measure")
            _length(f"{where}.sum", row.sum, expected, "one per measure")
            if n_fields is not None:
                _length(f"{where}.byValue", row.byValue, n_fields, "one per split field")
            for measure, values in enumerate(row.values):
                _length(
                    f"{where}.values[{measure}]", values, len(self.series), "one per series date"
                )
            self._check_counts(where, row, asked)
        if any(row.byValue for row in self.rows):
            splits = (tuple(map(label_text, row.byValue)) for row in self.rows)
            _unique_splits(splits, "one row per combination of split values")
        return self

    @staticmethod
    def _check_counts(where: str, row: EventRow, asked: Asked) -> None:
        if asked.aggregators is None:
            return
        for measure, aggregator in enumerate(asked.aggregators):
            if aggregator not in COUNTING_AGGREGATORS:
                continue
            values = row.values[measure]
            total = () if row.sum is None else (row.sum[measure],)
            present = [value for value in (*values, *total) if value is not None]
            if all(type(value) is int for value in present) and (
                not present or (min(present) >= 0 and max(present) <= INT64_MAX)
            ):
                continue  # the usual case, in a few passes; the loop below names a fault
            for position, value in enumerate((*values, *total)):
                if value is None or (type(value) is int and 0 <= value <= INT64_MAX):
                    continue
                place = (
                    f"values[{measure}][{position}]"
                    if position < len(values)
                    else f"sum[{measure}]"
                )
                raise _RelationFault(
                    f"{where}.{place}",
                    f" is {value!r}, but measure {measure} ({aggregator}) counts: expected "
                    "a JSON integer from 0 to 2**63-1",
                )


# The operations, by the client method's name


class DataReadyFired(_Shape):
    """The event the data-ready trigger hands the sensor back: what its last check saw when
    the data landed (``detail``), or why the wait ended without it (``message``)."""

    status: Literal["success", "timeout", "error"]
    detail: dict[str, Any] | None = None
    message: Text | None = None

    @model_validator(mode="after")
    def _says_what(self) -> DataReadyFired:
        needed = "detail" if self.status == "success" else "message"
        if getattr(self, needed) is None:
            raise _RelationFault(needed, f" is missing (a {self.status!r} event carries it)")
        return self


ANSWERS: Final[dict[str, Any]] = {
    "create_utm": UtmCreated,
    "get_utm": UtmRecord,
    "get_utm_conversion": UtmConversion,
    "delete_utm": Succeeded,
    "list_user_properties": list[UserProperty],
    "list_events": list[PlanEvent],
    "list_event_properties": list[EventProperty],
    "add_user_property": Succeeded,
    "add_event": Succeeded,
    "update_user_property": Succeeded,
    "update_event": Succeeded,
    "update_event_property": Succeeded,
    "get_cohort_users": CohortPage,
    "export_cohort_users": ErrorBody,
    "register_account": AccountRegistered,
    "set_account_activation": Succeeded,
    "analyze_funnel": FunnelAnswer,
    "analyze_events": EventAnswer,
    "data_ready_trigger": DataReadyFired,
}
"""Each operation's declared answer; for the streamed export, the platform's error object
(its records are declared by :mod:`~airflow_provider_analytics.export.schema`); the event the
data-ready trigger hands the sensor back."""

_PROBLEMS: Final = {
    "int_type": "must be a JSON integer (not text, a boolean or a fraction)",
    "float_type": "must be a JSON number",
    "finite_number": "must be a finite number",
    "string_type": "must be a JSON string",
    "list_type": "must be a JSON array",
    "dict_type": "must be a JSON object",
    "model_type": "must be a JSON object",
    "model_attributes_type": "must be a JSON object",
    "missing": "is missing",
    "literal_error": "must be one of {expected}",
    "less_than_equal": "must be <= {le}",
    "greater_than_equal": "must be >= {ge}",
    "string_too_short": "must not be empty",
}


_UNION_PROBLEMS: Final = {
    frozenset({"int_type", "float_type"}): "must be a JSON number (not text or a boolean)",
    frozenset({"int_type", "finite_number"}): "must be a finite number",
    frozenset({"int_type", "string_type"}): "must be a JSON integer or string",
    frozenset({"int_type", "string_too_short"}): "must be a JSON integer or non-empty text",
    frozenset({"int_type", "string_pattern_mismatch"}): (
        "must be a JSON integer or text of 1 to 64 letters, digits, '_' or '-'"
    ),
    frozenset({"greater_than_equal", "string_type"}): "must be an id >= 0 or a string",
}
"""What the alternatives of a union say together (a count-or-id, a finite number)."""


def _problem(error: Any) -> str:
    template = _PROBLEMS.get(error["type"], error["msg"])
    try:
        return template.format(**error.get("ctx", {}))
    except (KeyError, IndexError):
        return str(error["msg"])


def _describe(errors: list[Any]) -> list[str]:
    """One line per faulty field; a union's alternatives joined with "or"."""
    by_path: dict[str, list[Any]] = {}
    for error in errors:
        by_path.setdefault(field_path(error["loc"]), []).append(error)
    lines = []
    for path, faults in by_path.items():
        first = faults[0]
        fault = first.get("ctx", {}).get("error")
        if isinstance(fault, _RelationFault):
            below = f"{path}.{fault.where}" if path and fault.where else path or fault.where
            lines.append(f"{below}{fault.problem}" if below else fault.problem.lstrip())
            continue
        kinds = frozenset(fault["type"] for fault in faults)
        problems = _UNION_PROBLEMS.get(kinds) or " or ".join(
            dict.fromkeys(_problem(fault) for fault in faults)
        )
        shown = "" if first["type"] == "missing" else f", got {_shown(first.get('input'))}"
        lines.append(f"{path or 'the answer'} {problems}{shown}")
    return lines


def _shown(value: Any) -> str:
    if isinstance(value, dict):
        return "a JSON object"
    if isinstance(value, list):
        return "a JSON array"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def decode(
    operation: str,
    payload: Any,
    *,
    asked: Asked | None = None,
    secrets: tuple[str, ...] = (),
) -> Any:
    """Decode ``payload`` (strict JSON already read) through ``operation``'s declaration.

    :param operation: the client method's name (a key of :data:`ANSWERS`).
    :param payload: the decoded JSON answer.
    :param asked: what the request asked, for the relations that depend on it.
    :param secrets: deprecated; each is remembered
        (:func:`~airflow_provider_analytics.core.redaction.remember`), so masked everywhere.
    :return: the declared object (a model, or a list of models for the plan listings).
    :raises AnswerShapeError: naming the operation and the field with its position
        (``analyze_funnel: rows[2].stepsDetail[0].convertedUser[1]``).
    """
    if secrets:
        warnings.warn(
            "decode(secrets=...) is deprecated; mask a value in every message with "
            "airflow_provider_analytics.core.redaction.remember",
            DeprecationWarning,
            stacklevel=2,
        )
        remember(secrets)
    try:
        value = _validator(operation).validate_python(payload, strict=True, context=asked)
    except ValidationError as exc:
        problems = _describe(exc.errors(include_url=False))
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        message = f"{operation}: {'; '.join(problems[:3])}{more}"  # the first three faults
        raise AnswerShapeError(message, operation=operation) from None
    seen: dict[str, int] = {}
    for position, item in enumerate(value if isinstance(value, list) else ()):  # plan listings
        if item.id in seen:
            raise AnswerShapeError(
                f"{operation}: [{position}].id {item.id[:80]!r} is listed twice (first at "
                f"[{seen[item.id]}])",
                operation=operation,
            )
        seen[item.id] = position
    return value


@functools.cache
def _validator(operation: str) -> Any:
    """Stops at an array's first fault (:func:`~.strict_json.first_fault`)."""
    return strict_json.first_fault(TypeAdapter(ANSWERS[operation]))


_Analysed = TypeVar("_Analysed", "FunnelAnswer", "EventAnswer")


def as_model(
    model: type[_Analysed], operation: str, payload: Any, asked: Asked | None = None
) -> _Analysed:
    """``payload`` as ``model``: decoded, unless it already is one (then only its relations
    with ``asked`` are checked)."""
    if not isinstance(payload, model):
        return cast("_Analysed", decode(operation, payload, asked=asked))
    if asked is not None:
        try:
            payload.keeps(asked)
        except _RelationFault as fault:
            raise fault.refused(operation) from None
    return payload


_CHECK_ADDRESS = "check that the base URL points at the platform's open API"


class ResponseReader:
    """Reads the successful answers of one operation: a 2xx that is not strict JSON raises
    :class:`AnalyticsProtocolError`, one reporting ``success`` other than 0
    :class:`AnalyticsOperationFailedError`, one that does not fit (or is the platform's error
    object) :class:`AnswerShapeError`; each refusal ends with ``after_sending`` (the
    operation's: for a create, that its outcome is unknown)."""

    def __init__(self, operation: str, after_sending: str = "") -> None:
        self._operation = operation
        self._after = after_sending

    def unreadable(self, response: HttpAnswer, exc: Exception) -> AnalyticsProtocolError:
        content_type = response.headers.get("Content-Type", "no content type")
        return AnalyticsProtocolError(
            f"{self._operation}: the answer (HTTP {response.status_code}, {content_type}) "
            f"{exc}; {_CHECK_ADDRESS}{self._after}",
            operation=self._operation,
        )

    def json(self, response: HttpAnswer) -> Any:
        """The decoded JSON body, checked for a reported failure."""
        try:
            body = strict_json.loads(response.content)
        except strict_json.StrictJsonError as exc:
            raise self.unreadable(response, exc) from None
        if isinstance(body, dict):
            self._refuse_failure(body, response.status_code)
        return body

    def _refuse_failure(self, body: Mapping[str, Any], status: int) -> None:
        redactor = known()
        msg = None if body.get("msg") is None else redactor.excerpt(body["msg"])
        if is_error_object(body):
            raise AnswerShapeError(  # a protocol fault, as a body of another shape is
                f"{self._operation}: the answer is the platform's error object (code="
                f"{redactor.excerpt(repr(body['code']), 80)}, msg: {msg}), not a result; the "
                f"platform failed while it answered with a success status{self._after}",
                code=body["code"],
                msg=msg,
                data=body.get("data"),
                operation=self._operation,
            )
        success = body.get("success", 0)
        if type(success) is not int:  # "0", true, 0.0: neither done nor refused, by the spec
            raise AnswerShapeError(
                f"{self._operation}: success must be a JSON integer (0: done), got "
                f"{redactor.excerpt(repr(success), 80)}{self._after}",
                operation=self._operation,
            )
        if success != 0:
            raise AnalyticsOperationFailedError(
                f"{self._operation}: the server reported failure "
                f"(success={redactor.excerpt(repr(body['success']), 80)}"
                f"{', msg: ' + msg if msg else ''}); the operation was not carried out",
                status=status,
                code=body.get("code"),
                msg=msg,
                data=body.get("data"),
                operation=self._operation,
            )

    def answer(self, response: HttpAnswer, asked: Asked | None = None) -> Any:
        """The JSON body, once it has passed the operation's declared answer."""
        body = self.json(response)
        self.declared(body, asked)
        return body

    def declared(self, body: Any, asked: Asked | None = None) -> Any:
        """``body`` (strict JSON already read) as the operation's declared answer."""
        try:
            return decode(self._operation, body, asked=asked)
        except AnswerShapeError as exc:
            raise AnswerShapeError(
                f"{exc}; {_CHECK_ADDRESS}{self._after}", operation=self._operation
            ) from None

    def page_lines(self, response: HttpAnswer, asked: Asked | None = None) -> PageParts:
        """A page of cohort users, its users kept as the export's lines
        (:mod:`~airflow_provider_analytics.core.page_lines`), its members checked as
        :meth:`answer` checks them."""
        from airflow_provider_analytics.core.page_lines import split_page  # loads numpy

        try:
            parts = split_page(response.content)
        except strict_json.StrictJsonError as exc:
            raise self.unreadable(response, exc) from None
        self._refuse_failure(parts.envelope, response.status_code)
        body = dict(parts.envelope)
        if parts.rows is not None:
            body["users"] = [{}] * parts.rows  # the relations count them; the lines hold them
        self.declared(body, asked)
        return parts


_PAGES = "iter_cohort_user_pages"
_PAGE_IDENTITY = "distinct_id"


class PagedListing:
    """One paged listing (spec 4.12): which page comes next, and the rules only the sequence
    of pages shows (docs/client.md lists them), so a server that never stops, or repeats
    itself, cannot keep a reader busy or hand it wrong rows."""

    def __init__(self, *, page_size: int, limit: int | None) -> None:
        self._page_size = page_size
        self._limit = limit
        self._count: int | None = None
        self._read = 0
        self._number = 0
        self._finished = False
        self._first_seen: dict[int | str, int] = {}

    @property
    def read(self) -> int:
        """Users read so far."""
        return self._read

    @property
    def wanted(self) -> int | None:
        """Users to read in all; ``None`` until the first page is read."""
        if self._count is None:
            return None
        return self._count if self._limit is None else min(self._limit, self._count)

    def next_page(self) -> int | None:
        """The 1-based page to ask for next; ``None`` when the listing is done."""
        return None if self._finished else self._number + 1

    def take(self, page: Mapping[str, Any]) -> None:
        """Check one (already decoded) page against the pages before it."""
        self._number += 1
        number = self._number
        count = page["count"]
        if self._count is None:
            self._count = count
        elif count != self._count:
            self._refuse(number, f"count is {count}, but page 1 said {self._count}")
        users = page["users"]
        page_ids: set[int | str] = set()
        for position, user in enumerate(users):
            identity = user.get(_PAGE_IDENTITY)
            if not isinstance(identity, int | str):
                continue
            first = self._first_seen.setdefault(identity, number)
            if first != number or identity in page_ids:
                self._refuse(
                    number,
                    f"users[{position}] repeats {_PAGE_IDENTITY} {identity!r} of page {first}",
                )
            page_ids.add(identity)
        self._read += len(users)
        wanted = self.wanted
        assert wanted is not None
        if self._read > wanted:
            self._refuse(number, f"{self._read} users arrived, more than the {wanted} asked")
        last = -(-wanted // self._page_size) if wanted else 1
        if self._read == wanted or number >= last:
            if self._read < wanted:
                self._refuse(
                    number,
                    f"only {self._read} users arrived by the last page, but count promises "
                    f"{wanted}; the cohort may have changed while it was read",
                )
            self._finished = True
        elif len(users) < self._page_size:
            self._refuse(
                number,
                f"holds {len(users)} users, fewer than the page size {self._page_size}, "
                f"although {wanted - self._read} more are promised by count",
            )

    @staticmethod
    def _refuse(number: int, problem: str) -> None:
        raise AnswerShapeError(f"{_PAGES}: page {number}: {problem}", operation=_PAGES)
