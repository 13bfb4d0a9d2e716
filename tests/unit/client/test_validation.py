"""The spec's rules: each broken rule fails before any request, naming the field."""

from __future__ import annotations

import copy
import datetime
from typing import TYPE_CHECKING, Any

import pytest
import requests_mock as rm_module

from airflow_provider_analytics.client import (
    AnalyticsClient,
    AnalyticsValidationError,
    ClientConfig,
    Condition,
    EventRequest,
    FunnelRequest,
)
from airflow_provider_analytics.client import validation as v
from airflow_provider_analytics.client.analysis_requests import (
    EVENT_AGGREGATORS,
    PROPERTY_AGGREGATORS,
    ConversionMeasure,
)
from airflow_provider_analytics.core import rules

if TYPE_CHECKING:
    from collections.abc import Callable

    import requests_mock as rm

BASE = "https://analytics.example.com"


def funnel(**changes: Any) -> dict[str, Any]:
    request: dict[str, Any] = {
        "steps": [{"expression": "event.$startup"}, {"expression": "event.purchase"}],
        "crowds": ["$ALL"],
        "fromDate": "2024-01-01",
        "toDate": "2024-01-07",
    }
    request.update(changes)
    return request


def events(**changes: Any) -> dict[str, Any]:
    request: dict[str, Any] = {
        "measures": [{"expression": "event.purchase", "aggregator": "TOTAL_COUNT"}],
        "crowds": ["$ALL"],
        "fromDate": "2024-01-01",
        "toDate": "2024-01-07",
    }
    request.update(changes)
    return request


def cond(
    expression: str = "event.purchase.amount", function: str = "GT", params: Any = (1,)
) -> dict:
    return {"expression": expression, "function": function, "params": list(params)}


def flt(*conditions: Any, relation: Any = "AND") -> dict[str, Any]:
    return {"conditions": list(conditions), "relation": relation}


