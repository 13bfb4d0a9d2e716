"""A cohort export spread over workers: plan the shards, read them as mapped tasks (each retried
on its own, a shard already read not read again), then check the promise and publish the day
once. The three tasks take the same export arguments; only the publish task declares the
destination's Asset. ``docs/operators/cohort_shards.md`` shows the DAG and the guarantees.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.core.identity import COHORT_FILE
from airflow_provider_analytics.operators.cohort_export import _CohortOperator

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow.sdk import Context

    from airflow_provider_analytics.client.validation import CohortQuery
    from airflow_provider_analytics.output.destination import Destination


class _CohortShardsOperator(_CohortOperator):
    """The export arguments and checks the three steps share."""

    declares_asset = False

    def __init__(self, **kwargs: Any) -> None:
        if not self.declares_asset:
            kwargs.setdefault("outlets", [])
        super().__init__(**kwargs)

    def _run(self, context: Context) -> tuple[Any, CohortQuery, Destination, str, dict[str, Any]]:
        """Client, request, destination, day and the export's settings, all checked."""
        from airflow_provider_analytics.core import rules
        from airflow_provider_analytics.export.shards import CONSISTENCY, check_id_property

        query, destination, day = self.day_target(context)
        check_id_property(self.id_property, query.properties)
        rules.one_of(self.consistency, "consistency", CONSISTENCY)
        destination.check([day], [COHORT_FILE])
        settings = {
            "timezone": self.export_timezone,
            "schema_overrides": self.schema_overrides,
            "column_names": self.column_names,
            "settings": self.settings,
            "destination_schema": destination.held_schema(day),
        }
        return self.hook.get_conn(), query, destination, day, settings


class CohortShardPlanOperator(_CohortShardsOperator):
    """Plan a cohort's shards (spec 4.12 pages) and record the plan (an earlier try's is kept
    when this try makes the same one); returns the shard numbers, for
    ``CohortShardReadOperator.partial(...).expand(shard_index=plan.output)``.
    """

    def execute(self, context: Context) -> list[int]:
        from airflow_provider_analytics.export.cohort_day import start_shards
        from airflow_provider_analytics.export.stream import prepare_export

        client, query, destination, day, settings = self._run(context)
        prepared = prepare_export(client, query, **settings)
        plan, _ = start_shards(
            client,
            prepared,
            destination,
            day,
            self.page_size,
            self.shard_rows,
            id_property=self.id_property,
        )
        return [shard.index for shard in plan.shards]


class CohortShardReadOperator(_CohortShardsOperator):
    """Read one shard of the recorded plan into its part (skipped when an earlier try did).

    :param shard_index: the shard (from the plan task's output, templated).
    """

    template_fields: Sequence[str] = (*_CohortShardsOperator.template_fields, "shard_index")

    def __init__(self, *, shard_index: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.shard_index = shard_index

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow_provider_analytics.core import rules
        from airflow_provider_analytics.export.cohort_day import shard_reader
        from airflow_provider_analytics.export.shards import finished, read_shards
        from airflow_provider_analytics.operators.lineage import report_hook_lineage

        client, query, destination, day, settings = self._run(context)
        reader = shard_reader(client, query, destination, day, self.id_property, **settings)
        shards = reader.plan.shards
        index = rules.integer(self.shard_index, "shard_index", minimum=0, maximum=len(shards) - 1)
        shard = shards[index]
        if finished(reader.staging, reader.plan, shard):
            self.log.info("shard %d of cohort %s was read already", index, self.cohort_code)
            return {"shard": index, "rows": shard.rows, "read": False}
        # as the one-task export reads them: Arrow's system allocator, the heap trimmed after
        read = read_shards(reader, [shard])
        report_hook_lineage(self.hook, self.lineage_source_target(), {})  # a part is staging
        return {"shard": index, "rows": read[index], "read": True}


class CohortShardPublishOperator(_CohortShardsOperator):
    """Check every shard of the recorded plan and publish the day at once (one Parquet object
    replaced atomically, or one Iceberg commit); declares the destination's Asset.
    """

    declares_asset = True

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow_provider_analytics.export.cohort_day import publish_shards, shard_reader

        client, query, destination, day, settings = self._run(context)
        # the recorded plan, once this step's request makes it, and its columns (for lineage)
        reader = shard_reader(client, query, destination, day, self.id_property, **settings)
        plan = reader.plan
        published = publish_shards(client, plan, destination, day, consistency=self.consistency)
        summary = {**published, **reader.schema.described}
        return self.publish_day(context, destination, day, plan.cohort_code, summary)
