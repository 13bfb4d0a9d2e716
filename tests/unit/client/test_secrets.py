"""No credential (or password) ever appears in a log record, an exception or a repr."""

from __future__ import annotations

import logging
import traceback
from typing import TYPE_CHECKING, Any

import pytest
import requests

from airflow_provider_analytics.client import (
    AnalyticsAuthenticationError,
    AnalyticsBadRequestError,
    AnalyticsClient,
    AnalyticsError,
    AnalyticsOperationFailedError,
    AnalyticsTransportError,
    ClientConfig,
)
from airflow_provider_analytics.core import redaction
from airflow_provider_analytics.core.redaction import Redactor
from devtools.ports import free_port

if TYPE_CHECKING:
    import requests_mock as rm

BASE = "https://analytics.example.com"
TOKEN = "tok-QX7-distinctive-1"
APP_KEY = "appkey-ZZ9-distinctive-2"
XTOKEN = "xtoken-MM3-distinctive-3"
PASSWORD = "Pass-KK5-distinctive-4"
SECRETS = (TOKEN, APP_KEY, XTOKEN, PASSWORD)


def echo(*values: str) -> dict[str, Any]:
    """An error body that repeats the given values, as a careless server might."""
    joined = " ".join(values)
    return {"code": 401, "msg": f"invalid credentials: {joined}", "data": {"got": list(values)}}


@pytest.fixture
def client() -> AnalyticsClient:
    config = ClientConfig(BASE, token=TOKEN, app_key=APP_KEY, xtoken=XTOKEN, max_attempts=2)
    return AnalyticsClient(config, sleep=lambda _: None)


def shown(error: BaseException) -> str:
    """Everything an error can show: message, repr, attributes and a formatted traceback."""
    parts = [str(error), repr(error), "".join(traceback.format_exception(error))]
    if isinstance(error, AnalyticsError):
        parts += [repr(error.msg), repr(error.data), repr(error.code)]
    return "\n".join(parts)


def assert_no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


