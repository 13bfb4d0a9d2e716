"""Read a successful answer: strict JSON, then the operation's declared answer.

A 200 that is not strict JSON (an HTML page from a proxy, ``NaN``, a repeated key) raises
:class:`AnalyticsProtocolError`; a 200 whose body reports ``success`` other than 0 raises
:class:`AnalyticsOperationFailedError`; a body that does not fit the declaration of
:mod:`~airflow_provider_analytics.client.answers` raises its ``AnswerShapeError``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.core import answers, strict_json
from airflow_provider_analytics.core.errors import (
    AnalyticsOperationFailedError,
    AnalyticsProtocolError,
)
from airflow_provider_analytics.core.page_lines import PageParts, split_page
from airflow_provider_analytics.core.redaction import Redactor

if TYPE_CHECKING:
    from collections.abc import Iterable

    from airflow_provider_analytics.client.answers import Asked
    from airflow_provider_analytics.client.attempts import HttpAnswer

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

    def answer(self, response: HttpAnswer, asked: Asked | None = None) -> Any:
        """The JSON body after it passed the operation's declared answer
        (:mod:`~airflow_provider_analytics.client.answers`).

        :param response: the answer.
        :param asked: what the request asked, for the relations that depend on it.
        :raises AnswerShapeError: the body does not fit, naming the field.
        """
        body = self.json(response)
        self.declared(body, asked)
        return body

    def declared(self, body: Any, asked: Asked | None = None) -> Any:
        """``body`` (strict JSON already read) as the operation's declared answer, or refused
        by name."""
        try:
            return answers.decode(self._operation, body, asked=asked, secrets=self._secrets)
        except answers.AnswerShapeError as exc:
            raise answers.AnswerShapeError(
                f"{exc}; {_CHECK_ADDRESS}", operation=self._operation, secrets=self._secrets
            ) from None

    def page_lines(self, response: HttpAnswer, asked: Asked | None = None) -> PageParts:
        """A page of cohort users, its users kept as the export's lines
        (:mod:`~airflow_provider_analytics.core.page_lines`): the page's members pass the
        declared answer as :meth:`answer` checks them, the users' values the export's rule.

        :raises AnswerShapeError: the page's members do not fit, naming the field.
        """
        try:
            parts = split_page(response.content)
        except strict_json.StrictJsonError as exc:
            content_type = response.headers.get("Content-Type", "no content type")
            raise self.protocol_error(
                f"the answer (HTTP {response.status_code}, {content_type}) {exc}"
            ) from None
        body = dict(parts.envelope)
        if parts.rows is not None:
            body["users"] = [{}] * parts.rows  # the relations count them; the lines hold them
        self.declared(body, asked)
        return parts
