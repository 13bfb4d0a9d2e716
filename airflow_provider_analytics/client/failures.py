"""Turn an error answer or a failed request into the matching client error.

The platform answers failures with an HTTP status and a ``{code, msg, data}`` body;
this module picks the error class from both and writes a message that says what to
check, without ever showing a credential.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from airflow_provider_analytics.client.operations import AuthKind
from airflow_provider_analytics.client.transport_failures import FailurePhase
from airflow_provider_analytics.core import errors, strict_json
from airflow_provider_analytics.core.redaction import Redactor

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from airflow_provider_analytics.client.operations import Operation
    from airflow_provider_analytics.client.transport_failures import TransportFailure


class HttpAnswer(Protocol):
    """What is read from an answer: ``requests`` and ``httpx`` responses both fit."""

    @property
    def status_code(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def content(self) -> bytes: ...


_NOT_COMPLETED_BY_CODE: dict[int, tuple[type[errors.AnalyticsNotCompletedError], str]] = {
    501: (
        errors.AnalyticsQuotaExceededError,
        "a quota is exhausted (projects, cohorts); free some up or ask for a larger quota",
    ),
    50101: (
        errors.AnalyticsAlreadyExistsError,
        "the object already exists; look it up instead of creating it again",
    ),
    50102: (
        errors.AnalyticsDisabledError,
        "the object exists but is disabled; enable it (for an account: "
        "set_account_activation) instead of creating it again",
    ),
}


def _as_int(value: Any) -> Any:
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return value


def _error_body(response: HttpAnswer, redactor: Redactor) -> tuple[Any, str | None, Any]:
    """``(code, msg, data)`` of the platform's error body; ``None`` parts when absent.

    ``msg`` is masked, then cut to an excerpt.
    """
    try:
        body = strict_json.loads(response.content)
    except strict_json.StrictJsonError:
        return None, None, None
    if not isinstance(body, dict):
        return None, None, None
    msg = body.get("msg")
    if msg is not None:
        msg = redactor.excerpt(msg)
    return _as_int(body.get("code")), msg, body.get("data")


def _credentials_hint(operation: Operation) -> str:
    if operation.auth is AuthKind.PLATFORM:
        return "check the xtoken (platform credential) of the connection"
    return "check the token and appKey (project credentials) of the connection"


def _unknown_outcome(operation: Operation) -> str:
    return (
        " The request had been sent, so it may have been processed: its outcome is unknown "
        f"and it was not retried. {operation.unknown_outcome_hint}"
    )


def _classify(
    status: int, code: Any, operation: Operation, attempts: int
) -> tuple[type[errors.AnalyticsApiError], str]:
    """Error class and advice for an error answer."""
    if status in (400, 498):
        return errors.AnalyticsBadRequestError, "the server rejected the request's parameters"
    if status == 401:
        return (
            errors.AnalyticsAuthenticationError,
            f"authentication failed: {_credentials_hint(operation)}",
        )
    if status == 404:
        return (
            errors.AnalyticsNotFoundError,
            "no such API: check the connection's base URL and the ad tracking path prefix "
            "(utm_prefix: '/svc' in the spec, '/ark' on many deployments)",
        )
    if status == 415:
        return (
            errors.AnalyticsUnsupportedMediaTypeError,
            "the server refused the content type; a proxy between may be rewriting requests",
        )
    if status == 429:
        return (
            errors.AnalyticsRateLimitError,
            f"still rate limited after {attempts} attempt(s); lower the request rate or "
            "raise max_attempts",
        )
    if status in (499, 501):
        cls, advice = _NOT_COMPLETED_BY_CODE.get(
            code if isinstance(code, int) else -1,
            (errors.AnalyticsNotCompletedError, "the operation was not completed"),
        )
        return cls, advice
    if 500 <= status < 600:
        return (
            errors.AnalyticsServerError,
            f"server error after {attempts} attempt(s); the platform or a proxy failed",
        )
    if 300 <= status < 400:
        return (
            errors.AnalyticsApiError,
            "unexpected redirect (not followed, so credentials stay with the configured "
            "host); check the scheme, host and path of the base URL",
        )
    return errors.AnalyticsApiError, "unexpected answer"


def error_from_response(
    operation: Operation,
    response: HttpAnswer,
    *,
    attempts: int,
    secrets: Iterable[str],
) -> errors.AnalyticsApiError:
    """The error for a non-success answer.

    :param operation: the operation that got the answer.
    :param response: the answer (a ``requests`` or an ``httpx`` response).
    :param attempts: attempts made, for the message.
    :param secrets: values to mask.
    """
    status = response.status_code
    secrets = tuple(secrets)
    redactor = Redactor(secrets)
    code, msg, data = _error_body(response, redactor)
    cls, advice = _classify(status, code, operation, attempts)
    detail = f"HTTP {status}"
    if code is not None and code != status:
        detail += f", code {redactor.excerpt(code, 80)}"
    if msg:
        detail += f": {msg}"
    message = f"{operation.name}: {advice} ({detail})"
    if cls is errors.AnalyticsBadRequestError and isinstance(data, list) and data:
        message += f"; offending parameters: {redactor.excerpt(', '.join(map(str, data)))}"
    if cls is errors.AnalyticsServerError and not operation.idempotent:
        message += "." + _unknown_outcome(operation)
    return cls(
        message,
        status=status,
        code=code,
        msg=msg,
        data=data,
        operation=operation.name,
        secrets=secrets,
    )


def error_from_transport(
    operation: Operation,
    failure: TransportFailure,
    *,
    attempts: int,
    detail: str,
    secrets: Iterable[str],
) -> errors.AnalyticsTransportError:
    """The error for a request that got no answer.

    :param operation: the operation that failed.
    :param failure: the classified failure.
    :param attempts: attempts made.
    :param detail: the underlying exception's text (masked here).
    :param secrets: values to mask.
    """
    if failure.phase is FailurePhase.TLS:
        advice = "TLS failed; check the certificate, the verify setting or the CA bundle"
    elif failure.phase is FailurePhase.CONNECT:
        advice = (
            f"could not connect after {attempts} attempt(s); check the base URL, "
            "that the platform is up and that no firewall or proxy is in the way"
        )
    elif failure.phase is FailurePhase.EXCHANGE:
        advice = (
            f"no complete answer after {attempts} attempt(s); the server or a proxy "
            "dropped the connection or was too slow (see read_timeout)"
        )
    else:
        advice = "the request could not be made"
    secrets = tuple(secrets)
    shown = Redactor(secrets).excerpt(detail)
    message = f"{operation.name}: {advice} ({failure.exception}: {shown})"
    if failure.phase is FailurePhase.EXCHANGE and not operation.idempotent:
        message += "." + _unknown_outcome(operation)
    return errors.AnalyticsTransportError(
        message,
        operation=operation.name,
        secrets=secrets,
    )
