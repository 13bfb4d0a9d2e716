"""The spec's operations as data (HTTP method, path, credentials, retry safety), so the HTTP
layer treats every operation alike and the client's methods are about arguments and results."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    from airflow_provider_analytics.client.answers import Asked


class AuthKind(StrEnum):
    """Which credentials an operation sends."""

    PROJECT = "project"
    """Headers ``token`` and ``appKey``."""
    PLATFORM = "platform"
    """Header ``xtoken``."""


@dataclass(frozen=True)
class Operation:
    """One operation: ``name`` is the client method's; ``path`` a template (``{prefix}`` the
    ad tracking prefix); not ``idempotent``: it creates something each time, so it is retried
    only when the request provably never arrived (``unknown_outcome_hint``: what to check)."""

    name: str
    method: str
    path: str
    auth: AuthKind = AuthKind.PROJECT
    idempotent: bool = True
    unknown_outcome_hint: str = ""

    @property
    def after_sending(self) -> str:
        """What the message of a failure after the request was sent adds: for an operation
        that is not idempotent, that its outcome is unknown and what to check."""
        if self.idempotent:
            return ""
        return (
            ". The request had been sent, so it may have been processed: its outcome is "
            f"unknown and it was not retried. {self.unknown_outcome_hint}"
        )

    def build_path(self, prefix: str = "", **params: str) -> str:
        """The request path; path parameters are encoded with no safe characters, so ``/``,
        ``?`` or ``..`` in a value cannot change which resource is addressed."""
        encoded = {key: quote(value, safe="") for key, value in params.items()}
        return self.path.format(prefix=prefix, **encoded)


@dataclass(frozen=True)
class ApiCall:
    """One request described as data, for a caller that sends it through either transport
    (``AnalyticsClient.request_json`` or ``AsyncAnalyticsClient.request_json``).

    :param operation: the operation.
    :param params: query parameters (``None`` values are dropped).
    :param body: JSON body, ``None`` for no body.
    :param path_params: values of the path template's fields (a campaign id, for example).
    :param asked: what the request asks, for the relations its declared answer keeps with it.
    """

    operation: Operation
    params: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    path_params: dict[str, str] = field(default_factory=dict)
    asked: Asked | None = None

    def path(self, prefix: str) -> str:
        """Deprecated: the client builds the path from ``path_params``."""
        warnings.warn(
            "ApiCall.path is deprecated; CallAttempts (airflow_provider_analytics.client."
            "attempts) builds the path from the operation and path_params",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.operation.build_path(prefix, **self.path_params)


_UTM = "{prefix}/uba/api/operations/utm"

CREATE_UTM = Operation(
    "create_utm",
    "POST",
    _UTM,
    idempotent=False,
    unknown_outcome_hint=(
        "Look the campaign up (get_utm, or the platform's ad tracking list) before "
        "creating it again: a second create makes a duplicate link."
    ),
)
GET_UTM = Operation("get_utm", "GET", _UTM + "/{campaign_id}")
GET_UTM_CONVERSION = Operation("get_utm_conversion", "POST", _UTM + "/analysys/{campaign_id}")
DELETE_UTM = Operation("delete_utm", "DELETE", _UTM + "/drop/{campaign_id}")

LIST_USER_PROPERTIES = Operation("list_user_properties", "GET", "/uba/api/schema/userProperties")
LIST_EVENTS = Operation("list_events", "GET", "/uba/api/schema/event")
LIST_EVENT_PROPERTIES = Operation("list_event_properties", "GET", "/uba/api/schema/eventProperties")
ADD_USER_PROPERTY = Operation("add_user_property", "POST", "/uba/api/schema/userProperties")
ADD_EVENT = Operation("add_event", "POST", "/uba/api/schema/event")
UPDATE_USER_PROPERTY = Operation("update_user_property", "PUT", "/uba/api/schema/userProperties")
UPDATE_EVENT = Operation("update_event", "PUT", "/uba/api/schema/event")
UPDATE_EVENT_PROPERTY = Operation("update_event_property", "PUT", "/uba/api/schema/eventProperties")

GET_COHORT_USERS = Operation("get_cohort_users", "POST", "/uba/api/cohort/users")
EXPORT_COHORT_USERS = Operation("export_cohort_users", "POST", "/uba/api/cohort/users/export")

REGISTER_ACCOUNT = Operation(
    "register_account",
    "POST",
    "/uba/manage/enterprise/accounts",
    auth=AuthKind.PLATFORM,
    idempotent=False,
    unknown_outcome_hint=(
        "Check whether the account exists now before registering it again "
        "(a second registration of a created account fails as already existing)."
    ),
)
SET_ACCOUNT_ACTIVATION = Operation(
    "set_account_activation",
    "POST",
    "/uba/manage/enterprise/accounts/activation",
    auth=AuthKind.PLATFORM,
)

ANALYZE_FUNNEL = Operation("analyze_funnel", "POST", "/uba/api/funnels/analyze")
ANALYZE_EVENTS = Operation("analyze_events", "POST", "/uba/api/events/analyze")
