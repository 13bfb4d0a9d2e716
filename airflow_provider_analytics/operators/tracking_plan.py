"""TrackingPlanSyncOperator: the platform's tracking plan kept in line with a file in the repo."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.core import rules
from airflow_provider_analytics.operators.base import AnalyticsBaseOperator

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow.sdk import Context


class TrackingPlanSyncOperator(AnalyticsBaseOperator):
    """Add and modify user properties, events and event properties so the platform's plan
    matches a YAML/JSON plan file; platform items the file does not declare are left alone.
    ``docs/operators/tracking_plan_sync.md`` gives the rules (what is added, modified, skipped
    or a conflict) and the DAG that has a person approve the change first.

    Returns ``{"added": [...], "modified": [...], "skipped": n, "conflicts": [...],
    "untracked": {...}, "dry_run": bool, "live_digest": str}``; each listed change names its
    target, ids and the fields that change (old and new). A preview (``dry_run``) also returns
    ``review``: the difference as Markdown, for the body of an ``ApprovalOperator``.

    :param plan: path of the plan file (templated; relative to the DAG file's folder), or the
        plan as a dict.
    :param dry_run: only compare; return what would change (and its ``review``) without
        writing.
    :param apply_despite_conflicts: apply everything else when there are conflicts; the task
        succeeds and reports them in its result and a warning.
    :param reviewed_preview: the task id of this run's preview (``dry_run=True``) whose result a
        person approved. The plan is read again and nothing is sent unless the difference is
        exactly the reviewed one, from the same platform records: a plan edited on the platform
        or a changed file since the preview fails the task, naming what changed.
    """

    template_fields: Sequence[str] = ("analytics_conn_id", "plan")
    ui_color = "#e8f0d8"

    def __init__(
        self,
        *,
        plan: str | os.PathLike[str] | Mapping[str, Any],
        dry_run: bool = False,
        apply_despite_conflicts: bool = False,
        reviewed_preview: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.plan = os.fspath(plan) if isinstance(plan, os.PathLike) else plan
        self.apply_despite_conflicts = rules.boolean(
            apply_despite_conflicts, "apply_despite_conflicts"
        )
        self.review_arguments(dry_run, reviewed_preview)

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow_provider_analytics.plan.file import load_tracking_plan
        from airflow_provider_analytics.plan.sync import sync_tracking_plan

        reviewed = self.reviewed_result(context)
        # a relative plan path starts at the DAG file's folder
        dag = context.get("dag") or (self.dag if self.has_dag() else None)
        fileloc = getattr(dag, "fileloc", None)
        base_dir = os.path.dirname(fileloc) if fileloc else None
        if not isinstance(self.plan, Mapping):  # a path: text (a list or a NUL raised TypeError)
            rules.string(self.plan, "plan")
        desired = load_tracking_plan(self.plan, base_dir=base_dir)
        result = sync_tracking_plan(
            self.hook.get_conn(),
            desired,
            dry_run=self.is_dry_run,
            apply_despite_conflicts=self.apply_despite_conflicts,
            reviewed=reviewed,
        )
        summary = result.as_dict()
        if self.is_dry_run:
            summary["review"] = result.review()
        if summary["conflicts"]:
            self.log.warning(
                "%d conflict(s) left as they are; see 'conflicts' in the result",
                len(summary["conflicts"]),
            )
        return summary
