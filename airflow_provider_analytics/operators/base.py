"""What every operator of this provider shares: the connection id, a hook built on first use
(imported when a task first uses it, not when a DAG file is parsed), and the documentation of
the keyword arguments a base class takes."""

from __future__ import annotations

import inspect
import re
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator

from airflow_provider_analytics.core import rules
from airflow_provider_analytics.provider_info import DEFAULT_CONN_ID

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow.sdk import Context

    from airflow_provider_analytics.hooks.analytics import AnalyticsHook

_PARAM = re.compile(r"^:param (\w+):.*(?:\n[ \t]+\S.*)*", re.MULTILINE)


def _params(cls: type) -> dict[str, str]:
    return {m[1]: m[0] for m in _PARAM.finditer(inspect.cleandoc(vars(cls).get("__doc__") or ""))}


class AnalyticsBaseOperator(BaseOperator):
    """Base class: holds ``analytics_conn_id`` and builds the hook on first use (no I/O at parse).

    A subclass documents its own parameters; the ``:param:`` lines of those its provider bases
    take (the connection, the destination, ...) are appended to its docstring from the base
    that documents them, so each text has one home and every operator's page lists them all.

    :param analytics_conn_id: id of the ``analytics`` connection (templated).
    """

    template_fields: Sequence[str] = ("analytics_conn_id",)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        documented = _params(cls)
        inherited: dict[str, str] = {}
        for base in cls.__mro__[1:]:
            if base.__module__.startswith("airflow_provider_analytics."):
                for name, text in _params(base).items():
                    inherited.setdefault(name, text)
        extra = [text for name, text in inherited.items() if name not in documented]
        if extra:  # a field list starts after a blank line, unless it continues the class's own
            doc = inspect.cleandoc(cls.__doc__ or "")
            cls.__doc__ = ("\n" if documented else "\n\n").join([doc, "\n".join(extra)])

    def __init__(self, *, analytics_conn_id: str = DEFAULT_CONN_ID, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.analytics_conn_id = analytics_conn_id

    def review_arguments(self, dry_run: bool, reviewed_preview: str | None) -> None:
        """A reviewed preview is applied; a dry run applies nothing: not both at once. The flag
        is kept as ``is_dry_run``: ``BaseOperator.dry_run()`` renders templates for the CLI."""
        if reviewed_preview is not None and dry_run:
            rules.fail("reviewed_preview", "applies a reviewed preview; a dry run applies nothing")
        self.is_dry_run = rules.boolean(dry_run, "dry_run")  # "false" is truthy
        self.reviewed_preview = reviewed_preview

    def reviewed_result(self, context: Context) -> Any:
        """The result of this run's preview task ``reviewed_preview`` (``None`` without one):
        the change a person reviewed (and approved, e.g. with Airflow's ``ApprovalOperator``)."""
        if self.reviewed_preview is None:
            return None
        reviewed = context["ti"].xcom_pull(task_ids=self.reviewed_preview)
        if reviewed is None:
            rules.fail(
                "reviewed_preview",
                f"task {self.reviewed_preview!r} left no result in this run: nothing was "
                "reviewed, so nothing is applied",
            )
        return reviewed

    @cached_property
    def hook(self) -> AnalyticsHook:
        from airflow_provider_analytics.hooks.analytics import AnalyticsHook

        return AnalyticsHook(analytics_conn_id=self.analytics_conn_id)
