"""No token, appKey, xtoken or password anywhere: every operator and the sensor run with
distinctive credentials, succeeding and failing (a server that echoes the credentials, wrong
credentials, a dropped connection), and everything they leave is searched: log records,
stdout and stderr, XComs, asset events, exception texts with their tracebacks, rendered
template fields, reprs, the trigger's serialised form and events, and the files written.

Also here: plain ``http://`` to a host that is not loopback needs explicit consent, TLS is
verified by default (nothing is sent to a server whose certificate does not verify), plain
``http://`` never goes through a proxy, and a redirect is not followed, so the credentials
never travel to another host."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import traceback
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import pytest
from airflow.sdk.exceptions import TaskDeferred
from analytics_emulator.campaigns import CampaignSpec
from analytics_emulator.server import EmulatorConfig, EmulatorServer

from airflow_provider_analytics.client import (
    AnalyticsApiError,
    AnalyticsClient,
    AnalyticsConfigurationError,
    AnalyticsTransportError,
    ClientConfig,
)
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
from airflow_provider_analytics.sensors.data_ready import AnalyticsDataSensor
from tests.emulator_helpers import EmulatorAdmin
from tests.loopback_proxy import LoopbackProxy
from tests.reliability.connections import CONNECTION_ENV
from tests.reliability.local_servers import LocalServer, self_signed_certificate
from tests.reliability.results import record
from tests.reliability.subjects import EVENT_REQUEST, FUNNEL_REQUEST, SYNC_PLAN, OutletEvent

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from airflow.sdk import BaseOperator

pytestmark = pytest.mark.integration

TOKEN: Final = "tok-Q7Z1-distinctive-token"
APP_KEY: Final = "app-K3V8-distinctive-appkey"
XTOKEN: Final = "xtk-M5R2-distinctive-xtoken"
PASSWORD: Final = "pwd-T9W4-distinctive-password"
WRONG: Final = {
    "password": "tok-WRONG-J6H0-token",
    "app_key": "app-WRONG-L2N7-appkey",
    "xtoken": "xtk-WRONG-P4D9-xtoken",
}
SECRETS: Final = (TOKEN, APP_KEY, XTOKEN, PASSWORD, *WRONG.values())
START: Final = dt.datetime(2024, 1, 15, tzinfo=dt.UTC)
ECHO: Final = f"denied: token={TOKEN} appKey={APP_KEY} xtoken={XTOKEN}"
"""What a careless server (or proxy) might put in an error body."""


@dataclass
class Evidence:
    """Everything one run left behind, by where it was found."""

    texts: dict[str, str] = field(default_factory=dict)

    def add(self, where: str, value: Any) -> None:
        text = value if isinstance(value, str) else repr(value)
        self.texts[where] = self.texts.get(where, "") + text + "\n"

    def leaks(self) -> list[str]:
        """Each secret found whole, or any 8-character piece of one that holds one of its
        distinctive characters (a capital or a digit: ``distinct`` or ``password`` alone
        are ordinary words)."""
        return [
            f"{piece!r} of {secret} in {where}"
            for where, text in self.texts.items()
            for secret in SECRETS
            for piece in (secret, *fragments(secret))
            if piece in text
        ]


def fragments(secret: str, length: int = 8) -> set[str]:
    """The pieces of ``secret`` of ``length`` characters that hold a capital or a digit."""
    pieces = (secret[i : i + length] for i in range(len(secret) - length + 1))
    return {p for p in pieces if any(c.isupper() or c.isdigit() for c in p)}


@pytest.fixture(autouse=True)
def masked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the provider hands Airflow's secret masker, recorded instead of registered: with
    the masker unaware of the secrets, a leak shows in the captured output as it is."""
    handed: list[str] = []
    for module in (
        "airflow_provider_analytics.hooks.analytics",
        "airflow_provider_analytics.operators.accounts",
    ):
        monkeypatch.setattr(f"{module}.mask_secret", handed.append)
    return handed