# (id, call, field named in the message, words of the rule)
Case = tuple[str, "Callable[[AnalyticsClient], Any]", str, str]
CASES: list[Case] = [
    # ids for creation
    (
        "id_digit_first",
        lambda c: c.add_user_property("9x", "string"),
        "id",
        "not start with a digit",
    ),
    ("id_dash", lambda c: c.add_user_property("vip-level", "string"), "id", "letters, digits"),
    ("id_dollar_on_create", lambda c: c.add_event("$custom"), "id", "letters, digits"),
    ("id_too_long", lambda c: c.add_user_property("a" * 101, "string"), "id", "1 to 100"),
    ("id_empty", lambda c: c.add_event(""), "id", "1 to 100"),
    ("id_not_str", lambda c: c.add_event(5), "id", "string"),
    (
        "id_non_ascii",
        lambda c: c.add_user_property("名字", "string"),
        "id",
        "letters, digits",
    ),
    (
        "event_property_id",
        lambda c: c.add_event("checkout", properties=[{"id": "1st", "dataType": "string"}]),
        "properties[0].id",
        "not start with a digit",
    ),
    # references to existing items
    ("ref_update_event", lambda c: c.update_event("bad id", name="x"), "id", "preset"),
    ("ref_double_dollar", lambda c: c.update_user_property("$$city", name="x"), "id", "preset"),
    ("ref_event_id", lambda c: c.list_event_properties("9x"), "event_id", "not start with a digit"),
    (
        "ref_property_id",
        lambda c: c.update_event_property("purchase", "amount.x", name="A"),
        "property_id",
        "letters",
    ),
    # name and remark
    ("name_too_long", lambda c: c.add_event("a", name="n" * 51), "name", "1 to 50"),
    ("name_empty", lambda c: c.update_event("a", name=""), "name", "1 to 50"),
    ("name_special", lambda c: c.add_event("a", name="a@b"), "name", "'@'"),
    ("name_emoji", lambda c: c.add_event("a", name="fun😀"), "name", "special characters"),
    ("name_newline", lambda c: c.update_event("a", name="a\nb"), "name", "special characters"),
    ("remark_too_long", lambda c: c.add_event("a", remark="r" * 101), "remark", "0 to 100"),
    ("remark_special", lambda c: c.update_event("a", remark="50% off"), "remark", "'%'"),
    (
        "property_name_special",
        lambda c: c.add_event("a", properties=[{"id": "p", "dataType": "string", "name": "a/b"}]),
        "properties[0].name",
        "'/'",
    ),
    # data types
    ("data_type_add", lambda c: c.add_user_property("a", "int"), "data_type", "array<string>"),
    (
        "data_type_update",
        lambda c: c.update_user_property("a", data_type="String"),
        "dataType",
        "one of",
    ),
    (
        "data_type_missing_in_event_property",
        lambda c: c.add_event("a", properties=[{"id": "p"}]),
        "properties[0].dataType",
        "required",
    ),
    (
        "data_type_both_spellings",
        lambda c: c.add_event(
            "a", properties=[{"id": "p", "dataType": "string", "data_type": "string"}]
        ),
        "properties[0].data_type",
        "not both",
    ),
    (
        "event_property_unknown_key",
        lambda c: c.add_event("a", properties=[{"id": "p", "dataType": "string", "type": "x"}]),
        "properties[0].type",
        "not a known key",
    ),
    ("event_properties_not_list", lambda c: c.add_event("a", properties="p"), "properties", "list"),
    # lists the spec defines as sets: a repeat names the list and both positions
    (
        "event_property_repeated",
        lambda c: c.add_event(
            "checkout",
            properties=[
                {"id": "amount", "dataType": "number"},
                {"id": "coupon", "dataType": "string"},
                {"id": "amount", "data_type": "string"},
            ],
        ),
        "properties",
        "properties[0].id and properties[2].id are both 'amount'",
    ),
    (
        "cohort_property_repeated",
        lambda c: c.get_cohort_users("vip", properties=["$city", "age", "$city"]),
        "properties",
        "properties[0] and properties[2] are both '$city'",
    ),
    (
        "cohort_tag_and_its_bare_code",
        lambda c: c.export_cohort_users("vip", properties=["tag.rfm", "age", "rfm"]),
        "properties",
        "properties[0] 'tag.rfm' and properties[2] 'rfm' are both sent as 'rfm'",
    ),
    (
        "cohort_pages_property_repeated",
        lambda c: c.iter_cohort_user_pages("vip", properties=["age", "age"]),
        "properties",
        "properties[0] and properties[1] are both 'age'",
    ),
    (
        "funnel_crowd_repeated",
        lambda c: c.analyze_funnel(funnel(crowds=["vip", "vip"])),
        "crowds",
        "crowds[0] and crowds[1] are both 'vip'",
    ),
    (
        "event_analysis_crowd_repeated",
        lambda c: c.analyze_events(events(crowds=["$ALL", "$ALL"])),
        "crowds",
        "crowds[0] and crowds[1] are both '$ALL'",
    ),
    ("update_nothing", lambda c: c.update_user_property("a"), "name", "at least one"),
    # dates
    (
        "date_not_on_calendar",
        lambda c: c.analyze_funnel(funnel(fromDate="2024-02-30")),
        "fromDate",
        "calendar",
    ),
    (
        "date_format",
        lambda c: c.analyze_events(events(toDate="2024/01/07")),
        "toDate",
        "yyyy-MM-dd",
    ),
    (
        "date_datetime",
        lambda c: c.analyze_events(events(toDate=datetime.datetime(2024, 1, 7))),
        "toDate",
        "yyyy-MM-dd",
    ),
    (
        "date_order",
        lambda c: c.analyze_funnel(funnel(fromDate="2024-02-01")),
        "toDate",
        "not be before fromDate",
    ),
    (
        "date_order_conversion",
        lambda c: c.get_utm_conversion(1, "2024-02-01", "2024-01-01"),
        "to_date",
        "not be before from_date",
    ),
    # convertTime
    (
        "convert_time_zero",
        lambda c: c.analyze_funnel(funnel(convertTime=0, convertTimeUnit="DAY")),
        "convertTime",
        "positive",
    ),
    (
        "convert_time_bool",
        lambda c: c.analyze_funnel(funnel(convertTime=True, convertTimeUnit="DAY")),
        "convertTime",
        "positive",
    ),
    (
        "convert_time_str",
        lambda c: c.analyze_funnel(funnel(convertTime="1", convertTimeUnit="DAY")),
        "convertTime",
        "positive",
    ),
    (
        "convert_unit",
        lambda c: c.analyze_funnel(funnel(convertTime=1, convertTimeUnit="WEEK")),
        "convertTimeUnit",
        "DAY, HOUR, MINUTE",
    ),
    (
        "convert_unit_alone",
        lambda c: c.analyze_funnel(funnel(convertTimeUnit="DAY")),
        "convertTime",
        "together with convertTimeUnit",
    ),
    (
        "convert_time_alone",
        lambda c: c.analyze_funnel(funnel(convertTime=2)),
        "convertTimeUnit",
        "together with convertTime",
    ),
    # expressions
    (
        "funnel_step_not_event",
        lambda c: c.analyze_funnel(
            funnel(steps=[{"expression": "user.age"}, {"expression": "event.a"}])
        ),
        "steps[0].expression",
        "event.<event id> here, not user.<property id>",
    ),
    (
        "funnel_step_property",
        lambda c: c.analyze_funnel(
            funnel(steps=[{"expression": "event.a"}, {"expression": "event.a.b"}])
        ),
        "steps[1].expression",
        "event.<event id> here",
    ),
    (
        "expression_malformed",
        lambda c: c.analyze_funnel(
            funnel(steps=[{"expression": "event."}, {"expression": "event.a"}])
        ),
        "steps[0].expression",
        "must be an expression",
    ),
    (
        "expression_too_deep",
        lambda c: c.analyze_events(
            events(measures=[{"expression": "event.a.b.c", "aggregator": "SUM"}])
        ),
        "measures[0].expression",
        "must be an expression",
    ),
    (
        "expression_unknown_head",
        lambda c: c.analyze_events(
            events(measures=[{"expression": "session.a", "aggregator": "SUM"}])
        ),
        "measures[0].expression",
        "must be an expression",
    ),
    (
        "measure_user_property",
        lambda c: c.analyze_events(
            events(measures=[{"expression": "user.age", "aggregator": "SUM"}])
        ),
        "measures[0].expression",
        "not user.<property id>",
    ),
    (
        "filter_on_event",
        lambda c: c.analyze_events(events(filter=flt(cond("event.purchase", "NOT_NULL", ())))),
        "filter.conditions[0].expression",
        "not event.<event id>",
    ),
    (
        "by_field_on_event",
        lambda c: c.analyze_funnel(funnel(byField={"expression": "event.a"})),
        "byField.expression",
        "not event.<event id>",
    ),
    (
        "by_fields_bad_ref",
        lambda c: c.analyze_events(events(byFields=[{"expression": "user.9a"}])),
        "byFields[0].expression",
        "must be an expression",
    ),
    (
        "conversion_expression",
        lambda c: c.get_utm_conversion(1, "2024-01-01", "2024-01-02", expression="user.age"),
        "expression",
        "event.<event id> here",
    ),
    # aggregators
    (
        "aggregator_event_with_sum",
        lambda c: c.analyze_events(
            events(measures=[{"expression": "event.a", "aggregator": "SUM"}])
        ),
        "measures[0].aggregator",
        "SUM applies to a property expression",
    ),
    (
        "aggregator_property_with_count",
        lambda c: c.analyze_events(
            events(measures=[{"expression": "event.a.b", "aggregator": "TOTAL_COUNT"}])
        ),
        "measures[0].aggregator",
        "TOTAL_COUNT applies to an event expression",
    ),
    (
        "aggregator_unknown",
        lambda c: c.analyze_events(
            events(measures=[{"expression": "event.a.b", "aggregator": "REMOVE_DUPLICATE"}])
        ),
        "measures[0].aggregator",
        "REMOVE_DUMPLICATE",
    ),
    (
        "aggregator_missing",
        lambda c: c.analyze_events(events(measures=[{"expression": "event.a"}])),
        "measures[0].aggregator",
        "required",
    ),
    (
        "conversion_measure_pairing",
        lambda c: c.get_utm_conversion(
            1,
            "2024-01-01",
            "2024-01-02",
            convert_measures=[{"expression": "event.a", "aggregator": "AVG"}],
        ),
        "convert_measures[0].aggregator",
        "AVG applies",
    ),
    # filters
    (
        "filter_empty",
        lambda c: c.analyze_events(events(filter=flt())),
        "filter.conditions",
        "non-empty",
    ),
    (
        "filter_relation",
        lambda c: c.analyze_events(events(filter=flt(cond(), relation="XOR"))),
        "filter.relation",
        "AND or OR",
    ),
    (
        "filter_no_relation",
        lambda c: c.analyze_events(events(filter={"conditions": [cond()]})),
        "filter.relation",
        "AND or OR",
    ),
    (
        "filter_function",
        lambda c: c.analyze_events(events(filter=flt(cond(function="LIKE")))),
        "filter.conditions[0].function",
        "RELATIVE_",
    ),
    (
        "filter_function_lowercase",
        lambda c: c.analyze_events(events(filter=flt(cond(function="eq")))),
        "filter.conditions[0].function",
        "one of",
    ),
    (
        "arity_null",
        lambda c: c.analyze_events(events(filter=flt(cond(function="NULL", params=[1])))),
        "filter.conditions[0].params",
        "NULL takes no params",
    ),
    (
        "arity_true",
        lambda c: c.analyze_events(events(filter=flt(cond(function="TRUE", params=[True])))),
        "filter.conditions[0].params",
        "TRUE takes no params",
    ),
    (
        "arity_range",
        lambda c: c.analyze_events(events(filter=flt(cond(function="RANGE", params=[1])))),
        "filter.conditions[0].params",
        "exactly 2",
    ),
    (
        "arity_absolute_time",
        lambda c: c.analyze_events(
            events(filter=flt(cond("user.register_time", "ABSOLUTE_TIME", ["2024-01-01"])))
        ),
        "filter.conditions[0].params",
        "exactly 2",
    ),
    (
        "arity_gt",
        lambda c: c.analyze_events(events(filter=flt(cond(function="GT", params=[1, 2])))),
        "filter.conditions[0].params",
        "exactly 1",
    ),
    (
        "arity_eq",
        lambda c: c.analyze_events(events(filter=flt(cond(function="EQ", params=[])))),
        "filter.conditions[0].params",
        "at least 1",
    ),
    (
        "arity_missing",
        lambda c: c.analyze_events(
            events(filter=flt({"expression": "user.age", "function": "GT"}))
        ),
        "filter.conditions[0].params",
        "list",
    ),
    (
        "param_type",
        lambda c: c.analyze_events(events(filter=flt(cond(function="EQ", params=[None])))),
        "filter.conditions[0].params[0]",
        "string, a number or a bool",
    ),
    (
        "step_filter",
        lambda c: c.analyze_funnel(
            funnel(
                steps=[
                    {"expression": "event.a", "filter": flt(cond(function="LT", params=[]))},
                    {"expression": "event.b"},
                ]
            )
        ),
        "steps[0].filter.conditions[0].params",
        "exactly 1",
    ),
    (
        "measure_filter",
        lambda c: c.analyze_events(
            events(
                measures=[
                    {
                        "expression": "event.a",
                        "aggregator": "TOTAL_COUNT",
                        "filter": {"conditions": "x", "relation": "AND"},
                    }
                ]
            )
        ),
        "measures[0].filter.conditions",
        "non-empty list",
    ),
    ("filter_not_dict", lambda c: c.analyze_events(events(filter=[cond()])), "filter", "object"),
    # crowds
    (
        "crowds_several",
        lambda c: c.analyze_funnel(funnel(crowds=["a", "b"])),
        "crowds",
        "comparing cohorts is not supported",
    ),
    ("crowds_empty", lambda c: c.analyze_events(events(crowds=[])), "crowds", "one cohort code"),
    ("crowds_str", lambda c: c.analyze_events(events(crowds="$ALL")), "crowds", "list"),
    ("crowds_blank", lambda c: c.analyze_events(events(crowds=[" "])), "crowds[0]", "non-empty"),
    # sampling, unit, buckets, limit, split
    (
        "sampling_zero",
        lambda c: c.analyze_funnel(funnel(samplingFactor=0)),
        "samplingFactor",
        "1 to 64",
    ),
    (
        "sampling_high",
        lambda c: c.analyze_events(events(samplingFactor=65)),
        "samplingFactor",
        "1 to 64",
    ),
    (
        "sampling_bool",
        lambda c: c.analyze_events(events(samplingFactor=True)),
        "samplingFactor",
        "1 to 64",
    ),
    (
        "sampling_float",
        lambda c: c.analyze_events(events(samplingFactor=1.0)),
        "samplingFactor",
        "1 to 64",
    ),
    ("unit_unknown", lambda c: c.analyze_events(events(unit="DAYS")), "unit", "QUARTER"),
    ("unit_hour_range", lambda c: c.analyze_events(events(unit="HOUR")), "unit", "single day"),
    ("unit_minute_range", lambda c: c.analyze_events(events(unit="MINUTE")), "unit", "single day"),
    (
        "buckets_decreasing",
        lambda c: c.analyze_events(
            events(byFields=[{"expression": "user.age", "buckets": [800, 600]}])
        ),
        "byFields[0].buckets",
        "strictly increasing",
    ),
    (
        "buckets_equal",
        lambda c: c.analyze_funnel(funnel(byField={"expression": "user.age", "buckets": [1, 1]})),
        "byField.buckets",
        "strictly increasing",
    ),
    (
        "buckets_element",
        lambda c: c.analyze_events(
            events(byFields=[{"expression": "user.age", "buckets": [1, "2"]}])
        ),
        "byFields[0].buckets[1]",
        "finite number",
    ),
    (
        "buckets_nan",
        lambda c: c.analyze_events(
            events(byFields=[{"expression": "user.age", "buckets": [float("nan")]}])
        ),
        "byFields[0].buckets[0]",
        "finite number",
    ),
    (
        "by_fields_not_list",
        lambda c: c.analyze_events(events(byFields={"expression": "user.age"})),
        "byFields",
        "list",
    ),
    ("funnel_limit", lambda c: c.analyze_funnel(funnel(limit=0)), "limit", "positive"),
    ("funnel_limit_bool", lambda c: c.analyze_funnel(funnel(limit=True)), "limit", "positive"),
    (
        "by_step_index_range",
        lambda c: c.analyze_funnel(funnel(byStepIndex=2, byField={"expression": "user.age"})),
        "byStepIndex",
        "-1 to 1",
    ),
    (
        "by_step_index_alone",
        lambda c: c.analyze_funnel(funnel(byStepIndex=0)),
        "byStepIndex",
        "together with byField",
    ),
    (
        "steps_one",
        lambda c: c.analyze_funnel(funnel(steps=[{"expression": "event.a"}])),
        "steps",
        "at least 2",
    ),
    (
        "step_unknown_key",
        lambda c: c.analyze_funnel(
            funnel(steps=[{"expression": "event.a", "filters": None}, {"expression": "event.b"}])
        ),
        "steps[0].filters",
        "did you mean filter",
    ),
    (
        "use_cache",
        lambda c: c.analyze_events(events(useCache="false")),
        "useCache",
        "True or False",
    ),
    ("measures_empty", lambda c: c.analyze_events(events(measures=[])), "measures", "non-empty"),
    # unknown and missing keys
    (
        "unknown_key_typo",
        lambda c: c.analyze_funnel(funnel(fromdate="2024-01-01")),
        "fromdate",
        "did you mean fromDate",
    ),
    (
        "unknown_key_events",
        lambda c: c.analyze_events(events(limit=10)),
        "limit",
        "not a known key",
    ),
    (
        "missing_key",
        lambda c: c.analyze_events(
            {"measures": events()["measures"], "crowds": ["$ALL"], "fromDate": "2024-01-01"}
        ),
        "toDate",
        "required",
    ),
    ("request_not_dict", lambda c: c.analyze_funnel([]), "request", "dict"),
    # cohorts
    ("cohort_code_empty", lambda c: c.get_cohort_users(""), "cohort_code", "non-empty"),
    ("cohort_limit_zero", lambda c: c.get_cohort_users("x", limit=0), "limit", "positive"),
    ("cohort_limit_bool", lambda c: c.export_cohort_users("x", limit=True), "limit", "positive"),
    ("cohort_page_alone", lambda c: c.get_cohort_users("x", page=1), "page_size", "go together"),
    (
        "cohort_page_size_alone",
        lambda c: c.get_cohort_users("x", page_size=10),
        "page",
        "go together",
    ),
    (
        "cohort_page_zero",
        lambda c: c.get_cohort_users("x", page=0, page_size=5),
        "page",
        "positive",
    ),
    (
        "cohort_page_size_over_limit",
        lambda c: c.get_cohort_users("x", limit=10, page=1, page_size=20),
        "page_size",
        "not exceed limit",
    ),
    (
        "cohort_properties_bad",
        lambda c: c.get_cohort_users("x", properties=["ok", "bad-id"]),
        "properties[1]",
        "letters",
    ),
    (
        "cohort_properties_empty",
        lambda c: c.export_cohort_users("x", properties=[]),
        "properties",
        "non-empty",
    ),
    (
        "cohort_properties_str",
        lambda c: c.export_cohort_users("x", properties="age"),
        "properties",
        "list",
    ),
    (
        "cohort_tag_empty",
        lambda c: c.get_cohort_users("x", properties=["tag."]),
        "properties[0]",
        "tag.<code>",
    ),
    (
        "cohort_pages_size",
        lambda c: c.iter_cohort_user_pages("x", page_size=0),
        "page_size",
        "positive",
    ),
    ("cohort_pages_limit", lambda c: c.iter_cohort_user_pages("x", limit=-1), "limit", "positive"),
    # accounts
    ("email_plain", lambda c: c.register_account("not-an-email"), "email", "e-mail"),
    ("email_no_tld", lambda c: c.set_account_activation("a@localhost", True), "email", "e-mail"),
    ("email_space", lambda c: c.register_account("a b@example.com"), "email", "e-mail"),
    (
        "activation_int",
        lambda c: c.set_account_activation("a@example.com", 1),
        "activation",
        "True or False",
    ),
    (
        "activation_str",
        lambda c: c.set_account_activation("a@example.com", "true"),
        "activation",
        "True or False",
    ),
    (
        "account_user_name",
        lambda c: c.register_account("a@example.com", user_name=""),
        "user_name",
        "non-empty",
    ),
    (
        "login_user",
        lambda c: c.set_account_activation("a@example.com", True, login_user=3),
        "login_user",
        "non-empty",
    ),
    # ad tracking
    ("page_url_scheme", lambda c: c.create_utm("ftp://x.com", "c", "m", "s"), "page_url", "http"),
    (
        "page_url_relative",
        lambda c: c.create_utm("/landing", "c", "m", "s"),
        "page_url",
        "absolute",
    ),
    ("page_url_no_host", lambda c: c.create_utm("https://", "c", "m", "s"), "page_url", "host"),
    (
        "page_url_space",
        lambda c: c.create_utm("https://x.com/a b", "c", "m", "s"),
        "page_url",
        "absolute",
    ),
    (
        "utm_campaign",
        lambda c: c.create_utm("https://x.com", "", "m", "s"),
        "utm_campaign",
        "non-empty",
    ),
    (
        "utm_medium",
        lambda c: c.create_utm("https://x.com", "c", "  ", "s"),
        "utm_medium",
        "non-empty",
    ),
    (
        "utm_source",
        lambda c: c.create_utm("https://x.com", "c", "m", None),
        "utm_source",
        "non-empty",
    ),
    (
        "utm_content",
        lambda c: c.create_utm("https://x.com", "c", "m", "s", utm_content=1),
        "utm_content",
        "string",
    ),
    (  # the published tracking link would show the credentials
        "page_url_userinfo",
        lambda c: c.create_utm("https://ana:Pw-7@shop.example.com/", "c", "m", "s"),
        "page_url",
        "must not carry user:password@",
    ),
    (
        "page_url_port",
        lambda c: c.create_utm("https://shop.example.com:99999/", "c", "m", "s"),
        "page_url",
        "URL with a host",
    ),
    (  # browsers read shop.example.com, Python evil.example
        "page_url_backslash",
        lambda c: c.create_utm("https://shop.example.com\\@evil.example/", "c", "m", "s"),
        "page_url",
        "must not carry user:password@",
    ),
    ("campaign_slash", lambda c: c.get_utm("a/b"), "campaign_id", "letters, digits"),
    ("campaign_dots", lambda c: c.delete_utm(".."), "campaign_id", "letters, digits"),
    (
        "campaign_query",
        lambda c: c.get_utm_conversion("a?b", "2024-01-01", "2024-01-01"),
        "campaign_id",
        "letters",
    ),
    ("campaign_long", lambda c: c.get_utm("x" * 65), "campaign_id", "1 to 64"),
    ("campaign_bool", lambda c: c.delete_utm(True), "campaign_id", "1 to 64"),
    (
        "conversion_use_cache",
        lambda c: c.get_utm_conversion(1, "2024-01-01", "2024-01-01", use_cache=1),
        "use_cache",
        "True or False",
    ),
    (
        "conversion_measures_empty",
        lambda c: c.get_utm_conversion(1, "2024-01-01", "2024-01-01", convert_measures=[]),
        "convert_measures",
        "non-empty",
    ),
    # tracking plan filters
    ("plan_two", lambda c: c.list_events(plan=2), "plan", "0 or 1"),
    ("plan_bool", lambda c: c.list_user_properties(plan=True), "plan", "0 or 1"),
    (
        "data_status_str",
        lambda c: c.list_event_properties("a", data_status="1"),
        "data_status",
        "0 or 1",
    ),
    # a page asked of a whole-cohort reader (the export would send it, the pages drop it)
    (
        "export_paged_query",
        lambda c: c.export_cohort_users(v.CohortQuery("vip", page=2, page_size=10)),
        "page",
        "reads the whole cohort",
    ),
    (
        "iter_pages_paged_query",
        lambda c: c.iter_cohort_user_pages(v.CohortQuery("vip", page=2, page_size=10)),
        "page",
        "is for get_cohort_users",
    ),
]


