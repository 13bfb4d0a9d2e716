"""Ad tracking and account operators executed against the emulator over real HTTP."""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import pytest

from airflow_provider_analytics.client import (
    AnalyticsAlreadyExistsError,
    AnalyticsBadRequestError,
    AnalyticsClient,
    AnalyticsDisabledError,
    AnalyticsValidationError,
    ClientConfig,
)
from airflow_provider_analytics.operators.accounts import (
    AccountActivationOperator,
    RegisterAccountOperator,
)
from airflow_provider_analytics.operators.campaigns import (
    CreateUtmOperator,
    DeleteUtmOperator,
    UtmConversionOperator,
)
from tests.emulator_helpers import EmulatorAdmin

if TYPE_CHECKING:
    from analytics_emulator.server import EmulatorServer

pytestmark = pytest.mark.integration

START = dt.datetime(2024, 1, 15, tzinfo=dt.UTC)
CONTEXT: dict[str, Any] = {
    "ds": "2024-01-15",
    "data_interval_start": START,
    "data_interval_end": START + dt.timedelta(days=1),
}


@pytest.fixture
def connection(monkeypatch: pytest.MonkeyPatch, fresh_emulator: EmulatorServer) -> EmulatorServer:
    config = fresh_emulator.config
    monkeypatch.setenv(
        "AIRFLOW_CONN_ANALYTICS_DEFAULT",
        json.dumps(
            {
                "conn_type": "analytics",
                "host": fresh_emulator.base_url,
                "password": config.token,
                "extra": {"app_key": config.app_key, "xtoken": config.xtoken},
            }
        ),
    )
    return fresh_emulator


def requests_made(server: EmulatorServer) -> int:
    admin = EmulatorAdmin(server)
    try:
        return sum(admin.stats()["requests"].values())
    finally:
        admin.close()


def test_create_utm_returns_links_read_back_from_the_platform(connection: EmulatorServer) -> None:
    operator = CreateUtmOperator(
        task_id="link",
        page_url="https://shop.example.com/sale?lang=zh",
        utm_campaign="spring",
        utm_medium="cpc",
        utm_source="search",
        utm_content="banner 1",
    )
    assert operator.retries == 0  # a create is not idempotent: no blind task retries
    link = operator.execute(CONTEXT)
    assert set(link) == {"campaign_id", "url", "short_url"}
    query = parse_qs(urlsplit(link["url"]).query)
    assert query["lang"] == ["zh"] and query["utm_campaign"] == ["spring"]
    assert query["utm_content"] == ["banner 1"] and query["campaign_id"] == [link["campaign_id"]]
    config = connection.config
    client = AnalyticsClient(
        ClientConfig(connection.base_url, token=config.token, app_key=config.app_key)
    )
    assert client.get_utm(link["campaign_id"])["shortUrl"] == link["short_url"]

    deleted = DeleteUtmOperator(task_id="drop", campaign_id=link["campaign_id"]).execute(CONTEXT)
    assert deleted == {"campaign_id": link["campaign_id"], "deleted": True}
    assert client.get_utm(link["campaign_id"])["status"] == 0  # logically deleted, kept


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"page_url": "shop.example.com/sale"}, "page_url"),
        ({"page_url": "ftp://shop.example.com/"}, "page_url"),
        ({"utm_campaign": ""}, "utm_campaign"),
        ({"utm_source": "   "}, "utm_source"),
    ],
)
def test_create_utm_refuses_bad_input_before_sending(
    connection: EmulatorServer, fields: dict[str, str], field: str
) -> None:
    arguments = {
        "page_url": "https://shop.example.com/",
        "utm_campaign": "c",
        "utm_medium": "m",
        "utm_source": "s",
        **fields,
    }
    before = requests_made(connection)
    with pytest.raises(AnalyticsValidationError, match=field):
        CreateUtmOperator(task_id="link", **arguments).execute(CONTEXT)
    assert requests_made(connection) == before


def test_conversion_operator_covers_the_data_interval(connection: EmulatorServer) -> None:
    link = CreateUtmOperator(
        task_id="link",
        page_url="https://a.example.com/",
        utm_campaign="c",
        utm_medium="m",
        utm_source="s",
    ).execute(CONTEXT)
    result = UtmConversionOperator(
        task_id="conversion", campaign_id=link["campaign_id"], expression="event.purchase"
    ).execute(CONTEXT)
    assert result["success"] == 0
    assert (result["fromDate"], result["toDate"]) == ("2024-01-15", "2024-01-15")
    # a day that renders to "" is refused by name, not replaced by the run's day
    for field in ("from_date", "to_date"):
        with pytest.raises(AnalyticsValidationError, match=rf"^{field}"):
            UtmConversionOperator(
                task_id="conversion",
                campaign_id=link["campaign_id"],
                expression="event.purchase",
                **{field: ""},
            ).execute(CONTEXT)