@pytest.fixture(scope="module")
def server() -> Iterator[EmulatorServer]:
    config = EmulatorConfig(
        token=TOKEN, app_key=APP_KEY, xtoken=XTOKEN, admin_token="secrets-admin-token"
    )
    with EmulatorServer(config) as running:
        yield running


@pytest.fixture
def admin(server: EmulatorServer) -> Iterator[EmulatorAdmin]:
    platform = EmulatorAdmin(server)
    platform.reset()
    try:
        yield platform
    finally:
        platform.reset()
        platform.close()


def connect(monkeypatch: pytest.MonkeyPatch, server: EmulatorServer, *, wrong: bool) -> None:
    credentials = WRONG if wrong else {"password": TOKEN, "app_key": APP_KEY, "xtoken": XTOKEN}
    monkeypatch.setenv(
        CONNECTION_ENV,
        json.dumps(
            {
                "conn_type": "analytics",
                "host": server.base_url,
                "password": credentials["password"],
                "extra": {
                    "app_key": credentials["app_key"],
                    "xtoken": credentials["xtoken"],
                    "max_attempts": 2,
                    "backoff_base": 0.01,
                    "read_timeout": 5,
                },
            }
        ),
    )


def context() -> dict[str, Any]:
    return {
        "ds": "2024-01-15",
        "ds_nodash": "20240115",
        "logical_date": START,
        "data_interval_start": START,
        "data_interval_end": START + dt.timedelta(days=1),
        "outlet_events": defaultdict(OutletEvent),
        "params": {"team": "growth"},
    }


def operators(destination: str, campaign: str) -> dict[str, Callable[[], BaseOperator]]:
    """Every operator and the sensor, with templated fields where they have them."""
    return {
        "CreateUtmOperator": lambda: CreateUtmOperator(
            task_id="create_link",
            page_url="https://shop.example.com/{{ ds }}",
            utm_campaign="spring_{{ ds_nodash }}",
            utm_medium="cpc",
            utm_source="{{ params.team }}",
        ),
        "UtmConversionOperator": lambda: UtmConversionOperator(
            task_id="conversion", campaign_id=campaign, expression="event.purchase"
        ),
        "DeleteUtmOperator": lambda: DeleteUtmOperator(task_id="delete", campaign_id=campaign),
        "RegisterAccountOperator": lambda: RegisterAccountOperator(
            task_id="register",
            account_email="{{ params.team }}@example.com",
            name="Growth",
            password=PASSWORD,
        ),
        "AccountActivationOperator": lambda: AccountActivationOperator(
            task_id="disable", account_email="growth@example.com", activation=False
        ),
        "CohortExportToParquetOperator": lambda: CohortExportToParquetOperator(
            task_id="export",
            cohort_code="cohort_tiny",
            destination=destination + "{{ params.team }}/",
            attempts=1,
        ),
        "FunnelReportOperator": lambda: FunnelReportOperator(
            task_id="funnel", request=FUNNEL_REQUEST, destination=destination + "funnel/"
        ),
        "EventReportOperator": lambda: EventReportOperator(
            task_id="events", request=EVENT_REQUEST, destination=destination + "events/"
        ),
        "TrackingPlanSyncOperator": lambda: TrackingPlanSyncOperator(
            task_id="sync_plan", plan=SYNC_PLAN
        ),
        "AnalyticsDataSensor": lambda: AnalyticsDataSensor(
            task_id="wait", mode="poke", poke_interval=0.05, timeout=1.0
        ),
    }


OPERATORS: Final = tuple(operators("", "1"))
SCENARIOS: Final = ("succeeds", "server echoes the credentials", "wrong credentials", "reset")


def arm(admin: EmulatorAdmin, scenario: str) -> None:
    if scenario == "server echoes the credentials":
        admin.fault("*", "status", status=401, code=401, msg=ECHO, times=10_000)
    elif scenario == "reset":
        admin.fault("*", "reset", times=10_000)


