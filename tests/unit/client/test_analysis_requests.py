"""Analysis requests declared once: the typed builders and the dicts are one model, read
through one set of rules, with bodies that round-trip."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import requests_mock
from hypothesis import given
from hypothesis import strategies as st

from airflow_provider_analytics.client import (
    AnalyticsClient,
    AnalyticsUsageError,
    AnalyticsValidationError,
    ClientConfig,
    Condition,
    EventRequest,
    Filter,
    FunnelRequest,
    FunnelStep,
    Measure,
    SplitField,
)
from airflow_provider_analytics.client import analysis_requests as v
from airflow_provider_analytics.core import rules
from airflow_provider_analytics.operators.reports import EventReportOperator, FunnelReportOperator

if TYPE_CHECKING:
    import requests_mock as rm_module

REPO = Path(__file__).resolve().parents[3]

refs = st.from_regex(r"\$?[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
event_expressions = refs.map(lambda ref: f"event.{ref}")
event_property_expressions = st.tuples(refs, refs).map(lambda pair: f"event.{pair[0]}.{pair[1]}")
property_expressions = event_property_expressions | refs.map(lambda ref: f"user.{ref}")
texts = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs"), max_codepoint=0x2FFF), max_size=12
)
scalars = st.one_of(
    texts,
    st.booleans(),
    st.integers(min_value=-rules.INT64_MAX, max_value=rules.INT64_MAX),
    st.floats(allow_nan=False, allow_infinity=False),
)
functions = st.sampled_from([*v.FILTER_ARITY, "RELATIVE_WITHIN_DAYS"])


@st.composite
def conditions(draw: st.DrawFn) -> Condition:
    function = draw(functions)
    fewest, most = v.FILTER_ARITY.get(function, (0, 3))
    params = draw(st.lists(scalars, min_size=fewest, max_size=fewest if most is None else most))
    return Condition(draw(property_expressions), function, params)


filters = st.builds(
    Filter,
    st.lists(conditions(), min_size=1, max_size=3),
    st.sampled_from(["AND", "OR", "and", "or"]),
)
optional_filters = st.none() | filters
buckets = st.lists(
    st.integers(min_value=-(10**6), max_value=10**6) | st.floats(-1e6, 1e6),
    max_size=4,
    unique=True,
).map(sorted)
split_fields = st.builds(SplitField, property_expressions, st.none() | buckets)
dates = st.dates(min_value=dt.date(2019, 1, 1), max_value=dt.date(2030, 12, 31))


@st.composite
def date_range(draw: st.DrawFn, *, one_day: bool = False) -> dict[str, Any]:
    """Both dates (as text or ``datetime.date``) in order, or neither."""
    if draw(st.booleans()):
        return {}
    first = draw(dates)
    last = first if one_day else draw(dates.filter(lambda day: day >= first))
    as_text = draw(st.booleans())
    return {
        "from_date": first.isoformat() if as_text else first,
        "to_date": last.isoformat() if as_text else last,
    }


crowds = st.sampled_from([["$ALL"], ("$ALL",), ["vip_buyers"], ["c-2024"]])


@st.composite
def funnel_requests(draw: st.DrawFn) -> FunnelRequest:
    steps = draw(
        st.lists(
            st.builds(FunnelStep, event_expressions, optional_filters) | event_expressions,
            min_size=2,
            max_size=4,
        )
    )
    options: dict[str, Any] = {"crowds": draw(crowds), **draw(date_range())}
    if draw(st.booleans()):
        options["by_field"] = draw(split_fields | property_expressions)
        if draw(st.booleans()):
            options["by_step_index"] = draw(st.integers(-1, len(steps) - 1))
    if draw(st.booleans()):
        options["convert_time"] = draw(st.integers(1, 10**6))
        options["convert_time_unit"] = draw(st.sampled_from(v.CONVERT_TIME_UNITS))
    optional = {
        "filter": filters,
        "sampling_factor": st.integers(1, v.SAMPLING_FACTOR_MAX),
        "use_cache": st.booleans(),
        "limit": st.integers(1, rules.COUNT_MAX),
    }
    for name, values in optional.items():
        if draw(st.booleans()):
            options[name] = draw(values)
    return FunnelRequest(steps=steps, **options)


@st.composite
def measures(draw: st.DrawFn) -> Measure:
    if draw(st.booleans()):
        return Measure(
            draw(event_expressions),
            draw(st.sampled_from(v.EVENT_AGGREGATORS)),
            draw(optional_filters),
        )
    return Measure(
        draw(event_property_expressions),
        draw(st.sampled_from(v.PROPERTY_AGGREGATORS)),
        draw(optional_filters),
    )


@st.composite
def event_requests(draw: st.DrawFn) -> EventRequest:
    unit = draw(st.none() | st.sampled_from(v.TIME_UNITS))
    options: dict[str, Any] = {
        "crowds": draw(crowds),
        **draw(date_range(one_day=unit in v.SINGLE_DAY_UNITS)),
        "by_fields": draw(st.lists(split_fields | property_expressions, max_size=3)),
    }
    if unit is not None:
        options["unit"] = unit
    optional = {
        "filter": filters,
        "sampling_factor": st.integers(1, v.SAMPLING_FACTOR_MAX),
        "use_cache": st.booleans(),
    }
    for name, values in optional.items():
        if draw(st.booleans()):
            options[name] = draw(values)
    return EventRequest(measures=draw(st.lists(measures(), min_size=1, max_size=3)), **options)


def _dated(body: dict[str, Any]) -> dict[str, Any]:
    """The body as a run would send it: with dates (the run's day when it has none)."""
    return {"fromDate": "2024-01-15", "toDate": "2024-01-15", **body}


@given(funnel_requests())
def test_a_typed_funnel_request_is_a_body_the_same_model_reads_back_unchanged(
    request: FunnelRequest,
) -> None:
    body = request.to_body()
    assert json.loads(json.dumps(body, allow_nan=False)) == body  # plain JSON
    assert FunnelRequest.model_validate(_dated(body)).sent() == _dated(body)
    assert FunnelRequest.from_body(body) == request
    dated = request.model_copy(update=_dates_of(body))
    assert dated.sent() == _dated(body)


@given(event_requests())
def test_a_typed_event_request_is_a_body_the_same_model_reads_back_unchanged(
    request: EventRequest,
) -> None:
    body = request.to_body()
    assert json.loads(json.dumps(body, allow_nan=False)) == body
    assert EventRequest.model_validate(_dated(body)).sent() == _dated(body)
    assert EventRequest.from_body(body) == request
    assert request.model_copy(update=_dates_of(body)).sent() == _dated(body)


def _dates_of(body: dict[str, Any]) -> dict[str, str]:
    dated = _dated(body)
    return {"from_date": dated["fromDate"], "to_date": dated["toDate"]}


def _as_dict(request: FunnelRequest | EventRequest) -> dict[str, Any]:
    """The dict a user would write for ``request``: the spec's keys, nested parts as dicts,
    any relation in lower case and every list a list."""
    body = request.to_body()
    text = json.dumps(body).replace('"relation": "AND"', '"relation": "and"')
    return json.loads(text)


@given(st.one_of(funnel_requests(), event_requests()))
def test_a_dict_and_its_typed_builder_send_the_identical_body(
    request: FunnelRequest | EventRequest,
) -> None:
    """Whatever a request holds, the client sends the same bytes for it written as a dict or
    built from the typed classes."""
    if request.from_date is None:
        request = request.model_copy(update=_dates_of(request.to_body()))
    base = "https://analytics.example.com"
    funnel = isinstance(request, FunnelRequest)
    path = "/uba/api/funnels/analyze" if funnel else "/uba/api/events/analyze"
    answer = {"dateList": [], "rows": []} if funnel else {"series": [], "rows": []}
    with (
        requests_mock.Mocker() as mocker,
        AnalyticsClient(ClientConfig(base, token="t0k", app_key="app")) as client,
    ):
        sent = mocker.post(f"{base}{path}", json=answer)
        analyze = client.analyze_funnel if funnel else client.analyze_events
        analyze(request)  # type: ignore[arg-type]
        analyze(_as_dict(request))
        typed, plain = (call.body for call in sent.request_history)
    assert typed == plain


def test_a_request_dict_and_its_typed_form_send_the_same_body() -> None:
    as_dict = {
        "steps": [
            {"expression": "event.$startup", "filter": None},
            {
                "expression": "event.purchase",
                "filter": {
                    "conditions": [
                        {"expression": "event.purchase.amount", "function": "GT", "params": [10]}
                    ],
                    "relation": "and",
                },
            },
        ],
        "crowds": ["$ALL"],
        "fromDate": "2024-01-01",
        "toDate": "2024-01-07",
        "byField": {"expression": "user.$city"},
        "byStepIndex": -1,
        "convertTime": 1,
        "convertTimeUnit": "DAY",
    }
    typed = FunnelRequest(
        steps=[
            "event.$startup",
            FunnelStep(
                "event.purchase", Filter.all(Condition("event.purchase.amount", "GT", [10]))
            ),
        ],
        from_date=dt.date(2024, 1, 1),
        to_date="2024-01-07",
        by_field="user.$city",
        by_step_index=-1,
        convert_time=1,
        convert_time_unit="DAY",
    )
    assert typed.sent() == FunnelRequest.model_validate(as_dict).sent()
    assert FunnelRequest.from_body(as_dict) == typed


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: FunnelRequest(steps=["event.a"]), r"^steps: must be a list of at least 2"),
        (lambda: FunnelRequest(steps="event.a"), r"^steps: must be a list of FunnelStep"),
        (lambda: FunnelRequest(steps=["event.a", 3]), r"^steps\[1\]: must be a FunnelStep or"),
        (
            lambda: FunnelRequest(steps=["event.a", "event.b"], by_field="event.$platform"),
            r"^byField.expression: must be event.<event id>.<property id> or user.<prop",
        ),
        (
            lambda: SplitField("event.$platform"),
            r"^SplitField.expression: must be event.<event id>.<property id> or user.<prop",
        ),
        (
            lambda: FunnelRequest(steps=["event.a", "event.b"], by_step_index=0),
            r"^byStepIndex: is only allowed together with byField",
        ),
        (
            lambda: FunnelRequest(steps=["event.a", "event.b"], convert_time=1),
            r"^convertTimeUnit: is required together with convertTime",
        ),
        (
            lambda: FunnelRequest(steps=["event.a", "event.b"], from_date="2024-01-02"),
            r"^toDate: is required",
        ),
        (  # a nested dict is read by the same model as a typed part
            lambda: FunnelRequest(steps=["event.a", "event.b"], filter={"conditions": []}),
            r"^filter.conditions: must be a non-empty list of conditions",
        ),
        (
            lambda: FunnelRequest(steps=["event.a", "event.b"], filter=[]),
            r"^filter: must be a Filter or an object \(dict\) \{conditions, relation\}",
        ),
        (lambda: FunnelRequest.from_body(None), r"^request: must be a dict of the analysis"),
        (lambda: EventRequest.from_body(5), r"^request: must be a dict of the analysis"),
        (lambda: FunnelRequest.from_body([1, 2]), r"^request: must be a dict of the analysis"),
        (lambda: Filter.from_body(None), r"^Filter: must be a Filter or an object"),
        (lambda: Condition("user.age", "GT"), r"^Condition.params: GT takes exactly 1"),
        (lambda: Condition("user.age", "NEAR", [1]), r"^Condition.function: must be one of"),
        (  # a param is sent as every string is: bounded, no control characters or surrogates
            lambda: Condition("user.age", "EQ", ["ok", "a\x00b"]),
            r"^Condition.params\[1\]: must not contain control characters .*'\\x00' at position 1",
        ),
        (
            lambda: Condition("user.age", "EQ", ["\ud800"]),
            r"^Condition.params\[0\]: must not contain control characters or lone surrogates",
        ),
        (
            lambda: Condition("user.age", "EQ", ["x" * 5000]),
            r"^Condition.params\[0\]: must be at most 4096 characters long \(got 5000\)",
        ),
        (
            lambda: Condition("user.age", "RELATIVE_" + "A" * 5000),
            r"^Condition.function: must be at most 4096 characters long",
        ),
        (lambda: Filter([], "AND"), r"^Filter.conditions: must be a non-empty list"),
        (lambda: Filter([Condition("user.a", "NULL")], "XOR"), r"^Filter.relation: must be"),
        (lambda: SplitField("user.age", [5, 1]), r"^SplitField.buckets: must be strictly"),
        (lambda: Measure("event.a", "SUM"), r"^Measure.aggregator: SUM applies to a property"),
        (
            lambda: EventRequest(
                measures=[Measure("event.a", "TOTAL_COUNT")],
                from_date="2024-01-01",
                to_date="2024-01-02",
                unit="HOUR",
            ),
            r"^unit: HOUR needs fromDate equal to toDate",
        ),
        (lambda: EventRequest(measures=[]), r"^measures: must be a non-empty list"),
        (
            lambda: EventRequest(measures=[Measure("event.a", "TOTAL_COUNT")], crowds="$ALL"),
            r"^crowds: must be a list of one cohort code",
        ),
    ],
)
def test_a_typed_request_is_refused_when_built_naming_the_field(build: Any, message: str) -> None:
    with pytest.raises(AnalyticsValidationError, match=message):
        build()