@pytest.fixture
def client() -> AnalyticsClient:
    config = ClientConfig(BASE, token="t", app_key="a", xtoken="x")
    return AnalyticsClient(config, sleep=lambda _: None)


@pytest.mark.parametrize(
    ("call", "field", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_rule_fails_before_any_request(
    client: AnalyticsClient,
    requests_mock: rm.Mocker,
    call: Callable[[AnalyticsClient], Any],
    field: str,
    words: str,
) -> None:
    requests_mock.register_uri(rm_module.ANY, rm_module.ANY, json={"success": 0})
    with pytest.raises(AnalyticsValidationError) as caught:
        call(client)
    error = caught.value
    assert error.field == field
    assert str(error).startswith(f"{field}: ")
    assert words in str(error)
    assert error.operation is not None
    assert error.status is None
    assert requests_mock.request_history == []


def test_password_is_never_shown_in_a_validation_message(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    with pytest.raises(AnalyticsValidationError) as caught:
        client.register_account("a@example.com", password=["Secret-Pw-1"])  # type: ignore[arg-type]
    assert "Secret-Pw-1" not in str(caught.value)
    assert caught.value.field == "password"
    assert requests_mock.request_history == []


def test_an_account_body_never_shows_its_password() -> None:
    account = v.Account(email="a@example.com", password="Secret-Pw-2")
    assert "Secret-Pw-2" not in repr(account) + str(account)
    assert account.to_body() == {"email": "a@example.com", "password": "Secret-Pw-2"}


@pytest.mark.parametrize(
    "text",
    ["Page view", "页面浏览", "结账（移动端），第一步。", "v1.2-beta_(x)", "Größe", "नमस्ते", "a,b"],
)
def test_names_in_any_script_with_allowed_punctuation_pass(text: str) -> None:
    assert v.rules.name(text) == text


@pytest.mark.parametrize("ref", ["$city", "$Anything", "_x1", "A" * 100, "$" + "a" * 100])
def test_references_allow_a_preset_dollar(ref: str) -> None:
    assert v.rules.id_ref(ref, "id") == ref


def test_new_ids_refuse_the_dollar_and_accept_the_longest() -> None:
    assert v.rules.new_id("a" * 100, "id") == "a" * 100
    with pytest.raises(AnalyticsValidationError):
        v.rules.new_id("$city", "id")


@pytest.mark.parametrize(
    "function",
    ["NULL", "NOT_NULL", "EMPTY", "NOT_EMPTY", "TRUE", "FALSE"],
)
def test_zero_arity_functions_may_omit_params(function: str) -> None:
    body = {"expression": "user.is_vip", "function": function}
    assert Condition.from_body(body).to_body() == {
        "expression": "user.is_vip",
        "function": function,
        "params": [],
    }


@pytest.mark.parametrize("params", [[], ["7"], [1, 2, 3]])
def test_relative_time_functions_take_any_params(params: list[Any]) -> None:
    got = Condition.from_body(
        {"expression": "user.register_time", "function": "RELATIVE_LAST_DAYS", "params": params}
    )
    assert got.to_body()["params"] == params


def test_funnel_request_is_normalised_without_touching_the_input() -> None:
    request = funnel(
        fromDate=datetime.date(2024, 1, 1),
        filter=flt(cond("user.age", "RANGE", (18, 30)), relation="or"),
        byField={"expression": "event.$startup.$city"},
        byStepIndex=0,
        useCache=None,
    )
    original = copy.deepcopy(request)

    got = FunnelRequest.model_validate(request).sent()

    assert request == original
    assert got == {
        "steps": [
            {"expression": "event.$startup", "filter": None},
            {"expression": "event.purchase", "filter": None},
        ],
        "crowds": ["$ALL"],
        "fromDate": "2024-01-01",
        "toDate": "2024-01-07",
        "filter": {
            "conditions": [{"expression": "user.age", "function": "RANGE", "params": [18, 30]}],
            "relation": "OR",
        },
        "byStepIndex": 0,
        "byField": {"expression": "event.$startup.$city"},
    }


def test_event_request_is_normalised() -> None:
    got = EventRequest.model_validate(
        events(
            measures=[
                {"expression": "event.purchase.amount", "aggregator": "AVG_PER", "filter": None},
                {"expression": "event.$Anything", "aggregator": "AVG_COUNT"},
            ],
            unit="HOUR",
            fromDate="2024-03-05",
            toDate=datetime.date(2024, 3, 5),
            byFields=[],
            samplingFactor=64,
        )
    ).sent()
    assert got == {  # an empty byFields is not sent
        "measures": [
            {"expression": "event.purchase.amount", "aggregator": "AVG_PER"},
            {"expression": "event.$Anything", "aggregator": "AVG_COUNT"},
        ],
        "crowds": ["$ALL"],
        "fromDate": "2024-03-05",
        "toDate": "2024-03-05",
        "samplingFactor": 64,
        "unit": "HOUR",
    }


def test_every_property_aggregator_pairs_with_property_expressions() -> None:
    for aggregator in PROPERTY_AGGREGATORS:
        assert ConversionMeasure("event.a.b", aggregator).aggregator == aggregator  # type: ignore[arg-type]
    for aggregator in EVENT_AGGREGATORS:
        assert ConversionMeasure("event.a", aggregator).aggregator == aggregator  # type: ignore[arg-type]


def test_cohort_body_keeps_presets_and_names_tags_by_code() -> None:
    assert v.cohort_body(
        "c",
        limit=5,
        properties=("distinct_id", "$city", "tag.tag_rfm", "tag_x"),
        page=1,
        page_size=5,
    ) == {
        "cohortCode": "c",
        "limit": 5,
        "properties": ["distinct_id", "$city", "tag_rfm", "tag_x"],
        "page": 1,
        "pageSize": 5,
    }


def test_a_cohort_query_holds_its_checked_arguments() -> None:
    query = v.CohortQuery("cohort_small", 3, ["age", "tag.tag_rfm"])
    assert (query.cohort_code, query.limit, query.properties) == (
        "cohort_small",
        3,
        ("age", "tag.tag_rfm"),
    )
    with pytest.raises(AnalyticsValidationError, match=r"^limit: "):
        v.CohortQuery("cohort_small", 0)


def test_campaign_ids_from_create_are_accepted_as_int_or_str() -> None:
    assert v.rules.campaign_id(12345) == "12345"
    assert v.rules.campaign_id("AbC_9-x") == "AbC_9-x"


def test_a_cohort_query_is_checked_once_and_then_passed_as_it_is() -> None:
    query = v.cohort_query("cohort_small", limit=10, properties=["$city", "tag_rfm"])
    assert (query.cohort_code, query.limit, query.properties) == (
        "cohort_small",
        10,
        ("$city", "tag_rfm"),
    )
    assert v.cohort_query(query) is query
    assert v.cohort_body(query, page=2, page_size=5) == {
        "cohortCode": "cohort_small",
        "limit": 10,
        "properties": ["$city", "tag_rfm"],
        "page": 2,
        "pageSize": 5,
    }
    assert query.sizing() == v.cohort_query("cohort_small", limit=1, properties=["$city"])
    assert v.cohort_query("c").sizing() == v.cohort_query("c", limit=1)
    with pytest.raises(AnalyticsValidationError, match=r"^limit: give it inside the CohortQuery"):
        v.cohort_query(query, limit=5)
    with pytest.raises(AnalyticsValidationError, match=r"^properties\[0\]: "):
        query.with_properties(["a b"])
    with pytest.raises(AnalyticsValidationError, match=r"^page_size: must not exceed limit"):
        v.cohort_body(query, page=1, page_size=11)


def test_an_analysis_request_is_checked_once_and_windowed_inside_its_range() -> None:
    body = {
        "steps": [{"expression": "event.a"}, {"expression": "event.b"}],
        "crowds": ["$ALL"],
        "fromDate": "2024-01-01",
        "toDate": "2024-01-31",
    }
    checked = FunnelRequest.of(body)
    assert checked.analysis_kind == "funnel"
    assert FunnelRequest.of(checked) is checked
    window = checked.window("2024-01-08", "2024-01-14").sent()
    assert (window["fromDate"], window["toDate"]) == ("2024-01-08", "2024-01-14")
    assert checked.sent()["fromDate"] == "2024-01-01"
    with pytest.raises(ValueError, match="not inside"):
        checked.window("2023-12-31", "2024-01-02")
    with pytest.raises(AnalyticsValidationError, match=r"^request: is FunnelRequest \(funnel\)"):
        EventRequest.of(checked)
    with pytest.raises(AnalyticsValidationError, match=r"^toDate: "):
        checked.window("2024-01-08", "2024-01-0x")
    dated = checked.window(datetime.date(2024, 1, 8), datetime.date(2024, 1, 14))  # type: ignore[arg-type]
    assert dated == checked.window("2024-01-08", "2024-01-14")  # the days as text, no TypeError
    assert dated.asked().from_date == "2024-01-08"


def test_a_checked_request_cannot_be_made_or_changed_without_its_check() -> None:
    """The client sends a CohortQuery or an analysis request as it is, so one is checked
    whenever it is made, a copy included."""
    import dataclasses

    with pytest.raises(AnalyticsValidationError, match=r"^cohort_code: must not contain"):
        v.CohortQuery('../x"', limit=-5, properties=("a b",))
    query = v.cohort_query("vip", limit=5)
    with pytest.raises(AnalyticsValidationError, match=r"^cohort_code: must not contain"):
        query.model_copy(update={"cohort_code": "../../x\n"})
    with pytest.raises(AnalyticsValidationError, match=r"^limit: must be a positive"):
        query.model_copy(update={"limit": -5})
    with pytest.raises(TypeError):
        dataclasses.replace(query, limit=-5)  # type: ignore[type-var]
    with pytest.raises(ValueError, match="frozen"):
        query.limit = -5  # type: ignore[misc]
    with pytest.raises(AnalyticsValidationError, match=r"^bogus: is not a known key"):
        EventRequest.model_validate({"bogus": 1})


@pytest.mark.parametrize(
    ("old", "typed", "body"),
    [
        (v.validate_funnel_request, FunnelRequest, funnel),
        (v.validate_event_request, EventRequest, events),
    ],
)
def test_the_deprecated_validators_warn_and_give_the_declared_body(
    old: Callable[[Any], Any], typed: type[FunnelRequest | EventRequest], body: Callable[[], Any]
) -> None:
    with pytest.deprecated_call(match=rf"{old.__name__} is deprecated; use {typed.__name__}\."):
        sent = old(body())
    assert sent == typed.of(body()).sent()
    with pytest.deprecated_call(), pytest.raises(AnalyticsValidationError):
        old({**body(), "fromDate": "2024-13-01"})


@pytest.mark.parametrize("zone", ["+0\u0668:00", "+08:0\uff10", "-\u0661\u0660:00"])
def test_an_offset_in_other_than_ascii_digits_is_no_time_zone(zone: str) -> None:
    """Arrow and zoneinfo read no such offset: refused by name before anything runs."""
    with pytest.raises(AnalyticsValidationError, match=r"^timezone: must be a time zone name"):
        rules.time_zone(zone)
    assert rules.time_zone("+08:00") == "+08:00"