def collect_logs(evidence: Evidence, caplog: pytest.LogCaptureFixture) -> None:
    for entry in caplog.records:
        evidence.add("log records", f"{entry.name} {entry.levelname} {entry.getMessage()}")
        evidence.add("log record arguments", entry.args)
        if entry.exc_info and entry.exc_info[1] is not None:
            evidence.add(
                "logged tracebacks", "".join(traceback.format_exception(entry.exc_info[1]))
            )


def collect_operator(evidence: Evidence, operator: BaseOperator) -> None:
    for name in operator.template_fields:
        evidence.add("rendered template fields", getattr(operator, name, None))
    evidence.add("reprs", operator)
    hook = getattr(operator, "hook", None)
    if hook is not None:
        evidence.add("reprs", hook)
        evidence.add("reprs", hook.client_config)
        evidence.add("reprs", str(hook.client_config))
        evidence.add("reprs", hook.get_conn())


def collect_error(evidence: Evidence, error: BaseException) -> None:
    evidence.add("exception texts", str(error))
    evidence.add("exception reprs", error)
    evidence.add("tracebacks", "".join(traceback.format_exception(error)))
    for name in ("msg", "data", "code"):
        if hasattr(error, name):
            evidence.add("exception attributes", getattr(error, name))


def collect_files(evidence: Evidence, folder: Path) -> int:
    files = [p for p in folder.rglob("*") if p.is_file()]
    for path in files:
        evidence.add("files written", path.read_bytes().decode("latin-1"))
    return len(files)


