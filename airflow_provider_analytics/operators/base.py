"""What every operator of this provider shares: the connection id and a lazily built hook.

The hook (and with it the HTTP client) is imported when a task first uses it, not when a DAG
file is parsed.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator

from airflow_provider_analytics.core import rules
from airflow_provider_analytics.provider_info import DEFAULT_CONN_ID

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow.sdk import Context

    from airflow_provider_analytics.hooks.analytics import AnalyticsHook


class AnalyticsBaseOperator(BaseOperator):
    """Base class: holds ``analytics_conn_id`` and builds the hook on first use (no I/O at parse).

    :param analytics_conn_id: id of the ``analytics`` connection.
    """

    template_fields: Sequence[str] = ("analytics_conn_id",)

    def __init__(self, *, analytics_conn_id: str = DEFAULT_CONN_ID, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.analytics_conn_id = analytics_conn_id

    def reviewed_result(self, context: Context, preview_task_id: str) -> Any:
        """The result of this run's preview task ``preview_task_id``: the change a person
        reviewed (and approved, e.g. with Airflow's ``ApprovalOperator`` between the two)."""
        reviewed = context["ti"].xcom_pull(task_ids=preview_task_id)
        if reviewed is None:
            rules.fail(
                "reviewed_preview",
                f"task {preview_task_id!r} left no result in this run: nothing was reviewed, so "
                "nothing is applied",
            )
        return reviewed

    @cached_property
    def hook(self) -> AnalyticsHook:
        from airflow_provider_analytics.hooks.analytics import AnalyticsHook

        return AnalyticsHook(analytics_conn_id=self.analytics_conn_id)