def test_the_client_sends_the_typed_requests_body(requests_mock: rm_module.Mocker) -> None:
    request = EventRequest(
        measures=[Measure("event.purchase", "TOTAL_COUNT")],
        from_date="2024-01-01",
        to_date="2024-01-01",
        by_fields=["event.purchase.$platform"],
    )
    base = "https://analytics.example.com"
    answer = {
        "measures": ["event.purchase.TOTAL_COUNT"],
        "byFields": ["event.purchase.$platform"],
        "series": ["2024-01-01"],
        "rows": [],
        "numRows": 0,
    }
    sent = requests_mock.post(f"{base}/uba/api/events/analyze", json=answer)
    with AnalyticsClient(ClientConfig(base, token="t0k", app_key="app")) as client:
        client.analyze_events(request)
        with pytest.raises(AnalyticsValidationError, match=r"^request: is EventRequest"):
            client.analyze_funnel(request)  # type: ignore[arg-type]
        undated = EventRequest(measures=[Measure("event.purchase", "TOTAL_COUNT")])
        with pytest.raises(AnalyticsValidationError, match=r"^fromDate: is required"):
            client.analyze_events(undated)
    assert sent.call_count == 1
    assert sent.last_request.json() == request.to_body()


def test_the_report_operators_take_a_typed_request_as_its_body() -> None:
    funnel = FunnelRequest(steps=["event.$startup", "event.purchase"], by_field="user.$city")
    operator = FunnelReportOperator(task_id="f", request=funnel, destination="file:///tmp/x/")
    assert operator.request == funnel.to_body()  # a dict, rendered and shown like any other
    assert "request" in operator.template_fields
    with pytest.raises(AnalyticsValidationError, match=r"^request: is FunnelRequest \(funnel\)"):
        EventReportOperator(task_id="e", request=funnel, destination="file:///tmp/x/")
    plain = {"measures": [{"expression": "event.a", "aggregator": "TOTAL_COUNT"}]}
    operator = EventReportOperator(task_id="e", request=plain, destination="file:///tmp/x/")
    assert operator.request is plain