def logged(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(f"{r.name} {r.getMessage()} {r.args!r}" for r in caplog.records)


def test_a_failing_call_leaks_no_secret(
    client: AnalyticsClient, requests_mock: rm.Mocker, caplog: pytest.LogCaptureFixture
) -> None:
    requests_mock.get(
        BASE + "/uba/api/schema/event",
        [
            {"status_code": 503, "json": echo(TOKEN, APP_KEY)},
            {"status_code": 401, "json": echo(TOKEN, APP_KEY, XTOKEN)},
        ],
    )
    with caplog.at_level(logging.DEBUG), pytest.raises(AnalyticsAuthenticationError) as caught:
        client.list_events()

    assert requests_mock.last_request.headers["token"] == TOKEN  # the secret was really sent
    assert "***" in caught.value.msg
    assert caught.value.data == {"got": ["***", "***", "***"]}
    assert len(caplog.records) >= 1  # the retry was logged
    assert_no_secret(shown(caught.value))
    assert_no_secret(logged(caplog))
    assert_no_secret(repr(client) + repr(client.config) + str(client.test_connection()))


def test_platform_error_echoing_the_xtoken_and_password_is_masked(
    client: AnalyticsClient, requests_mock: rm.Mocker, caplog: pytest.LogCaptureFixture
) -> None:
    requests_mock.post(
        BASE + "/uba/manage/enterprise/accounts",
        status_code=400,
        json={"code": 400, "msg": f"bad password {PASSWORD} for {XTOKEN}", "data": [PASSWORD]},
    )
    with caplog.at_level(logging.DEBUG), pytest.raises(AnalyticsBadRequestError) as caught:
        client.register_account("a@example.com", password=PASSWORD)
    assert caught.value.params == ["***"]
    assert_no_secret(shown(caught.value))
    assert_no_secret(logged(caplog))


def test_success_failure_echo_is_masked(client: AnalyticsClient, requests_mock: rm.Mocker) -> None:
    requests_mock.delete(
        BASE + "/svc/uba/api/operations/utm/drop/5",
        json={"success": 1, "msg": f"appKey {APP_KEY} may not delete"},
    )
    with pytest.raises(AnalyticsOperationFailedError) as caught:
        client.delete_utm(5)
    assert_no_secret(shown(caught.value))


def test_transport_error_text_is_masked(
    client: AnalyticsClient, requests_mock: rm.Mocker, caplog: pytest.LogCaptureFixture
) -> None:
    requests_mock.get(
        BASE + "/uba/api/schema/event",
        exc=requests.ConnectionError(f"proxy refused header token: {TOKEN}"),
    )
    with caplog.at_level(logging.DEBUG), pytest.raises(AnalyticsTransportError) as caught:
        client.list_events()
    assert "proxy refused header token: ***" in str(caught.value)
    assert caught.value.__cause__ is None
    assert_no_secret(shown(caught.value))
    assert_no_secret(logged(caplog))


def test_export_stream_error_is_masked(client: AnalyticsClient, requests_mock: rm.Mocker) -> None:
    requests_mock.post(BASE + "/uba/api/cohort/users/export", content=b"{" + TOKEN.encode())
    with (
        pytest.raises(AnalyticsError) as caught,
        client.export_cohort_users("cohort_tiny") as export,
    ):
        list(export.iter_records())
    assert_no_secret(shown(caught.value))


def test_redactor_masks_nested_values_and_longest_first() -> None:
    redactor = Redactor(["abcde", "abcdefgh", "", None])
    assert redactor.text("x abcdefgh y abcde") == "x *** y ***"
    assert redactor.value({"abcde": ["abcdefgh", 1, ("abcde",)], "n": None}) == {
        "***": ["***", 1, ("***",)],
        "n": None,
    }
    assert not Redactor([None, ""])


def test_secrets_shorter_than_airflows_minimum_are_not_masked() -> None:
    """Airflow's masker skips secrets under 5 characters and the word ``airflow``: masking
    every ``t`` of a message hides nothing and leaves the message unreadable."""
    message = "list_events: could not connect after 3 attempt(s)"
    for short in ("t", "on", "ect", "conn"):
        assert Redactor([short]).text(message) == message
        assert not Redactor([short])
    assert Redactor(["Airflow"]).text("Airflow 3") == "Airflow 3"
    assert Redactor(["could"]).text(message) == "list_events: *** not connect after 3 attempt(s)"


def test_the_rule_is_the_one_of_the_installed_airflow() -> None:
    from airflow.sdk._shared.secrets_masker import secrets_masker

    assert secrets_masker.SecretsMasker.min_length_to_mask == redaction.MIN_SECRET_LENGTH
    assert secrets_masker.SECRETS_TO_SKIP_MASKING == redaction.NEVER_MASKED


def test_the_minimum_follows_the_process_setting() -> None:
    try:
        redaction.set_min_secret_length(8)
        assert Redactor(["seven77"]).text("a seven77 b") == "a seven77 b"
        assert Redactor(["eight888"]).text("a eight888 b") == "a *** b"
        redaction.set_min_secret_length(1)
        assert Redactor(["t"]).text("at") == "a***"
    finally:
        redaction.set_min_secret_length(redaction.MIN_SECRET_LENGTH)
    assert redaction.is_masked("five5") and not redaction.is_masked("four")


def test_a_one_character_token_leaves_the_error_readable() -> None:
    """The issue's example: with the token ``t`` every ``t`` used to be masked
    (``lis***_even***s: could no*** connec***``)."""
    base = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    config = ClientConfig(base, token="t", app_key=APP_KEY, max_attempts=1)
    with pytest.raises(AnalyticsTransportError) as caught:
        AnalyticsClient(config).list_events()
    assert str(caught.value).startswith("list_events: could not connect after 1 attempt(s)")
    assert "***" not in str(caught.value)


def _fragments(secret: str, minimum: int = 4) -> list[str]:
    """Every piece of ``secret`` at least ``minimum`` characters long."""
    return [secret[i:j] for i in range(len(secret)) for j in range(i + minimum, len(secret) + 1)]


@pytest.mark.parametrize("offset", range(470, 510, 3))
def test_a_secret_echoed_across_the_excerpt_cut_leaves_no_fragment(
    client: AnalyticsClient, requests_mock: rm.Mocker, offset: int
) -> None:
    """Masking comes before cutting: a token straddling the cut leaves not even a piece."""
    msg = "x" * offset + TOKEN + " and then some more text " * 40
    requests_mock.get(
        BASE + "/uba/api/schema/event", status_code=400, json={"code": 400, "msg": msg}
    )
    with pytest.raises(AnalyticsBadRequestError) as caught:
        client.list_events()
    text = shown(caught.value)
    assert not [piece for piece in _fragments(TOKEN) if piece in text.replace("x" * 4, "")]
    assert len(caught.value.msg or "") <= 500


def test_a_success_failure_echo_across_the_cut_leaves_no_fragment(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    requests_mock.delete(
        BASE + "/svc/uba/api/operations/utm/drop/5",
        json={"success": 1, "msg": "y" * 490 + APP_KEY + "z" * 600},
    )
    with pytest.raises(AnalyticsOperationFailedError) as caught:
        client.delete_utm(5)
    text = shown(caught.value)
    assert not [piece for piece in _fragments(APP_KEY) if piece in text]


def test_redactor_excerpt_masks_before_it_cuts() -> None:
    redactor = Redactor([TOKEN])
    text = "a" * 495 + TOKEN
    assert redactor.excerpt(text) == "a" * 495 + "***"
    cut = redactor.excerpt("b" * 600 + TOKEN, limit=20)
    assert cut == "b" * 17 + "..."
