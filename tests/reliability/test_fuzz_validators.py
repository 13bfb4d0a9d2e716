"""Hypothesis against the client's validators: any value either passes or raises
``AnalyticsValidationError`` naming a field (never another exception), and a body the client
passes is one the emulator does not answer with a server error."""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Any, Final

import pytest
from analytics_emulator.server import EmulatorConfig, EmulatorServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_analytics.client import (
    AnalyticsClient,
    AnalyticsValidationError,
    ClientConfig,
    EventRequest,
    Filter,
    FunnelRequest,
    Measure,
    validation,
)
from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.errors import AnalyticsBadRequestError
from tests.reliability.fuzzing import json_values, mutated
from tests.reliability.results import record
from tests.reliability.subjects import EVENT_REQUEST, FUNNEL_REQUEST

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

EXAMPLES: Final = 200
FUZZ_SETTINGS: Final = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
EVENT_PROPERTIES: Final = [{"id": "refund_reason", "dataType": "string", "name": "Reason"}]
COHORT_ARGUMENTS: Final = {
    "limit": 20,
    "properties": ["age", "tag.tag_rfm"],
    "page": 1,
    "page_size": 5,
}

EXISTENCE: Final = re.compile(
    r"crowds(\[0\])?|(steps|measures|byFields)\[\d+\]\.expression|byField\.expression"
    r"|(.*\.)?filter\.conditions\[\d+\]\.expression"
)
"""Request parameters whose refusal depends on what exists on the platform."""

VALIDATORS: Final[dict[str, Callable[[Any], Any]]] = {
    "validate_funnel_request": lambda value: FunnelRequest.of(value).sent(),
    "validate_event_request": lambda value: EventRequest.of(value).sent(),
    "conversion_measures": lambda value: validation.UtmConversionQuery(
        from_date="2024-01-01", to_date="2024-01-01", convert_measures=value
    ),
    "event_property_definitions": lambda value: validation.EventBody(id="e", properties=value),
    "validate_properties": lambda value: validation.CohortQuery("c", properties=value),
    "filter": Filter.model_validate,
    "crowds": lambda value: EventRequest(
        measures=[Measure("event.a", "TOTAL_COUNT")], crowds=value
    ),
    "new_id": lambda value: rules.new_id(value, "id"),
    "id_ref": lambda value: rules.id_ref(value, "id"),
    "name": rules.name,
    "remark": rules.remark,
    "data_type": rules.data_type,
    "date": lambda value: rules.date(value, "fromDate"),
    "positive_int": lambda value: rules.positive_int(value, "limit"),
    "boolean": lambda value: rules.boolean(value, "activation"),
    "campaign_id": rules.campaign_id,
    "email": rules.email,
    "http_url": lambda value: rules.http_url(value, "page_url"),
    "flag": lambda value: rules.flag(value, "plan"),
    "json_scalar": lambda value: rules.json_scalar(value, "params[0]"),
}
"""Every validator, fed one value."""

VALID: Final[dict[str, Any]] = {
    "validate_funnel_request": FUNNEL_REQUEST,
    "validate_event_request": EVENT_REQUEST,
    "conversion_measures": [{"expression": "event.purchase", "aggregator": "TOTAL_COUNT"}],
    "event_property_definitions": EVENT_PROPERTIES,
    "validate_properties": ["distinct_id", "$city", "tag.tag_rfm"],
    "filter": {
        "conditions": [{"expression": "user.age", "function": "RANGE", "params": [18, 30]}],
        "relation": "or",
    },
    "crowds": ["$ALL"],
}
"""Valid values to start mutations from, where a validator takes a structure."""


def judged(validator: Callable[[Any], Any], value: Any) -> str:
    """Run a validator; ``passed`` or ``refused``, and only ever a validation error."""
    try:
        validator(value)
    except AnalyticsValidationError as error:
        assert error.field, f"no field named for {value!r}"
        assert str(error).startswith(f"{error.field}: "), str(error)
        return "refused"
    return "passed"


@pytest.mark.parametrize("name", sorted(VALIDATORS))
def test_validators_pass_or_name_a_field_never_crash(name: str) -> None:
    validator = VALIDATORS[name]
    values = json_values if name not in VALID else st.one_of(json_values, mutated(VALID[name]))
    outcomes: Counter[str] = Counter()

    @FUZZ_SETTINGS
    @given(value=values)
    def fuzz(value: Any) -> None:
        outcomes[judged(validator, value)] += 1

    fuzz()
    record(
        "fuzz",
        {"target": f"client {name}", "examples": sum(outcomes.values()), "statuses": outcomes},
    )
    assert outcomes["refused"] > 0


@FUZZ_SETTINGS
@given(arguments=mutated(COHORT_ARGUMENTS), code=st.one_of(st.just("cohort_small"), json_values))
def test_cohort_arguments_pass_or_name_a_field(arguments: Any, code: Any) -> None:
    if not isinstance(arguments, dict):
        return
    known = {k: v for k, v in arguments.items() if k in COHORT_ARGUMENTS}
    judged(lambda value: validation.cohort_body(code, **value), known)


@FUZZ_SETTINGS
@given(name=st.one_of(st.none(), json_values), data_type=st.one_of(st.none(), json_values))
def test_plan_changes_pass_or_name_a_field(name: Any, data_type: Any) -> None:
    judged(lambda value: validation.Changes(name=value, data_type=data_type), name)


@pytest.fixture(scope="module")
def client() -> Iterator[AnalyticsClient]:
    with EmulatorServer(EmulatorConfig()) as server:
        config = ClientConfig(
            server.base_url, token=server.config.token, app_key=server.config.app_key
        )
        with AnalyticsClient(config) as api:
            yield api


@pytest.mark.parametrize("kind", ["funnel", "events"])
def test_what_the_client_passes_the_platform_answers(client: AnalyticsClient, kind: str) -> None:
    """A passed body gets an answer, or a 400 naming only what the client cannot check (which
    cohorts, events and properties exist); anything else fails this."""
    analyze = client.analyze_funnel if kind == "funnel" else client.analyze_events
    base = FUNNEL_REQUEST if kind == "funnel" else EVENT_REQUEST
    outcomes: Counter[str] = Counter()

    @FUZZ_SETTINGS
    @given(body=mutated(base))
    def fuzz(body: Any) -> None:
        try:
            analyze(body)
        except AnalyticsValidationError:
            outcomes["refused by the client"] += 1
        except AnalyticsBadRequestError as error:
            outcomes["refused by the platform"] += 1
            unknowable = [p for p in error.params or [] if not EXISTENCE.fullmatch(str(p))]
            assert not unknowable, f"the client passed what the platform refuses: {error}"
        else:
            outcomes["answered"] += 1

    fuzz()
    record(
        "fuzz",
        {
            "target": f"client-validated {kind} bodies to the emulator",
            "examples": sum(outcomes.values()),
            "statuses": outcomes,
        },
    )
    assert outcomes["answered"] > 0 and outcomes["refused by the client"] > 0