@pytest.mark.parametrize(
    ("page", "typed"),
    [
        ("docs/operators/funnel_report.md", FunnelRequest),
        ("docs/operators/event_report.md", EventRequest),
    ],
)
def test_each_report_page_shows_a_request_with_every_field(page: str, typed: type) -> None:
    text = (REPO / page).read_text(encoding="utf-8")
    for name in typed.model_fields:
        assert re.search(rf"\b{name}=", text), f"{page} shows no {name}="


def test_analyze_takes_only_a_declared_request() -> None:
    with AnalyticsClient(ClientConfig("https://analytics.example.com")) as client:
        body = {"steps": ["event.a", "event.b"], "crowds": ["$ALL"]}
        with pytest.raises(AnalyticsUsageError, match=r"^analyze takes a FunnelRequest or an"):
            client.analyze(body)  # type: ignore[arg-type]


def test_a_checked_request_cannot_be_changed_unchecked() -> None:
    """Every body is frozen all the way down, and a changed copy is checked again."""
    import dataclasses

    request = FunnelRequest(
        steps=["event.a", FunnelStep("event.b", Filter.all(Condition("user.age", "GT", [1])))],
        from_date="2024-01-01",
        to_date="2024-01-01",
    )
    with pytest.raises(ValueError, match="frozen"):
        request.limit = -5  # type: ignore[misc]
    with pytest.raises(TypeError):
        dataclasses.replace(request, limit=-5)  # type: ignore[type-var]
    with pytest.raises(AnalyticsValidationError, match=r"^limit: must be a positive integer"):
        request.model_copy(update={"limit": -5})
    with pytest.raises(AnalyticsValidationError, match=r"^steps: must be a list of at least 2"):
        request.model_copy(update={"steps": ["event.a"]})
    with pytest.raises(AnalyticsValidationError, match=r"^bogus: is not a known key"):
        request.model_copy(update={"bogus": 1})  # named, not a TypeError of __init__
    with pytest.raises(AnalyticsValidationError, match=r"^Condition.x: is not a known key"):
        Condition("user.age", "GT", [1]).model_copy(update={"x": 1})
    step_filter = request.steps[1].filter
    assert step_filter is not None
    assert isinstance(request.steps, tuple) and isinstance(step_filter.conditions, tuple)
    assert isinstance(step_filter.conditions[0].params, tuple)
    with pytest.raises(ValueError, match="frozen"):
        step_filter.relation = "OR"  # type: ignore[misc]
    assert hash(request) == hash(FunnelRequest.from_body(request.to_body()))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (  # pydantic's own JSON reader keeps the last of a repeated key without a word
            '{"crowds": ["$ALL"], "crowds": ["vip"], "steps": ["event.a", "event.b"]}',
            r"^request: is not strict JSON: the key 'crowds' is given twice",
        ),
        ('{"crowds": ["$ALL"], "steps": ["event.a", "event.b"], "limit": NaN}', r"NaN is not"),
        ("[", r"^request: is not valid JSON"),
        (  # the rules' refusal names its field, not a pydantic ValidationError naming none
            b'{"crowds": ["$ALL"], "steps": ["event.a", "event.b"], "limit": -1}',
            r"^limit: must be a positive integer",
        ),
    ],
)
def test_a_request_read_from_json_text_is_read_by_the_strict_rules(
    text: str | bytes, message: str
) -> None:
    with pytest.raises(AnalyticsValidationError, match=message):
        FunnelRequest.model_validate_json(text)


def test_a_request_read_from_json_text_is_the_request_of_its_dict() -> None:
    body = {"crowds": ["$ALL"], "steps": ["event.a", "event.b"], "fromDate": "2024-01-01"}
    body["toDate"] = "2024-01-02"
    assert FunnelRequest.model_validate_json(json.dumps(body)) == FunnelRequest.from_body(body)


def test_a_request_of_strings_is_read_by_the_same_rules() -> None:
    """``model_validate_strings`` names the field as ``model_validate`` does (pydantic's own
    ValidationError named none)."""
    body = {"crowds": ["$ALL"], "steps": ["event.a", "event.b"], "limit": "5"}
    with pytest.raises(AnalyticsValidationError, match=r"^limit: must be a positive integer"):
        FunnelRequest.model_validate_strings(body)
