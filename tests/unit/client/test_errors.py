"""Error answers and unexpected bodies map to the right error type with status/code/msg/data."""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_analytics.client import (
    AnalyticsAlreadyExistsError,
    AnalyticsApiError,
    AnalyticsAuthenticationError,
    AnalyticsBadRequestError,
    AnalyticsClient,
    AnalyticsConfigurationError,
    AnalyticsDisabledError,
    AnalyticsError,
    AnalyticsNotCompletedError,
    AnalyticsNotFoundError,
    AnalyticsOperationFailedError,
    AnalyticsProtocolError,
    AnalyticsQuotaExceededError,
    AnalyticsRateLimitError,
    AnalyticsServerError,
    AnalyticsStreamError,
    AnalyticsTransportError,
    AnalyticsUnsupportedMediaTypeError,
    AnalyticsValidationError,
    ClientConfig,
)
from airflow_provider_analytics.client.answers import AnswerShapeError

if TYPE_CHECKING:
    import requests_mock as rm

BASE = "https://analytics.example.com"
EVENTS = BASE + "/uba/api/schema/event"
ACCOUNTS = BASE + "/uba/manage/enterprise/accounts"
UTM_CREATE = BASE + "/svc/uba/api/operations/utm"


@pytest.fixture
def client() -> AnalyticsClient:
    config = ClientConfig(BASE, token="tok-1", app_key="app-1", xtoken="xt-1", max_attempts=2)
    return AnalyticsClient(config, sleep=lambda _: None)


def body(code: Any, msg: str, data: Any = None) -> dict[str, Any]:
    return {"code": code, "msg": msg, "data": data}


@pytest.mark.parametrize(
    ("status", "answer", "error_type", "code"),
    [
        (400, body(400, "bad parameter", ["plan"]), AnalyticsBadRequestError, 400),
        (498, body(498, "bad parameter (legacy)"), AnalyticsBadRequestError, 498),
        (401, body(401, "authentication failed"), AnalyticsAuthenticationError, 401),
        (404, body(404, "no such API"), AnalyticsNotFoundError, 404),
        (415, body(415, "content type"), AnalyticsUnsupportedMediaTypeError, 415),
        (429, body(429, "slow down"), AnalyticsRateLimitError, 429),
        (501, body(501, "quota exceeded"), AnalyticsQuotaExceededError, 501),
        (501, body(50101, "already exists", ["email"]), AnalyticsAlreadyExistsError, 50101),
        (501, body("50102", "disabled"), AnalyticsDisabledError, 50102),
        (501, body(59999, "other"), AnalyticsNotCompletedError, 59999),
        (501, body("\u00b2", "a digit int() refuses"), AnalyticsNotCompletedError, "\u00b2"),
        (501, body("--5", "two signs"), AnalyticsNotCompletedError, "--5"),
        (501, body("9" * 5000, "too long"), AnalyticsNotCompletedError, "9" * 5000),
        (501, body("\x1c50102", "a separator strip() takes"), AnalyticsDisabledError, 50102),
        (499, body(50101, "already exists (legacy)"), AnalyticsAlreadyExistsError, 50101),
        (500, body(500, "internal"), AnalyticsServerError, 500),
        (502, body(502, "bad gateway"), AnalyticsServerError, 502),
        (503, body(503, "engine unavailable"), AnalyticsServerError, 503),
        (504, body(504, "gateway timeout"), AnalyticsServerError, 504),
        (507, body(507, "storage"), AnalyticsServerError, 507),
        (403, body(403, "forbidden"), AnalyticsApiError, 403),
    ],
)
def test_status_maps_to_error_type(
    client: AnalyticsClient,
    requests_mock: rm.Mocker,
    status: int,
    answer: dict[str, Any],
    error_type: type[AnalyticsApiError],
    code: int,
) -> None:
    requests_mock.get(EVENTS, status_code=status, json=answer)
    with pytest.raises(AnalyticsApiError) as caught:
        client.list_events()
    error = caught.value
    assert type(error) is error_type
    assert error.status == status
    assert error.code == code
    assert error.msg == answer["msg"]
    assert error.data == answer["data"]
    assert error.operation == "list_events"
    assert str(error).startswith("list_events: ")
    assert f"HTTP {status}" in str(error)
    assert answer["msg"] in str(error)


