"""The emulator as a test kit: a scenario, a running emulator with fresh credentials, and the
Airflow connection that points at it. The pytest plugin (:mod:`.pytest_plugin`) is built on
this module; it also works without pytest::

    with start_emulator(Scenario(cohorts={"everyone": 10_000_000})) as emulator:
        os.environ[emulator.connection_env_name] = emulator.connection_json()
        ...

Credentials are random for each start and are held as :class:`Secret`, so they never show in
a ``repr``, a log line or an assertion message; ``reveal()`` gives the text where it is needed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import secrets
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any, Final

from analytics_emulator import catalog
from analytics_emulator.admin_client import AdminClient, Secret
from analytics_emulator.cohort_settings import (
    MembershipChange,
    ProxyCut,
    SettingError,
    membership_change_from,
    proxy_cut_from,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

    from analytics_emulator.config import EmulatorConfig
    from analytics_emulator.server import EmulatorServer

DEFAULT_CONN_ID: Final = "analytics_default"
APP_KEY_EXTRA: Final = "app_api_key"
"""The connection extra the provider reads the appKey from (a secret field in the UI)."""
_CONN_ID: Final = re.compile(r"[A-Za-z0-9_]+")


class ScenarioError(ValueError):
    """A scenario setting that does not fit; the message names the setting and the rule."""


@dataclass(frozen=True)
class Scenario:
    """What the emulator serves for a test.

    :param cohorts: cohorts added to the catalog's, or resized: code -> users.
    :param proxy_cuts: code -> the proxy cut in front of its stream (a :class:`ProxyCut` or
        its settings ``{"rows", "seconds", "ending"}``); None removes the documented cut the
        catalog's large cohorts have by default.
    :param membership_changes: code -> how its membership changes between calls (a
        :class:`MembershipChange` or ``{"after_calls", "kind", "users", "times", "at"}``).
    :param faults: faults armed at the start, as the admin API takes them
        (``{"operation": ..., "kind": ..., "times": ..., ...}``).
    :param seed: seed of the synthetic data.
    :param events: a hand-built event log that replaces the synthetic one, as the admin API
        takes it (``{"user", "event", "time", "properties"}`` each); None keeps the synthetic
        log.
    :param data_until: analyses see no event after this day (data not landed yet).
    :param max_page_size: the paged listing's largest ``pageSize`` (None: the documented
        10,000).
    :param conn_id: the Airflow connection id the fixture sets (``AIRFLOW_CONN_<ID>``).
    :param timezone: the connection's ``timezone`` extra (the emulator writes datetimes in
        the catalog's project timezone).
    :param connection_extra: more extras for the connection (``max_attempts``, timeouts...).
    """

    cohorts: Mapping[str, int] = field(default_factory=dict)
    proxy_cuts: Mapping[str, ProxyCut | Mapping[str, Any] | None] = field(default_factory=dict)
    membership_changes: Mapping[str, MembershipChange | Mapping[str, Any]] = field(
        default_factory=dict
    )
    faults: Sequence[Mapping[str, Any]] = ()
    seed: int = 7
    events: Sequence[Mapping[str, Any]] | None = None
    data_until: date | None = None
    max_page_size: int | None = None
    conn_id: str = DEFAULT_CONN_ID
    timezone: str = catalog.PROJECT_TIMEZONE
    connection_extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.conn_id, str) or not _CONN_ID.fullmatch(self.conn_id):
            raise ScenarioError(
                f"conn_id must be letters, digits and underscores, not {self.conn_id!r}"
            )
        if isinstance(self.faults, str | bytes) or not all(
            isinstance(fault, dict) for fault in self.faults
        ):
            raise ScenarioError("faults must be a list of objects, as the admin API takes them")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ScenarioError(f"seed must be a non-negative integer, not {self.seed!r}")
        if self.events is not None and (
            isinstance(self.events, str | bytes)
            or not all(isinstance(event, dict) for event in self.events)
        ):
            raise ScenarioError("events must be a list of objects, as the admin API takes them")
        if self.data_until is not None and not isinstance(self.data_until, date):
            raise ScenarioError(f"data_until must be a datetime.date, not {self.data_until!r}")
        clashing = sorted({"app_api_key", "app_key", "xtoken"} & set(self.connection_extra))
        if clashing:
            raise ScenarioError(f"connection_extra must not set the credentials {clashing}")

    def with_settings(self, **settings: Any) -> Scenario:
        """A copy with some settings changed.

        :raises ScenarioError: for a name that is not a setting.
        """
        names = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(settings) - names)
        if unknown:
            raise ScenarioError(f"unknown scenario settings {unknown}; known: {sorted(names)}")
        return dataclasses.replace(self, **settings)

    def emulator_config(
        self, *, token: str, app_key: str, xtoken: str, admin_token: str
    ) -> EmulatorConfig:
        """The emulator's configuration for this scenario with these credentials.

        :raises ScenarioError: naming the setting that does not fit.
        """
        from analytics_emulator.config import MAX_PAGE_SIZE, EmulatorConfig

        cohorts = {**catalog.COHORTS, **self.cohorts}
        cuts: dict[str, ProxyCut | None] = {
            code: ProxyCut() for code in catalog.LARGE_COHORTS if code in cohorts
        }
        try:
            for code, cut in self.proxy_cuts.items():
                cuts[code] = (
                    cut if cut is None or isinstance(cut, ProxyCut) else proxy_cut_from(cut)
                )
            changes = {
                code: change
                if isinstance(change, MembershipChange)
                else membership_change_from(change)
                for code, change in self.membership_changes.items()
            }
            return EmulatorConfig(
                token=token,
                app_key=app_key,
                xtoken=xtoken,
                admin_token=admin_token,
                seed=self.seed,
                cohorts=cohorts,
                proxy_cuts={code: cut for code, cut in cuts.items() if cut is not None},
                membership_changes=changes,
                max_page_size=MAX_PAGE_SIZE if self.max_page_size is None else self.max_page_size,
            )
        except (SettingError, ValueError) as exc:
            raise ScenarioError(f"scenario: {exc}") from exc


class RunningEmulator:
    """An emulator serving a :class:`Scenario` on 127.0.0.1, and how to reach it.

    :ivar base_url: ``http://127.0.0.1:<port>``.
    :ivar conn_id: the Airflow connection id it is meant for.
    :ivar token: the project token (the connection's password), a :class:`Secret`.
    :ivar app_key: the project's appKey, a :class:`Secret`.
    :ivar xtoken: the platform token for account operations, a :class:`Secret`.
    :ivar admin: the admin API (faults, events, cohorts, statistics, reset).
    :ivar server: the in-process server itself.
    """

    def __init__(self, server: EmulatorServer, scenario: Scenario) -> None:
        config = server.config
        self.server = server
        self.scenario = scenario
        self.base_url = server.base_url
        self.conn_id = scenario.conn_id
        self.token = Secret(config.token)
        self.app_key = Secret(config.app_key)
        self.xtoken = Secret(config.xtoken)
        self.admin = AdminClient(self.base_url, Secret(config.admin_token or ""))

    @property
    def connection_env_name(self) -> str:
        """``AIRFLOW_CONN_<CONN_ID>``, the variable Airflow reads the connection from."""
        return f"AIRFLOW_CONN_{self.conn_id.upper()}"

    def connection_json(self) -> str:
        """The connection as Airflow reads it from ``AIRFLOW_CONN_<ID>``: the credentials in
        clear, so put it in the environment, never in a log."""
        extra = {
            APP_KEY_EXTRA: self.app_key.reveal(),
            "xtoken": self.xtoken.reveal(),
            "timezone": self.scenario.timezone,
            **self.scenario.connection_extra,
        }
        return json.dumps(
            {
                "conn_type": "analytics",
                "host": self.base_url,
                "password": self.token.reveal(),
                "extra": extra,
            }
        )

    def project_headers(self) -> dict[str, str]:
        """The ``token`` and ``appKey`` headers of project operations, for raw HTTP calls."""
        return {"token": self.token.reveal(), "appKey": self.app_key.reveal()}

    def __repr__(self) -> str:
        return f"RunningEmulator(base_url={self.base_url!r}, conn_id={self.conn_id!r})"


@contextlib.contextmanager
def start_emulator(scenario: Scenario | None = None) -> Iterator[RunningEmulator]:
    """Serve ``scenario`` on a free loopback port with fresh random credentials, its faults
    armed; stopped when the block ends.

    :raises ScenarioError: naming the setting or the fault that does not fit.
    """
    from analytics_emulator.errors import EmulatorError
    from analytics_emulator.faults import parse_fault
    from analytics_emulator.server import EmulatorServer

    scenario = scenario or Scenario()
    config = scenario.emulator_config(
        token=secrets.token_hex(16),
        app_key=secrets.token_hex(8),
        xtoken=secrets.token_hex(16),
        admin_token=secrets.token_hex(16),
    )
    faults = []
    for index, spec in enumerate(scenario.faults):
        try:
            faults.append(parse_fault(spec))
        except EmulatorError as exc:
            raise ScenarioError(f"faults[{index}]: {exc.msg}") from exc
    with EmulatorServer(config) as server:
        if scenario.events is not None:
            try:
                server.state.replace_event_log(scenario.events)
            except ValueError as exc:
                raise ScenarioError(f"events: {exc}") from exc
        server.state.data_until = scenario.data_until
        for fault in faults:
            server.state.faults.arm(fault)
        running = RunningEmulator(server, scenario)
        try:
            yield running
        finally:
            running.admin.close()
