"""The HTTP layer: one pooled ``requests.Session``, credentials, timeouts and retries.

Every operation goes through :meth:`HttpSession.request`, which sends the credentials the
operation needs, applies the retry policy and turns failures into the client's errors.
The adapter's own retries are off (``max_retries=0``): retrying is decided here, per
operation, because creating something twice is not the same as reading it twice.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import requests

from airflow_provider_analytics.client.deadline import DeadlineAdapter, deadline
from airflow_provider_analytics.client.errors import (
    AnalyticsConfigurationError,
    AnalyticsTransportError,
)
from airflow_provider_analytics.client.failures import error_from_response, error_from_transport
from airflow_provider_analytics.client.operations import AuthKind
from airflow_provider_analytics.client.redaction import Redactor
from airflow_provider_analytics.client.retry import (
    RETRY_AFTER_STATUSES,
    RetryPolicy,
    classify_transport_error,
    parse_retry_after,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from airflow_provider_analytics.client.config import ClientConfig
    from airflow_provider_analytics.client.operations import Operation


def _new_session(config: ClientConfig) -> requests.Session:
    session = requests.Session()
    adapter = DeadlineAdapter(pool_maxsize=config.pool_maxsize, max_retries=0)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    return session


def auth_headers(config: ClientConfig, operation: Operation) -> dict[str, str]:
    """The credential headers ``operation`` needs: ``token`` and ``appKey``, or ``xtoken``.

    :param config: the credentials.
    :param operation: decides which credentials.
    :raises AnalyticsConfigurationError: the connection does not set them (checked before
        anything is sent).
    """
    if operation.auth is AuthKind.PLATFORM:
        if not config.xtoken:
            raise AnalyticsConfigurationError(
                f"{operation.name} is an account operation and needs the platform "
                "credential xtoken, which the connection does not set",
                operation=operation.name,
            )
        return {"xtoken": config.xtoken}
    token, app_key = config.token, config.app_key
    if not token or not app_key:
        missing = [n for n, v in (("token", token), ("appKey", app_key)) if not v]
        raise AnalyticsConfigurationError(
            f"{operation.name} is a project operation and needs the project credentials "
            f"token and appKey; the connection does not set {' and '.join(missing)}",
            operation=operation.name,
        )
    return {"token": token, "appKey": app_key}


class HttpSession:
    """Sends the spec's operations over one connection pool.

    :param config: where and how to connect.
    :param session: a ``requests.Session`` to use instead of a new pooled one; the caller
        keeps ownership and closes it.
    :param sleep: waits between attempts (injectable for tests).
    """

    def __init__(
        self,
        config: ClientConfig,
        *,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._config = config
        self._owns_session = session is None
        self._session = _new_session(config) if session is None else session
        self._retry = RetryPolicy.from_config(config, sleep=sleep)
        self._secrets = config.secrets()

    def close(self) -> None:
        """Close the pool if this object created it."""
        if self._owns_session:
            self._session.close()

    def request(
        self,
        operation: Operation,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        stream: bool = False,
        read_timeout: float | None = None,
        extra_secrets: Iterable[str] = (),
        time_limit: float | None = None,
    ) -> requests.Response:
        """Send ``operation`` and return its successful (2xx) answer.

        :param operation: the operation; decides credentials and retry safety.
        :param path: request path (already percent-encoded) below the base URL.
        :param params: query parameters (``None`` values are dropped).
        :param json: JSON body, or ``None`` for no body.
        :param stream: leave the body unread, for streamed answers.
        :param read_timeout: read timeout instead of the configured one.
        :param extra_secrets: values of this request to mask in errors, besides the
            credentials (a password in the body, for example).
        :param time_limit: seconds the whole call may take, retries included, instead of
            ``request_deadline`` (for a streamed answer: until its headers have arrived).
            Enforced on the pool this object creates.
        :raises AnalyticsConfigurationError: the needed credentials are not configured.
        :raises AnalyticsApiError: the server answered with an error status.
        :raises AnalyticsTransportError: no answer, after the retries allowed.
        """
        config = self._config
        headers = {"User-Agent": config.user_agent, "Accept": "application/json"}
        headers.update(auth_headers(config, operation))
        if json is not None:
            headers["Content-Type"] = "application/json"
        query = None if params is None else {k: v for k, v in params.items() if v is not None}
        timeout = (config.connect_timeout, read_timeout or config.read_timeout)
        url = config.api_root + path
        secrets = (*self._secrets, *extra_secrets)
        redactor = Redactor(secrets)
        limit = config.request_deadline if time_limit is None else time_limit
        ends = time.monotonic() + limit
        attempt = 0
        while True:
            attempt += 1
            try:
                with deadline(ends - time.monotonic()) as watch:
                    response = self._session.request(
                        operation.method,
                        url,
                        params=query,
                        json=json,
                        headers=headers,
                        timeout=timeout,
                        verify=config.verify,
                        stream=stream,
                        allow_redirects=False,
                    )
            except requests.RequestException as exc:
                if watch.expired or time.monotonic() >= ends:
                    raise AnalyticsTransportError(
                        f"{operation.name}: no complete answer within {limit:g} s "
                        f"(attempt {attempt}); the server is stalled or sends too slowly; "
                        "raise request_deadline if it is merely slow",
                        operation=operation.name,
                    ) from None
                failure = classify_transport_error(exc)
                if self._retry.has_attempts_left(attempt) and self._retry.retries_transport(
                    failure, idempotent=operation.idempotent
                ):
                    self._retry.wait(operation.name, attempt, failure.reason)
                    continue
                raise error_from_transport(
                    operation,
                    failure,
                    attempts=attempt,
                    detail=redactor.text(str(exc)),
                    secrets=secrets,
                ) from None
            status = response.status_code
            if 200 <= status < 300:
                return response
            if self._retry.has_attempts_left(attempt) and self._retry.retries_status(
                status, idempotent=operation.idempotent
            ):
                retry_after = None
                if status in RETRY_AFTER_STATUSES:
                    retry_after = parse_retry_after(
                        response.headers.get("Retry-After"), now=self._retry.clock()
                    )
                response.close()
                self._retry.wait(operation.name, attempt, f"HTTP {status}", retry_after)
                continue
            error = error_from_response(operation, response, attempts=attempt, secrets=secrets)
            response.close()
            raise error