def test_bad_request_lists_the_offending_parameters(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    requests_mock.post(
        BASE + "/uba/api/funnels/analyze",
        status_code=400,
        json=body(400, "unknown event", ["steps[1].expression"]),
    )
    request = {
        "steps": [{"expression": "event.a"}, {"expression": "event.nope"}],
        "crowds": ["$ALL"],
        "fromDate": "2024-01-01",
        "toDate": "2024-01-02",
    }
    with pytest.raises(AnalyticsBadRequestError) as caught:
        client.analyze_funnel(request)
    assert caught.value.params == ["steps[1].expression"]
    assert "offending parameters: steps[1].expression" in str(caught.value)
    assert caught.value.operation == "analyze_funnel"


def test_bad_request_without_a_parameter_list_has_no_params(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    requests_mock.get(EVENTS, status_code=400, json=body(400, "wrong", None))
    with pytest.raises(AnalyticsBadRequestError) as caught:
        client.list_events()
    assert caught.value.params is None


def test_authentication_advice_depends_on_the_credential_kind(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    requests_mock.get(EVENTS, status_code=401, json=body(401, "no"))
    requests_mock.post(ACCOUNTS, status_code=401, json=body(401, "no"))
    with pytest.raises(AnalyticsAuthenticationError, match="token and appKey"):
        client.list_events()
    with pytest.raises(AnalyticsAuthenticationError, match="xtoken") as caught:
        client.register_account("a@example.com")
    assert "appKey" not in str(caught.value)


def test_not_found_points_at_base_url_and_prefix(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    requests_mock.get(BASE + "/svc/uba/api/operations/utm/9", status_code=404, text="Not Found")
    with pytest.raises(AnalyticsNotFoundError) as caught:
        client.get_utm("9")
    message = str(caught.value)
    assert "base URL" in message and "utm_prefix" in message and "/ark" in message
    assert caught.value.code is None and caught.value.msg is None


def test_disabled_account_advice_names_activation(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    requests_mock.post(ACCOUNTS, status_code=501, json=body(50102, "account disabled"))
    with pytest.raises(AnalyticsDisabledError, match="set_account_activation"):
        client.register_account("a@example.com")


def test_error_body_that_is_not_json_still_maps(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    requests_mock.get(EVENTS, status_code=502, text="<html>Bad Gateway</html>")
    with pytest.raises(AnalyticsServerError) as caught:
        client.list_events()
    assert (caught.value.status, caught.value.code, caught.value.msg) == (502, None, None)


def test_redirects_are_not_followed(client: AnalyticsClient, requests_mock: rm.Mocker) -> None:
    requests_mock.get(EVENTS, status_code=302, headers={"Location": "https://elsewhere.test/"})
    requests_mock.get("https://elsewhere.test/", json=[])
    with pytest.raises(AnalyticsApiError, match="redirect") as caught:
        client.list_events()
    assert caught.value.status == 302
    assert requests_mock.call_count == 1


@pytest.mark.parametrize(("success", "msg"), [(1, "not allowed"), (-1, None)])
def test_success_other_than_zero_is_an_operation_failure(
    client: AnalyticsClient, requests_mock: rm.Mocker, success: Any, msg: str | None
) -> None:
    answer: dict[str, Any] = {"success": success, "code": 7}
    if msg:
        answer["msg"] = msg
    requests_mock.post(BASE + "/uba/api/schema/userProperties", json=answer)
    with pytest.raises(AnalyticsOperationFailedError) as caught:
        client.add_user_property("vip_level", "number")
    error = caught.value
    assert (error.status, error.code, error.msg) == (200, 7, msg)
    assert error.operation == "add_user_property"
    assert "success=" in str(error)


@pytest.mark.parametrize("success", ["0", None, True, 0.0, [0]])
def test_success_that_is_no_integer_is_refused_by_shape_not_called_a_failure(
    client: AnalyticsClient, requests_mock: rm.Mocker, success: Any
) -> None:
    """``"0"`` beside a campaign id: the link was likely made, and "not carried out" invited
    a second create; a create's refusal says the outcome is unknown."""
    requests_mock.post(UTM_CREATE, json={"success": success, "campaignId": 5})
    with pytest.raises(AnswerShapeError, match=r"success must be a JSON integer") as caught:
        client.create_utm("https://a.example.com/", "c", "m", "s")
    assert not isinstance(caught.value, AnalyticsOperationFailedError)
    assert "may exist" in str(caught.value) or "outcome" in str(caught.value)


CONVERSION = "/svc/uba/api/operations/utm/analysys/5"
COHORT_USERS = "/uba/api/cohort/users"


def conversion(c: AnalyticsClient) -> Any:
    return c.get_utm_conversion(5, "2024-01-01", "2024-01-02")


def page_lines(c: AnalyticsClient) -> Any:
    return c.get_cohort_user_lines("vip", page=1, page_size=2)


@pytest.mark.parametrize(
    ("path", "call", "code"),
    [  # the conversion's answer is undeclared beyond success: the object was its result
        (CONVERSION, conversion, 500),
        (COHORT_USERS, page_lines, "E42"),
        (COHORT_USERS, lambda c: c.get_cohort_users("vip"), 503),
    ],
)
def test_the_platforms_error_object_with_a_200_is_refused_naming_it(
    client: AnalyticsClient, requests_mock: rm.Mocker, path: str, call: Any, code: Any
) -> None:
    requests_mock.post(BASE + path, json=body(code, "query engine failed"))
    with pytest.raises(AnalyticsProtocolError, match="the platform's error object") as caught:
        call(client)
    assert (caught.value.code, caught.value.msg) == (code, "query engine failed")
    assert caught.value.transient  # as any answer of the wrong shape


def test_an_unpaged_answer_of_more_users_than_the_limit_asked_is_refused(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    users = [{"distinct_id": n} for n in range(5)]
    requests_mock.post(BASE + COHORT_USERS, json={"count": 5, "users": users})
    with pytest.raises(AnalyticsProtocolError, match="users holds 5 users, more than the limit 2"):
        client.get_cohort_users("vip", limit=2)
    assert len(client.get_cohort_users("vip", limit=5)["users"]) == 5


def test_the_record_of_another_campaign_than_asked_is_refused(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    record = {"campaignId": 7, "pageUrl": "https://shop.example.com/", "url": "https://t.example/7"}
    requests_mock.get(BASE + "/svc/uba/api/operations/utm/8", json=record)
    with pytest.raises(AnalyticsProtocolError, match="campaignId is 7, but '8' was asked"):
        client.get_utm(8)
    requests_mock.get(BASE + "/svc/uba/api/operations/utm/7", json=record)
    assert client.get_utm("7")["campaignId"] == 7


def test_a_page_kept_as_lines_reporting_failure_is_an_operation_failure(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    failed = {"success": 1, "msg": "query engine failed", "count": 0, "users": []}
    requests_mock.post(BASE + COHORT_USERS, json=failed)
    with pytest.raises(AnalyticsOperationFailedError, match="success=1, msg: query engine"):
        page_lines(client)


def test_success_other_than_zero_fails_reads_too(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    requests_mock.get(BASE + "/svc/uba/api/operations/utm/5", json={"success": 2})
    with pytest.raises(AnalyticsOperationFailedError):
        client.get_utm(5)


@pytest.mark.parametrize(
    ("method", "path", "call", "answer", "problem"),
    [
        ("GET", "/uba/api/schema/event", lambda c: c.list_events(), "<html>", "not valid JSON"),
        (
            "GET",
            "/uba/api/schema/event",
            lambda c: c.list_events(),
            {"a": 1},
            "must be a JSON array",
        ),
        ("GET", "/uba/api/schema/event", lambda c: c.list_events(), [1, 2], r"\[0\] must be"),
        (
            "GET",
            "/svc/uba/api/operations/utm/5",
            lambda c: c.get_utm(5),
            [],
            "the answer must be a JSON object",
        ),
        (
            "POST",
            "/uba/api/schema/userProperties",
            lambda c: c.add_user_property("a", "string"),
            {},
            "success is missing",
        ),
        (
            "POST",
            "/svc/uba/api/operations/utm",
            lambda c: c.create_utm("https://a.io", "c", "m", "s"),
            {"success": 0},
            "campaignId is missing",
        ),
        (
            "POST",
            "/svc/uba/api/operations/utm",
            lambda c: c.create_utm("https://a.io", "c", "m", "s"),
            {"success": 0, "campaignId": None},
            "campaignId must be a JSON integer or string, got None",
        ),
        (
            "POST",
            "/uba/api/cohort/users",
            lambda c: c.get_cohort_users("x"),
            {"count": 1, "users": {}},
            "users must be a JSON array",
        ),
        (
            "POST",
            "/uba/api/cohort/users",
            lambda c: c.get_cohort_users("x"),
            {"count": "1", "users": []},
            "count must be a JSON integer",
        ),
        (
            "POST",
            "/uba/manage/enterprise/accounts",
            lambda c: c.register_account("a@b.io"),
            {"email": "a@b.io"},
            "userId is missing",
        ),
        (
            "POST",
            "/uba/api/events/analyze",
            lambda c: c.analyze_events(
                {
                    "measures": [{"expression": "event.a", "aggregator": "TOTAL_COUNT"}],
                    "crowds": ["$ALL"],
                    "fromDate": "2024-01-01",
                    "toDate": "2024-01-01",
                }
            ),
            {"rows": []},
            "series is missing",
        ),
    ],
)
def test_unexpected_success_bodies_are_protocol_errors(
    client: AnalyticsClient,
    requests_mock: rm.Mocker,
    method: str,
    path: str,
    call: Any,
    answer: Any,
    problem: str,
) -> None:
    if isinstance(answer, str):
        requests_mock.register_uri(method, BASE + path, text=answer)
    else:
        requests_mock.register_uri(method, BASE + path, json=answer)
    with pytest.raises(AnalyticsProtocolError, match=problem) as caught:
        call(client)
    assert caught.value.operation is not None
    assert "base URL" in str(caught.value)


def test_hierarchy() -> None:
    assert issubclass(AnalyticsValidationError, ValueError)
    assert issubclass(AnalyticsConfigurationError, ValueError)
    assert issubclass(AnalyticsStreamError, AnalyticsTransportError)
    for cls in (AnalyticsQuotaExceededError, AnalyticsAlreadyExistsError, AnalyticsDisabledError):
        assert issubclass(cls, AnalyticsNotCompletedError)
    for cls in (
        AnalyticsBadRequestError,
        AnalyticsAuthenticationError,
        AnalyticsNotFoundError,
        AnalyticsUnsupportedMediaTypeError,
        AnalyticsRateLimitError,
        AnalyticsNotCompletedError,
        AnalyticsOperationFailedError,
        AnalyticsServerError,
    ):
        assert issubclass(cls, AnalyticsApiError)
    for cls in (
        AnalyticsApiError,
        AnalyticsTransportError,
        AnalyticsProtocolError,
        AnalyticsValidationError,
    ):
        assert issubclass(cls, AnalyticsError)


def test_errors_survive_pickling() -> None:
    error = AnalyticsBadRequestError(
        "x: bad", status=400, code=400, msg="bad", data=["a"], operation="list_events"
    )
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is AnalyticsBadRequestError
    assert (copy.status, copy.code, copy.msg, copy.data, copy.operation) == (
        400,
        400,
        "bad",
        ["a"],
        "list_events",
    )
    assert copy.params == ["a"] and str(copy) == "x: bad"
    validation = pickle.loads(pickle.dumps(AnalyticsValidationError("limit", "must be", 0)))
    assert (validation.field, validation.rule, str(validation)) == (
        "limit",
        "must be",
        "limit: must be (got 0)",
    )


def test_long_values_are_shortened_in_validation_messages() -> None:
    message = str(AnalyticsValidationError("name", "too long", "x" * 500))
    assert len(message) < 120 and "..." in message and message.endswith(")")