def test_register_then_duplicate_fails_unless_ensure_exists(connection: EmulatorServer) -> None:
    first = RegisterAccountOperator(
        task_id="register", account_email="lin@example.com", name="Lin", phone="13800000001"
    ).execute(CONTEXT)
    assert first["created"] is True and isinstance(first["user_id"], int)
    with pytest.raises(AnalyticsAlreadyExistsError, match=r"already exists|50101"):
        RegisterAccountOperator(task_id="again", account_email="lin@example.com").execute(CONTEXT)
    again = RegisterAccountOperator(
        task_id="again", account_email="lin@example.com", ensure_exists=True
    ).execute(CONTEXT)
    assert again == {
        "email": "lin@example.com",
        "user_id": None,
        "created": False,
        "disabled": False,
    }


def test_disabled_account_is_reported_and_reenabled(connection: EmulatorServer) -> None:
    RegisterAccountOperator(task_id="register", account_email="kai@example.com").execute(CONTEXT)
    off = AccountActivationOperator(
        task_id="disable",
        account_email="kai@example.com",
        activation=False,
        login_user="ops@example.com",
    ).execute(CONTEXT)
    assert off == {"email": "kai@example.com", "activation": False}
    with pytest.raises(AnalyticsDisabledError):
        RegisterAccountOperator(task_id="again", account_email="kai@example.com").execute(CONTEXT)
    ensured = RegisterAccountOperator(
        task_id="again", account_email="kai@example.com", ensure_exists=True
    ).execute(CONTEXT)
    assert ensured["disabled"] is True and ensured["created"] is False
    on = AccountActivationOperator(
        task_id="enable", account_email="kai@example.com", activation=True
    ).execute(CONTEXT)
    assert on["activation"] is True


class _TaskInstance:
    def __init__(self, **xcoms: Any) -> None:
        self.xcoms = xcoms

    def xcom_pull(self, task_ids: str) -> Any:
        return self.xcoms.get(task_ids)


def test_an_activation_is_previewed_then_only_the_reviewed_change_is_applied(
    connection: EmulatorServer,
) -> None:
    RegisterAccountOperator(task_id="register", account_email="kai@example.com").execute(CONTEXT)
    before = requests_made(connection)
    preview = AccountActivationOperator(
        task_id="preview", account_email="kai@example.com", activation=False, dry_run=True
    ).execute(CONTEXT)
    assert preview == {
        "email": "kai@example.com",
        "activation": False,
        "dry_run": True,
        "review": "**Account**: disable `kai@example.com` on the platform.",
    }
    assert requests_made(connection) == before  # a preview sends nothing
    # a task whose change is not the reviewed one sends nothing either
    other = AccountActivationOperator(
        task_id="apply",
        account_email="kai@example.com",
        activation=True,
        reviewed_preview="preview",
    )
    with pytest.raises(AnalyticsValidationError, match="reviewed_preview"):
        other.execute({**CONTEXT, "ti": _TaskInstance(preview=preview)})
    assert requests_made(connection) == before
    apply = AccountActivationOperator(
        task_id="apply",
        account_email="kai@example.com",
        activation=False,
        reviewed_preview="preview",
    )
    assert apply.execute({**CONTEXT, "ti": _TaskInstance(preview=preview)}) == {
        "email": "kai@example.com",
        "activation": False,
    }
    with pytest.raises(AnalyticsDisabledError):
        RegisterAccountOperator(task_id="again", account_email="kai@example.com").execute(CONTEXT)


@pytest.mark.parametrize("activation", ["false", 0, 1, None])
def test_activation_must_be_a_real_bool(connection: EmulatorServer, activation: Any) -> None:
    before = requests_made(connection)
    with pytest.raises(AnalyticsValidationError, match="activation"):
        AccountActivationOperator(
            task_id="toggle", account_email="kai@example.com", activation=activation
        ).execute(CONTEXT)
    assert requests_made(connection) == before


def test_default_args_email_never_becomes_the_account() -> None:
    operator = AccountActivationOperator(
        task_id="toggle",
        account_email="kai@example.com",
        activation=True,
        email=["oncall@example.com"],  # Airflow's alert recipients
    )
    assert operator.account_email == "kai@example.com"
    assert operator.email == ["oncall@example.com"]


def test_password_is_not_a_template_field_nor_in_repr(connection: EmulatorServer) -> None:
    password = "pw-Zt4Lx8Qc2"
    operator = RegisterAccountOperator(
        task_id="register", account_email="mo@example.com", password=password
    )
    assert "password" not in operator.template_fields
    assert password not in repr(operator)
    result = operator.execute(CONTEXT)
    assert password not in json.dumps(result)


def test_unknown_account_activation_is_a_bad_request(connection: EmulatorServer) -> None:
    with pytest.raises(AnalyticsBadRequestError, match="email"):
        AccountActivationOperator(
            task_id="toggle", account_email="nobody@example.com", activation=False
        ).execute(CONTEXT)
