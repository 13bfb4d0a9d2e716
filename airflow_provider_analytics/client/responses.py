"""Check that a successful answer has the shape its operation promises.

A 200 that is not the expected JSON (an HTML page from a proxy, a different API) raises
:class:`AnalyticsProtocolError`; a 200 whose body reports ``success`` other than 0
raises :class:`AnalyticsOperationFailedError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.core import strict_json
from airflow_provider_analytics.core.errors import (
    AnalyticsOperationFailedError,
    AnalyticsProtocolError,
)
from airflow_provider_analytics.core.redaction import Redactor

if TYPE_CHECKING:
    from collections.abc import Iterable

    from airflow_provider_analytics.client.failures import HttpAnswer

_CHECK_ADDRESS = "check that the base URL points at the platform's open API"


class ResponseReader:
    """Reads the answers of one operation.

    :param operation: the client method's name, for messages.
    :param secrets: values to mask in messages.
    """

    def __init__(self, operation: str, secrets: Iterable[str]) -> None:
        self._operation = operation
        self._secrets = tuple(secrets)

    def protocol_error(self, problem: str) -> AnalyticsProtocolError:
        """The error for an answer of the wrong shape; ``problem`` says what is wrong."""
        return AnalyticsProtocolError(
            f"{self._operation}: {problem}; {_CHECK_ADDRESS}",
            operation=self._operation,
            secrets=self._secrets,
        )

    def json(self, response: HttpAnswer) -> Any:
        """The decoded JSON body, checked for a failed ``success``."""
        try:
            body = strict_json.loads(response.content)
        except strict_json.StrictJsonError as exc:
            content_type = response.headers.get("Content-Type", "no content type")
            raise self.protocol_error(
                f"the answer (HTTP {response.status_code}, {content_type}) {exc}"
            ) from None
        if isinstance(body, dict) and "success" in body and body["success"] != 0:
            redactor = Redactor(self._secrets)
            msg = None if body.get("msg") is None else redactor.excerpt(body["msg"])
            raise AnalyticsOperationFailedError(
                f"{self._operation}: the server reported failure "
                f"(success={redactor.excerpt(repr(body['success']), 80)}"
                f"{', msg: ' + msg if msg else ''}); the operation was not carried out",
                status=response.status_code,
                code=body.get("code"),
                msg=msg,
                data=body.get("data"),
                operation=self._operation,
                secrets=self._secrets,
            )
        return body

    def object(self, response: HttpAnswer, *required: str) -> dict[str, Any]:
        """A JSON object holding at least the ``required`` keys."""
        body = self.json(response)
        if not isinstance(body, dict):
            raise self.protocol_error(f"expected a JSON object, got {type(body).__name__}")
        missing = [key for key in required if key not in body]
        if missing:
            raise self.protocol_error(f"the answer lacks {', '.join(missing)}")
        return body

    def success(self, response: HttpAnswer) -> dict[str, Any]:
        """The ``{success: 0}`` body a write promises."""
        return self.object(response, "success")

    def records(self, response: HttpAnswer) -> list[dict[str, Any]]:
        """A JSON array of objects."""
        body = self.json(response)
        if not isinstance(body, list) or not all(isinstance(item, dict) for item in body):
            raise self.protocol_error("expected a JSON array of objects")
        return body
