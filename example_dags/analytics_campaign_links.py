"""Ad tracking links for a list of campaigns: one mapped task per link, then a table of them.

Trigger it with the campaigns to create, e.g.::

    airflow dags trigger analytics_campaign_links --conf '{"campaigns": [
        {"utm_campaign": "summer_sale", "utm_source": "newsletter", "utm_medium": "email",
         "page_url": "https://shop.example.com/summer"}]}'

Creating a link is not idempotent, so the mapped task is never retried automatically.
"""

from __future__ import annotations

from typing import Any

import pendulum
from airflow.sdk import Param, dag, task

from airflow_provider_analytics.operators.campaigns import CreateUtmOperator

SPRING_CAMPAIGNS = [
    {
        "utm_campaign": "spring_sale",
        "utm_source": "search",
        "utm_medium": "cpc",
        "page_url": "https://shop.example.com/spring",
    },
    {
        "utm_campaign": "spring_sale",
        "utm_source": "wechat",
        "utm_medium": "social",
        "page_url": "https://shop.example.com/spring",
    },
    {
        "utm_campaign": "loyalty_week",
        "utm_source": "newsletter",
        "utm_medium": "email",
        "page_url": "https://shop.example.com/loyalty",
    },
]


@dag(
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    params={"campaigns": Param(SPRING_CAMPAIGNS, type="array", minItems=1)},
    tags=["analytics", "example"],
)
def analytics_campaign_links() -> None:
    @task
    def campaigns(params: dict[str, Any]) -> list[dict[str, str]]:
        """The links to create, one operator call each (page_url, utm_campaign/source/medium)."""
        return list(params["campaigns"])

    links = CreateUtmOperator.partial(
        task_id="create_link", remarks="created by analytics_campaign_links"
    ).expand_kwargs(campaigns())

    @task
    def link_table(created: list[dict[str, str]]) -> dict[str, str]:
        """Short link of every campaign id, for whoever places the ads."""
        return {link["campaign_id"]: link["short_url"] for link in created}

    link_table(links.output)


analytics_campaign_links()