def prepare(admin: EmulatorAdmin, server: EmulatorServer, name: str) -> str:
    """State the operator needs: a campaign to read or delete, an account to disable."""
    campaign = server.state.campaigns.create(
        CampaignSpec("https://a.example/", "c", "m", "s"), None
    )
    if name == "AccountActivationOperator":
        AnalyticsHook().get_conn().register_account("growth@example.com")
    return str(campaign)


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("name", OPERATORS)
def test_no_secret_in_anything_an_operator_leaves(
    name: str,
    scenario: str,
    server: EmulatorServer,
    admin: EmulatorAdmin,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    tmp_path: Path,
    masked: list[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    connect(monkeypatch, server, wrong=False)
    campaign = prepare(admin, server, name)
    connect(monkeypatch, server, wrong=scenario == "wrong credentials")
    arm(admin, scenario)
    evidence = Evidence()
    run_context = context()
    operator = operators(f"file://{tmp_path}/", campaign)[name]()
    operator.render_template_fields(run_context)  # type: ignore[arg-type]
    try:
        evidence.add("XComs", json.dumps(operator.execute(run_context), default=str))  # type: ignore[arg-type]
    except Exception as error:
        assert scenario != "succeeds", f"{name} failed: {error}"
        collect_error(evidence, error)
    else:
        assert scenario == "succeeds" or name == "AnalyticsDataSensor", f"{name} did not fail"
    evidence.add("asset events", dict(run_context["outlet_events"]))
    collect_operator(evidence, operator)
    collect_logs(evidence, caplog)
    output = capfd.readouterr()
    evidence.add("stdout and stderr", output.out + output.err)
    files = collect_files(evidence, tmp_path)
    record(
        "secrets",
        {
            "subject": name,
            "scenario": scenario,
            "places": sorted(evidence.texts),
            "characters": sum(len(t) for t in evidence.texts.values()),
            "log_records": len(caplog.records),
            "files": files,
            "occurrences": len(evidence.leaks()),
        },
    )
    assert evidence.leaks() == []
    expected = list(WRONG.values()) if scenario == "wrong credentials" else [TOKEN, APP_KEY, XTOKEN]
    if name == "RegisterAccountOperator":
        expected.append(PASSWORD)
    assert set(expected) <= set(masked), "a secret was not handed to Airflow's secret masker"
    if scenario == "server echoes the credentials":
        assert "token=*** appKey=*** xtoken=***" in evidence.texts["exception texts"]


@pytest.mark.parametrize("scenario", ["succeeds", "server echoes the credentials"])
def test_no_secret_in_the_deferred_sensor_and_its_trigger(
    scenario: str,
    server: EmulatorServer,
    admin: EmulatorAdmin,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    connect(monkeypatch, server, wrong=False)
    admin.set_data_until(dt.date(2024, 1, 14))
    sensor = AnalyticsDataSensor(task_id="wait", deferrable=True, poke_interval=0.05)
    run_context = context()
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(run_context)  # type: ignore[arg-type]
    trigger = deferred.value.trigger
    evidence = Evidence()
    evidence.add("task deferral", deferred.value)
    evidence.add("trigger serialisation", trigger.serialize())
    admin.set_data_until(None)
    arm(admin, scenario)

    async def first_event() -> dict[str, Any]:
        async for event in trigger.run():
            return dict(event.payload)
        raise AssertionError("the trigger ended without an event")

    payload = asyncio.run(asyncio.wait_for(first_event(), 30))
    evidence.add("trigger events", payload)
    try:
        evidence.add("XComs", sensor.execute_complete(run_context, payload))  # type: ignore[arg-type]
    except Exception as error:
        assert scenario != "succeeds"
        collect_error(evidence, error)
    collect_operator(evidence, sensor)
    collect_logs(evidence, caplog)
    output = capfd.readouterr()
    evidence.add("stdout and stderr", output.out + output.err)
    assert payload["status"] == ("success" if scenario == "succeeds" else "error")
    record(
        "secrets",
        {
            "subject": "AnalyticsDataSensor (deferred) + AnalyticsDataReadyTrigger",
            "scenario": scenario,
            "places": sorted(evidence.texts),
            "characters": sum(len(t) for t in evidence.texts.values()),
            "log_records": len(caplog.records),
            "files": 0,
            "occurrences": len(evidence.leaks()),
        },
    )
    assert evidence.leaks() == []


def test_a_password_echoed_by_the_platform_is_masked(
    server: EmulatorServer, admin: EmulatorAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    connect(monkeypatch, server, wrong=False)
    admin.fault("register_account", "status", status=400, msg=f"weak password {PASSWORD}")
    operator = RegisterAccountOperator(
        task_id="register", account_email="kim@example.com", password=PASSWORD
    )
    with pytest.raises(AnalyticsApiError) as caught:
        operator.execute(context())  # type: ignore[arg-type]
    evidence = Evidence()
    collect_error(evidence, caught.value)
    assert "weak password ***" in str(caught.value)
    assert evidence.leaks() == []


# Transport security ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    ["http://analytics.example.com:4005", "http://10.0.0.8", "http://[2001:db8::1]:4005"],
)
def test_plain_http_to_a_remote_host_needs_explicit_consent(
    monkeypatch: pytest.MonkeyPatch, host: str
) -> None:
    monkeypatch.setenv(
        CONNECTION_ENV, json.dumps({"conn_type": "analytics", "host": host, "password": TOKEN})
    )
    with pytest.raises(AnalyticsConfigurationError, match="base_url: plain http://"):
        AnalyticsHook().get_conn()
    monkeypatch.setenv(
        CONNECTION_ENV,
        json.dumps(
            {
                "conn_type": "analytics",
                "host": host,
                "password": TOKEN,
                "extra": {"allow_insecure_http": "true"},
            }
        ),
    )
    assert AnalyticsHook().get_conn().config.base_url == host


@pytest.mark.parametrize("host", ["http://127.0.0.1:4005", "http://localhost", "http://[::1]:80"])
def test_plain_http_to_loopback_is_allowed(host: str) -> None:
    assert ClientConfig(host, token=TOKEN).base_url == host


def test_tls_is_verified_by_default_and_nothing_is_sent_to_an_unverified_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    certificate = self_signed_certificate(tmp_path)
    with LocalServer(body=[{"id": "purchase"}], tls=certificate) as https:
        connection: dict[str, Any] = {
            "conn_type": "analytics",
            "host": https.base_url,
            "password": TOKEN,
            "extra": {"app_key": APP_KEY, "max_attempts": 3, "backoff_base": 0.01},
        }
        monkeypatch.setenv(CONNECTION_ENV, json.dumps(connection))
        hook = AnalyticsHook()
        assert hook.client_config.verify is True
        with pytest.raises(AnalyticsTransportError, match="TLS failed") as caught:
            hook.get_conn().list_events()
        assert https.received == []  # not even once: a failed verification is not retried
        assert not any(secret in str(caught.value) for secret in SECRETS)
        connection["extra"]["verify"] = str(certificate[0])
        monkeypatch.setenv(CONNECTION_ENV, json.dumps(connection))
        assert AnalyticsHook().get_conn().list_events() == [{"id": "purchase"}]
        assert https.received[0][1]["token"] == TOKEN


def test_credentials_never_go_to_a_proxy_in_clear(
    server: EmulatorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``HTTP_PROXY`` naming a proxy (here one on loopback, which the rule refuses as
    well), the hook's client refuses every call by name and the proxy reads nothing; listed in
    ``NO_PROXY``, the platform is reached directly. The table of proxy cases for both
    transports is in ``tests/integration/client/test_transport_parity.py``."""
    connect(monkeypatch, server, wrong=False)
    with LoopbackProxy() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        with pytest.raises(AnalyticsConfigurationError, match="named by HTTP_PROXY") as caught:
            AnalyticsHook().get_conn().list_events()
        assert not any(secret in str(caught.value) for secret in SECRETS)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        assert AnalyticsHook().get_conn().list_events()
    assert proxy.seen.heads == []


def test_a_redirect_is_not_followed_so_credentials_stay_with_the_host() -> None:
    with (
        LocalServer(body=[]) as elsewhere,
        LocalServer(
            status=302, body={}, headers={"Location": elsewhere.base_url + "/uba/api/schema/event"}
        ) as redirecting,
    ):
        client = AnalyticsClient(ClientConfig(redirecting.base_url, token=TOKEN, app_key=APP_KEY))
        with pytest.raises(AnalyticsApiError, match="unexpected redirect"):
            client.list_events()
        assert len(redirecting.received) == 1
        assert elsewhere.received == []


def _failed_call(base_url: str, **settings: Any) -> BaseException:
    """A call that fails, made as a script makes it; the credentials are only in the config."""
    config = ClientConfig(base_url, token=TOKEN, app_key=APP_KEY, xtoken=XTOKEN, **settings)
    client = AnalyticsClient(config)
    try:
        client.list_events()
    except (AnalyticsApiError, AnalyticsTransportError) as error:
        return error
    finally:
        client.close()
    raise AssertionError("the call succeeded")


@pytest.mark.parametrize("status", [401, 500, None])
def test_a_traceback_with_its_locals_shows_no_credential(status: int | None) -> None:
    """What ``pytest -l``, Sentry or a debugger show: every frame's locals, through the
    client, its requests and their headers, the chained errors included. Objects that hold
    credentials hold them as :class:`Secret`, whose repr is ``***``."""
    if status is None:  # nothing listens: the transport's own frames are in the chain
        error = _failed_call("http://127.0.0.1:9", max_attempts=1)
    else:
        with LocalServer(status=status, body={"code": status, "msg": "denied"}) as server:
            error = _failed_call(server.base_url, max_attempts=1)
    shown = "".join(
        traceback.TracebackException.from_exception(error, capture_locals=True).format()
    )
    assert "config = ClientConfig(" in shown or "self = " in shown  # locals were captured
    assert "***" in shown
    for secret in (TOKEN, APP_KEY, XTOKEN):
        assert secret not in shown
