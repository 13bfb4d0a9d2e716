"""Ad tracking operators: create a link (and read it back), delete one, fetch its conversion."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.core.errors import AnalyticsError
from airflow_provider_analytics.core.redaction import Redactor
from airflow_provider_analytics.operators.base import AnalyticsBaseOperator
from airflow_provider_analytics.operators.intervals import covered_days

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow.sdk import Context


class UtmReadBackError(AnalyticsError):
    """The ad tracking link was created, but reading it back failed.

    The message names the new campaign id, so nobody creates the link again to get its
    addresses: a second create makes a duplicate.
    """

    def __init__(self, campaign_id: str, cause: AnalyticsError) -> None:
        super().__init__(
            f"ad tracking {campaign_id} was created, but reading it back failed: {cause}. "
            f"The link exists: do not create it again (that makes a duplicate); read it with "
            f"get_utm({campaign_id!r}) once the platform answers",
            status=cause.status,
            code=cause.code,
            msg=cause.msg,
            data=cause.data,
            operation="get_utm",
        )
        self.campaign_id = campaign_id


class CreateUtmOperator(AnalyticsBaseOperator):
    """Create an ad tracking link (spec 4.1), read it back (4.2), return its links:
    ``{"campaign_id", "url", "short_url"}``. The page URL (an absolute http(s) address) and the
    required campaign, medium and source are checked before anything is sent.

    A create is not idempotent: the operator defaults to ``retries=0`` and retries a create only
    when the request provably never reached the platform; an answer lost after sending fails the
    task saying the link may exist (check the platform's list before clearing the task). A
    failed read-back raises :class:`UtmReadBackError` naming the new campaign id.

    :param page_url: target address (templated).
    :param utm_campaign: ad name (templated).
    :param utm_medium: ad medium (templated).
    :param utm_source: ad source (templated).
    :param utm_content: ad content (templated).
    :param utm_term: ad keyword (templated).
    :param remarks: remarks (templated).
    :param utm_type: tracking type, when the platform wants one (templated).
    :param login_user: operator recorded by the platform (templated).
    """

    template_fields: Sequence[str] = (
        "analytics_conn_id",
        "page_url",
        "utm_campaign",
        "utm_medium",
        "utm_source",
        "utm_content",
        "utm_term",
        "remarks",
        "utm_type",
        "login_user",
    )
    ui_color = "#f2e0ec"

    def __init__(
        self,
        *,
        page_url: str,
        utm_campaign: str,
        utm_medium: str,
        utm_source: str,
        utm_content: str | None = None,
        utm_term: str | None = None,
        remarks: str | None = None,
        utm_type: str | None = None,
        login_user: str | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("retries", 0)
        super().__init__(**kwargs)
        self.page_url = page_url
        self.utm_campaign = utm_campaign
        self.utm_medium = utm_medium
        self.utm_source = utm_source
        self.utm_content = utm_content
        self.utm_term = utm_term
        self.remarks = remarks
        self.utm_type = utm_type
        self.login_user = login_user

    def execute(self, context: Context) -> dict[str, Any]:
        client = self.hook.get_conn()
        campaign_id = client.create_utm(
            self.page_url,  # checked by the client before anything is sent
            self.utm_campaign,
            self.utm_medium,
            self.utm_source,
            utm_content=self.utm_content,
            utm_term=self.utm_term,
            remarks=self.remarks,
            utm_type=self.utm_type,
            login_user=self.login_user,
        )
        try:
            record = client.get_utm(campaign_id)
        except AnalyticsError as error:
            raise UtmReadBackError(campaign_id, error) from error
        shown_url = Redactor(self.hook.client_config.secrets()).excerpt(record.get("url"), 300)
        self.log.info("created ad tracking %s: %s", campaign_id, shown_url)
        return {
            "campaign_id": campaign_id,
            "url": record.get("url"),
            "short_url": record.get("shortUrl"),
        }


class DeleteUtmOperator(AnalyticsBaseOperator):
    """Delete an ad tracking link logically (spec 4.4); its data is kept by the platform.

    :param campaign_id: the campaign (templated).
    """

    template_fields: Sequence[str] = ("analytics_conn_id", "campaign_id")

    def __init__(self, *, campaign_id: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.campaign_id = campaign_id

    def execute(self, context: Context) -> dict[str, Any]:
        self.hook.get_conn().delete_utm(self.campaign_id)
        return {"campaign_id": str(self.campaign_id), "deleted": True}


class UtmConversionOperator(AnalyticsBaseOperator):
    """Conversion effect of an ad tracking link (spec 4.3) over the days the run covers.

    The platform's answer (whose fields the spec leaves open) is returned as the XCom, as is.

    :param campaign_id: the campaign (templated).
    :param expression: conversion target as an event expression, e.g. ``event.purchase``.
    :param convert_measures: alternatively, ``[{"expression", "aggregator"}]``.
    :param from_date: first day, default the first day the run covers (templated).
    :param to_date: last day, default the last day the run covers (templated).
    """

    template_fields: Sequence[str] = (
        "analytics_conn_id",
        "campaign_id",
        "expression",
        "from_date",
        "to_date",
    )

    def __init__(
        self,
        *,
        campaign_id: str,
        expression: str | None = None,
        convert_measures: list[dict[str, Any]] | None = None,
        from_date: str | None = None,
        to_date: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.campaign_id = campaign_id
        self.expression = expression
        self.convert_measures = convert_measures
        self.from_date = from_date
        self.to_date = to_date

    def execute(self, context: Context) -> dict[str, Any]:
        first, last = covered_days(context).dates
        return self.hook.get_conn().get_utm_conversion(
            self.campaign_id,
            first if self.from_date is None else self.from_date,  # a rendered "" is refused
            last if self.to_date is None else self.to_date,
            expression=self.expression,
            convert_measures=self.convert_measures,
        )
