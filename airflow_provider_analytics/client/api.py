"""``AnalyticsClient``: one method per operation of the platform's open API.

Methods take Pythonic (snake_case) arguments, check them against the spec's rules before
sending anything, send the spec's camelCase bodies without ``None`` values, and return
plain JSON data. Failures raise the errors of :mod:`~airflow_provider_analytics.core.errors`.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from airflow_provider_analytics.client import operations as ops
from airflow_provider_analytics.client import validation
from airflow_provider_analytics.client.analysis_requests import EventRequest, FunnelRequest
from airflow_provider_analytics.client.answers import Asked, PagedListing, ResponseReader
from airflow_provider_analytics.client.config import ClientConfig, ConfiguredClient
from airflow_provider_analytics.client.export import CohortExport
from airflow_provider_analytics.client.session import HttpSession
from airflow_provider_analytics.client.validation import CohortQuery, cohort_body, cohort_query
from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.errors import (
    AnalyticsError,
    AnalyticsUsageError,
)
from airflow_provider_analytics.core.progress import Progress, bar_wanted
from airflow_provider_analytics.core.redaction import known, remember
from airflow_provider_analytics.core.report_dates import sent_at

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

    import requests

    from airflow_provider_analytics.client.answers import EventAnswer, FunnelAnswer
    from airflow_provider_analytics.core.page_lines import PageParts

log = logging.getLogger(__name__)

_P = ParamSpec("_P")
_R = TypeVar("_R")

# every other public method names itself on the errors of its argument checks
_NOT_OPERATIONS = frozenset({"close", "progress", "request_json", "test_connection"})

TEST_CONNECTION_DEADLINE = 15.0
"""Seconds :meth:`AnalyticsClient.test_connection` waits in all before it reports failure."""


def _login_user(value: Any) -> dict[str, str | None]:
    return {"loginUser": None if value is None else rules.non_empty_string(value, "login_user")}


def account_activation(email: Any, activation: Any, login_user: Any) -> dict[str, Any]:
    """The query and body of an account enabled or disabled (spec 4.15), checked: what
    :meth:`AnalyticsClient.set_account_activation` sends and a preview of the change checks."""
    params = {"email": rules.email(email), **_login_user(login_user)}
    return {"params": params, "json": validation.Activation.of(locals()).to_body()}


def _plan_filters(plan: Any, data_status: Any) -> dict[str, int | None]:
    return {
        "plan": None if plan is None else rules.flag(plan, "plan"),
        "dataStatus": None if data_status is None else rules.flag(data_status, "data_status"),
    }


@dataclass(frozen=True)
class AnalysisAnswer:
    """An analysis answer decoded once (what the report tables are built from), its JSON
    body, and its ``Date`` header in UTC (``None`` when missing or unreadable)."""

    answer: FunnelAnswer | EventAnswer
    body: dict[str, Any]
    sent_at: dt.datetime | None


class AnalyticsClient(ConfiguredClient):
    """Client of the platform's open API; thread-safe enough to share one per process.

    :param config: where the platform is and which credentials to send.
    :param session: a ``requests.Session`` to use instead of a new pooled one (the
        caller keeps ownership and closes it).
    :param sleep: waits between retries (injectable for tests).
    """

    def __init__(
        self,
        config: ClientConfig,
        *,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(config)
        self._http = HttpSession(config, session, sleep)

    def __enter__(self) -> AnalyticsClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the connection pool (if the client created it)."""
        self._http.close()

    def _call(self, operation: ops.Operation, *, asked: Asked | None = None, **options: Any) -> Any:
        """Send ``operation`` and return its JSON answer, checked by its declared answer."""
        response = self._http.send(operation, **options)[0]
        return ResponseReader(operation.name, operation.after_sending).answer(response, asked)

    def request_json(self, call: ops.ApiCall) -> Any:
        """Send a request described as data (as the asynchronous client does) and return its
        decoded JSON answer. Nothing is checked beyond the credentials: build the call from
        checked values.

        :param call: the operation, its query, body and path parameters.
        """
        options = {"params": call.params, "json": call.body, "path_params": call.path_params}
        return self._call(call.operation, asked=call.asked, **options)

    # Ad tracking (spec 4.1 to 4.4)

    def create_utm(
        self,
        page_url: str,
        utm_campaign: str,
        utm_medium: str,
        utm_source: str,
        *,
        utm_content: str | None = None,
        utm_term: str | None = None,
        remarks: str | None = None,
        utm_type: str | None = None,
        login_user: str | None = None,
    ) -> str:
        """Create an ad tracking link (spec 4.1) and return its campaign id as a string.

        Not retried once the request may have reached the server: if the outcome is
        unknown the error says so; look the campaign up before creating it again.

        :param page_url: target address (absolute http/https URL).
        :param utm_campaign: ad name.
        :param utm_medium: ad medium.
        :param utm_source: ad source.
        :param utm_content: ad content.
        :param utm_term: ad keyword.
        :param remarks: free remark.
        :param utm_type: ad type, as some deployments expect.
        :param login_user: operator recorded as creator (query ``loginUser``).
        """
        body = validation.UtmLink.of(locals()).to_body()
        params = _login_user(login_user)
        return str(self._call(ops.CREATE_UTM, params=params, json=body)["campaignId"])

    def get_utm(self, campaign_id: str | int) -> dict[str, Any]:
        """The ad tracking record (spec 2.1/4.2), including its long and short links.

        :param campaign_id: as returned by :meth:`create_utm`.
        """
        cid = rules.campaign_id(campaign_id)
        return self._call(
            ops.GET_UTM, path_params={"campaign_id": cid}, asked=Asked(campaign_id=cid)
        )

    def get_utm_conversion(
        self,
        campaign_id: str | int,
        from_date: Any,
        to_date: Any,
        *,
        expression: str | None = None,
        convert_measures: list[dict[str, Any]] | None = None,
        use_cache: bool | None = None,
    ) -> dict[str, Any]:
        """Conversion effect of an ad tracking link (spec 4.3), as the server returns it.

        :param campaign_id: the campaign.
        :param from_date: first day, ``yyyy-MM-dd`` or a ``datetime.date``.
        :param to_date: last day (inclusive).
        :param expression: conversion target, an event expression ``event.<event id>``.
        :param convert_measures: ``[{expression, aggregator}]`` measures.
        :param use_cache: let the server answer from its cache.
        """
        cid = rules.campaign_id(campaign_id)
        body = validation.UtmConversionQuery.of(locals()).to_body()
        return self._call(ops.GET_UTM_CONVERSION, json=body, path_params={"campaign_id": cid})

    def delete_utm(self, campaign_id: str | int) -> None:
        """Delete an ad tracking link logically (spec 4.4); its data is kept."""
        cid = rules.campaign_id(campaign_id)
        self._call(ops.DELETE_UTM, path_params={"campaign_id": cid})

    # Tracking plan (spec 4.5 to 4.11)

    def list_user_properties(
        self, *, plan: int | None = None, data_status: int | None = None
    ) -> list[dict[str, Any]]:
        """User properties of the tracking plan (spec 4.5).

        :param plan: 1 inside the plan, 0 outside; ``None`` for both.
        :param data_status: 1 data reported, 0 not reported; ``None`` for both.
        """
        return self._call(ops.LIST_USER_PROPERTIES, params=_plan_filters(plan, data_status))

    def list_events(
        self, *, plan: int | None = None, data_status: int | None = None
    ) -> list[dict[str, Any]]:
        """Events of the tracking plan (spec 4.6); filters as in :meth:`list_user_properties`."""
        return self._call(ops.LIST_EVENTS, params=_plan_filters(plan, data_status))

    def list_event_properties(
        self, event_id: str, *, plan: int | None = None, data_status: int | None = None
    ) -> list[dict[str, Any]]:
        """Properties of one event, its own and the common ones (spec 4.7).

        :param event_id: the event (preset ids carry a leading ``$``).
        """
        params = {"eventId": rules.id_ref(event_id, "event_id"), **_plan_filters(plan, data_status)}
        return self._call(ops.LIST_EVENT_PROPERTIES, params=params)

    def add_user_property(
        self,
        id: str,
        data_type: str,
        *,
        name: str | None = None,
        remark: str | None = None,
    ) -> None:
        """Add a user property to the plan (spec 4.8).

        Idempotent by the spec's state rules: a property outside the plan moves in (with
        this name and remark), one already in the plan with the same type is left alone.

        :param id: property id (letters, digits, underscore; not starting with a digit).
        :param data_type: string, number, boolean, datetime or array<string>.
        :param name: display name.
        :param remark: remark.
        """
        body = validation.UserPropertyBody.of(locals()).to_body()
        self._call(ops.ADD_USER_PROPERTY, json=body)

    def add_event(
        self,
        id: str,
        *,
        name: str | None = None,
        remark: str | None = None,
        properties: list[dict[str, Any]] | None = None,
    ) -> None:
        """Add an event with its properties to the plan (spec 4.9); idempotent like
        :meth:`add_user_property`.

        :param id: event id.
        :param name: display name.
        :param remark: remark.
        :param properties: ``[{id, dataType (or data_type), name?, remark?}]``.
        """
        self._call(ops.ADD_EVENT, json=validation.EventBody.of(locals()).to_body())

    def update_user_property(
        self,
        id: str,
        *,
        name: str | None = None,
        data_type: str | None = None,
        remark: str | None = None,
    ) -> None:
        """Change a user property (spec 4.10); only what is given is sent.

        The data type can change only while the property has no reported data.
        """
        params = {"id": rules.id_ref(id, "id")}
        body = validation.Changes.of(locals()).to_body()
        self._call(ops.UPDATE_USER_PROPERTY, params=params, json=body)

    def update_event(
        self,
        id: str,
        *,
        name: str | None = None,
        remark: str | None = None,
    ) -> None:
        """Change an event's display name or remark (spec 4.11)."""
        params = {"id": rules.id_ref(id, "id")}
        body = validation.Changes.of(locals()).to_body()
        self._call(ops.UPDATE_EVENT, params=params, json=body)

    def update_event_property(
        self,
        event_id: str,
        property_id: str,
        *,
        name: str | None = None,
        data_type: str | None = None,
        remark: str | None = None,
    ) -> None:
        """Change an event property (spec 4.11); the type only while no data is reported."""
        params = {
            "eventId": rules.id_ref(event_id, "event_id"),
            "propertyId": rules.id_ref(property_id, "property_id"),
        }
        body = validation.Changes.of(locals()).to_body()
        self._call(ops.UPDATE_EVENT_PROPERTY, params=params, json=body)

    # Cohort users (spec 4.12, 4.13)

    def _cohort_page(self, body: dict[str, Any]) -> Any:
        asked = Asked(
            page=body.get("page"), page_size=body.get("pageSize"), limit=body.get("limit")
        )
        return self._call(ops.GET_COHORT_USERS, json=body, asked=asked)

    def get_cohort_users(
        self,
        cohort_code: str | CohortQuery,
        *,
        limit: int | None = None,
        properties: list[str] | None = None,
        page: int | None = None,
        page_size: int | None = None,
    ) -> dict[str, Any]:
        """One call's worth of a cohort's users (spec 4.12): ``{count, page, size, users}``.

        :param cohort_code: the cohort, or a checked
            :class:`~airflow_provider_analytics.client.validation.CohortQuery`.
        :param limit: most users to return (server default 1000; with paging, the cohort).
        :param properties: user property ids or ``tag.<code>``; ``None``: the visible ones.
        :param page: 1-based page (platform 4.6+), together with ``page_size``.
        :param page_size: users per page, at most ``limit``.
        """
        body = cohort_body(
            cohort_code, limit=limit, properties=properties, page=page, page_size=page_size
        )
        return self._cohort_page(body)

    def get_cohort_user_lines(
        self,
        cohort_code: str | CohortQuery,
        *,
        page: int,
        page_size: int,
        limit: int | None = None,
        properties: list[str] | None = None,
    ) -> PageParts:
        """One page of a cohort's users (spec 4.12) as ``envelope``, ``rows`` and ``lines`` (the
        users as the export's NDJSON lines), checked as :meth:`get_cohort_users` checks it.

        :param cohort_code: as in :meth:`get_cohort_users`.
        :param page: the 1-based page.
        :param page_size: users per page.
        """
        body = cohort_body(
            cohort_code, limit=limit, properties=properties, page=page, page_size=page_size
        )
        response = self._http.send(ops.GET_COHORT_USERS, json=body)[0]
        asked = Asked(page=body["page"], page_size=body["pageSize"])
        return ResponseReader(ops.GET_COHORT_USERS.name).page_lines(response, asked)

    def iter_cohort_user_pages(
        self,
        cohort_code: str,
        *,
        properties: list[str] | None = None,
        page_size: int = 1000,
        limit: int | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Pages 1, 2, ... of a cohort's users (each as :meth:`get_cohort_users` returns it)
        until ``limit`` or all ``count`` users are read. Arguments are checked now; pages are
        fetched as the iterator is consumed.

        :param cohort_code: the cohort.
        :param properties: as in :meth:`get_cohort_users`.
        :param page_size: users per page.
        :param limit: most users to read in all; ``None`` for the whole cohort.
        """
        query = cohort_query(cohort_code, limit=limit, properties=properties)
        size = rules.positive_int(page_size, "page_size")
        if query.limit is not None:
            size = min(size, query.limit)
        return self._cohort_pages(cohort_body(query, page=1, page_size=size))

    def progress(
        self,
        subject: str,
        *,
        total: int | None = None,
        unit: str = "rows",
        size_label: str = "",
        interval: float | None = None,
        bar: bool | None = None,
    ) -> Progress:
        """A :class:`~airflow_provider_analytics.core.progress.Progress` with the configured
        defaults (the one place they come from).

        :param interval: seconds between lines; ``None``: the configured ``progress_interval``.
        :param bar: ``False`` for no bar; otherwise the configured ``progress_bar``.
        """
        return Progress(
            subject,
            total=total,
            unit=unit,
            interval=self._config.progress_interval if interval is None else interval,
            size_label=size_label,
            bar=False if bar is False else self._config.progress_bar,
        )

    def _cohort_pages(self, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        listing = PagedListing(page_size=body["pageSize"], limit=body.get("limit"))
        progress = self.progress(f"cohort {body['cohortCode']} pages")
        try:
            while (number := listing.next_page()) is not None:
                page = self._cohort_page({**body, "page": number})
                listing.take(page)
                progress.total = listing.wanted
                progress.update(listing.read)
                yield page
            progress.finish(listing.read)
        finally:
            progress.close()

    def export_cohort_users(
        self,
        cohort_code: str | CohortQuery,
        *,
        limit: int | None = None,
        properties: list[str] | None = None,
        expected_rows: int | None = None,
        progress: bool = True,
    ) -> CohortExport:
        """Open a streamed export of a cohort's users (spec 4.13), read through the returned
        :class:`CohortExport` (best used as a context manager).

        The request is sent now (and retried if it fails before streaming starts). Reads wait
        up to ``export_read_timeout`` seconds, the whole body must arrive within
        ``export_deadline``; progress is logged every ``progress_interval``. The export holds
        one of the ``max_concurrent_calls`` places until its body is read or it is closed.

        :param cohort_code: as in :meth:`get_cohort_users`.
        :param limit: most users; ``None`` for all.
        :param properties: as in :meth:`get_cohort_users`.
        :param expected_rows: the rows the export will hold, if known, for the progress'
            percentage; unknown and a bar shown, the count is asked with a one-user page.
        :param progress: ``False`` to report no progress (a caller that reports its own).
        """
        body = cohort_query(cohort_code, limit=limit, properties=properties).to_body()
        if expected_rows is not None:
            rules.integer(expected_rows, "expected_rows", minimum=0)
        elif progress and bar_wanted(self._config.progress_bar):
            try:  # the stream declares no length; the platform may not tell (the export goes on)
                count = self._cohort_page({**body, "page": 1, "pageSize": 1})["count"]
                expected_rows = min(count, body.get("limit", count))  # None values are not sent
            except AnalyticsError as error:
                log.info("cohort %s: no total for the progress bar (%s)", body["cohortCode"], error)
        deadline = time.monotonic() + self._config.export_deadline
        response, slot = self._http.send(
            ops.EXPORT_COHORT_USERS,
            stream=True,
            json=body,
            read_timeout=self._config.export_read_timeout,
        )
        return CohortExport(
            response,
            release=slot.release,
            deadline=deadline,
            progress=self.progress(
                f"cohort {body['cohortCode']}", total=expected_rows, size_label="received"
            )
            if progress
            else None,
        )

    # Enterprise accounts (spec 4.14, 4.15)

    def register_account(
        self,
        email: str,
        *,
        user_name: str | None = None,
        name: str | None = None,
        password: str | None = None,
        phone: str | None = None,
        department: str | None = None,
        login_user: str | None = None,
    ) -> dict[str, Any]:
        """Register an enterprise user (spec 4.14) and return ``{userId, email}``.

        Not retried once the request may have reached the server (see :meth:`create_utm`).
        The password is masked in any error, like the credentials.

        :param email: unique login e-mail.
        :param user_name: unique login name.
        :param name: real name shown in the platform.
        :param password: initial password (optional from platform 4.5.1).
        :param phone: unique login phone number.
        :param department: department.
        :param login_user: operator recorded for the change (query ``loginUser``).
        """
        body = validation.Account.of(locals()).to_body()
        params = _login_user(login_user)
        remember((password,))  # masked in any error, like the credentials
        return self._call(ops.REGISTER_ACCOUNT, params=params, json=body)

    def set_account_activation(
        self, email: str, activation: bool, *, login_user: str | None = None
    ) -> None:
        """Enable (``True``) or disable (``False``) an enterprise user (spec 4.15).

        :param email: the account.
        :param activation: a real bool; 0/1 or strings are refused.
        :param login_user: operator recorded for the change (query ``loginUser``).
        """
        self._call(ops.SET_ACCOUNT_ACTIVATION, **account_activation(email, activation, login_user))

    # Analyses (spec 4.16, 4.17)

    def analyze_funnel(self, request: Mapping[str, Any] | FunnelRequest) -> dict[str, Any]:
        """Run a funnel analysis (spec 4.16) and return the server's result as JSON data.

        :param request: a
            :class:`~airflow_provider_analytics.client.analysis_requests.FunnelRequest`, or
            the body with the spec's keys (read by the same declaration).
        """
        return self.analyze(FunnelRequest.of(request)).body

    def analyze_events(self, request: Mapping[str, Any] | EventRequest) -> dict[str, Any]:
        """Run an event analysis (spec 4.17) and return the server's result as JSON data.

        :param request: an
            :class:`~airflow_provider_analytics.client.analysis_requests.EventRequest`, or
            the body with the spec's keys (read by the same declaration).
        """
        return self.analyze(EventRequest.of(request)).body

    def analyze(self, request: FunnelRequest | EventRequest) -> AnalysisAnswer:
        """Run an analysis and return its answer, decoded once through its declaration, with
        the moment the platform sent it (what a job needs to read ``reportUpdateTime``).

        :param request: the request, with its dates.
        """
        if not isinstance(request, FunnelRequest | EventRequest):
            raise AnalyticsUsageError(
                "analyze takes a FunnelRequest or an EventRequest; analyze_funnel and "
                "analyze_events also take the body as a dict"
            )
        operation = ops.ANALYZE_FUNNEL if isinstance(request, FunnelRequest) else ops.ANALYZE_EVENTS
        response = self._http.send(operation, json=request.sent())[0]
        reader = ResponseReader(operation.name)
        body = reader.json(response)
        answer = reader.declared(body, request.asked())
        return AnalysisAnswer(answer, body, sent_at(response.headers.get("Date")))

    def test_connection(self) -> tuple[bool, str]:
        """Check the connection with a harmless read (the events inside the plan), giving up
        after ``TEST_CONNECTION_DEADLINE`` seconds (someone is waiting in the UI).

        :return: ``(True, summary)`` or ``(False, reason)``; never raises, never shows
            a credential.
        """
        try:
            events = self._call(
                ops.LIST_EVENTS, params={"plan": 1}, time_limit=TEST_CONNECTION_DEADLINE
            )
        except AnalyticsError as exc:
            return False, str(exc)
        except Exception as exc:  # a connection test reports, it does not raise
            return False, known().text(f"{type(exc).__name__}: {exc}")
        return True, (
            f"Connected to {self._config.base_url}: {len(events)} events in the tracking plan"
        )


def _reports_operation(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """Name the method as ``operation`` on errors raised before a request (validation)."""

    @functools.wraps(method)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(*args, **kwargs)
        except AnalyticsError as exc:
            if exc.operation is None:
                exc.operation = method.__name__
            raise

    return wrapper


for _name, _method in list(vars(AnalyticsClient).items()):
    if callable(_method) and _name[0] != "_" and _name not in _NOT_OPERATIONS:
        setattr(AnalyticsClient, _name, _reports_operation(_method))
