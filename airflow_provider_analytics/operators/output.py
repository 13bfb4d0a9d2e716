"""What operators that write to object storage or Iceberg share: the destination, its Airflow
Asset (the URI before anything templated, unless ``outlets`` are given) and its lineage.

Asset events name the rendered object, the run's day and the rows' identity, with the day as
``partition_key`` when the run is partitioned (``docs/event_driven.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from airflow.sdk import Asset

from airflow_provider_analytics.core import rules
from airflow_provider_analytics.operators.base import AnalyticsBaseOperator
from airflow_provider_analytics.output.destination import (
    LineageTarget,
    iceberg_table_uri,
    uri_path,
)
from airflow_provider_analytics.output.roots import deployment_roots

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from airflow.sdk import Context

    from airflow_provider_analytics.core.identity import Identity
    from airflow_provider_analytics.operators.lineage import ColumnOrigin
    from airflow_provider_analytics.output.destination import Destination


def destination_asset(destination: str) -> Asset | None:
    """The Asset standing for every object a templated ``destination`` can render to.

    Split the way ``ObjectStoragePath`` splits it (the connection id is not the data's name)
    without building one, which at parse time would open a filesystem.

    :param destination: the operator's (unrendered) destination.
    """
    static = destination.split("{{", 1)[0]
    static = static[: static.rfind("/") + 1]  # nothing without a "/"
    if static.startswith("/"):
        static = f"file://{static}"
    try:
        parts = urlsplit(static)
    except ValueError:  # a broken authority, "s3://[bucket/": refused by name, at parse time
        rules.fail("destination", "must be an object URI or a prefix URI", destination)
    if not parts.scheme:
        return None
    # the path as written: urlsplit ends it at a "#" or "?", which an object's key may hold
    path = static.split("://", 1)[1].partition("/")[2] if "://" in static else parts.path
    host = parts.netloc.rpartition("@")[2]  # the connection id is not the data's name
    return _asset(f"{parts.scheme}://{host}/{uri_path(path.lstrip('/'))}", "destination")


def iceberg_asset(iceberg_conn_id: str, iceberg_table: str) -> Asset | None:
    """The Asset standing for an Iceberg table (none while the name is templated)."""
    if "{{" in iceberg_table or "{{" in iceberg_conn_id:
        return None
    uri = iceberg_table_uri(iceberg_conn_id, iceberg_table)
    return _asset(uri, "iceberg_table")


def _asset(uri: str, field: str) -> Asset:
    try:
        return Asset(uri=uri, name=uri)
    except ValueError as error:  # Airflow's rule for an Asset: a name of at most 1,500 characters
        rules.fail(field, f"must fit in an Airflow Asset's name ({error})", uri)


class AnalyticsOutputOperator(AnalyticsBaseOperator):
    """Base of operators that write one object, or one Iceberg table's day, per run.

    :param destination: object URI or a prefix ending in ``/`` (templated by the subclass).
    :param iceberg_table: instead of ``destination``: the Iceberg table ``namespace.table``
        whose day is replaced (needs the ``[iceberg]`` extra).
    :param iceberg_conn_id: the connection describing the Iceberg catalog.
    :param partition_outputs: whether the asset event carries the run's day as its
        ``partition_key``: ``None`` (default) when the run has one of its own, ``True`` always,
        ``False`` never (``docs/event_driven.md``).
    """

    def __init__(
        self,
        *,
        destination: str | None = None,
        iceberg_table: str | None = None,
        iceberg_conn_id: str = "iceberg_default",
        partition_outputs: bool | None = None,
        **kwargs: Any,
    ) -> None:
        if partition_outputs is not None:
            rules.boolean(partition_outputs, "partition_outputs")
        for field, value in (("destination", destination), ("iceberg_conn_id", iceberg_conn_id)):
            if value is not None:  # the Asset is read from it now: not text raised TypeError
                rules.string(value, field)
        if (destination is None) == (iceberg_table is None):
            rules.fail("destination", "give exactly one of destination and iceberg_table")
        if "outlets" not in kwargs:
            asset = (
                destination_asset(destination)
                if destination is not None
                else iceberg_asset(iceberg_conn_id, str(iceberg_table))
            )
            if asset is not None:
                kwargs["outlets"] = [asset]
        super().__init__(**kwargs)
        self.destination = destination or ""
        self.iceberg_table = iceberg_table
        self.writes_iceberg = iceberg_table is not None  # whatever either renders to
        self.iceberg_conn_id = iceberg_conn_id
        self.partition_outputs = partition_outputs
        self.written: dict[LineageTarget, Sequence[ColumnOrigin]] = {}

    def output_destination(
        self, identity: Identity, *, compression: str = "zstd", staging: str | None = None
    ) -> Destination:
        """Where this run writes (``destination`` or ``iceberg_table``), bound to the roots the
        deployment allows."""
        roots = deployment_roots(self.hook.client_config.allowed_destinations)
        if self.writes_iceberg:
            if not isinstance(self.iceberg_table, str):  # a native template: ["lake.t"], None
                rules.fail("iceberg_table", "must be text, namespace.table", self.iceberg_table)
            from airflow_provider_analytics.hooks.iceberg import IcebergCatalogHook
            from airflow_provider_analytics.output.iceberg_destination import IcebergDestination

            return IcebergDestination(
                IcebergCatalogHook(iceberg_conn_id=self.iceberg_conn_id).get_conn,
                self.iceberg_conn_id,
                self.iceberg_table,
                identity,
                staging_root=staging,
                allowed_roots=roots,
            )
        from airflow_provider_analytics.output.parquet_destination import ParquetDestination

        return ParquetDestination(
            self.destination, identity, allowed_roots=roots, compression=compression
        )

    def publish_output(
        self,
        context: Context,
        destination: Destination,
        days: Sequence[str],
        names: Sequence[str],
        columns: Mapping[str, Sequence[ColumnOrigin]] | None = None,
        **details: Any,
    ) -> None:
        """Record what was written: the run's main output and its day on the asset events,
        and every object or table written, with its columns' origins (by table name), for
        lineage. ``days`` end with the run's own (a report's look-back days come first)."""
        self.publish_lineage(destination, days, names, columns)
        day = days[-1]
        uri = destination.uri(day, names)
        partitioned = self.partition_outputs
        if partitioned is None:
            partitioned = getattr(context.get("dag_run"), "partition_key", None) is not None
        for outlet in self.outlets:
            if isinstance(outlet, Asset):
                event = context["outlet_events"][outlet]
                event.extra = {"uri": uri, "day": day, **details}
                if partitioned:
                    event.add_partitions(day)

    def publish_lineage(
        self,
        destination: Destination,
        days: Sequence[str],
        names: Sequence[str],
        columns: Mapping[str, Sequence[ColumnOrigin]] | None = None,
    ) -> None:
        """Record every object or table written on ``days`` for lineage, with its columns'
        origins (also for a look-back written in part, whose run then fails)."""
        from airflow_provider_analytics.operators.lineage import report_hook_lineage

        self.written = {
            target: (columns or {}).get(name, ())
            for day in days
            for name, target in zip(names, destination.lineage([day], names), strict=True)
        }
        report_hook_lineage(self.hook, self.lineage_source_target(), self.written)

    def lineage_input_name(self) -> str:
        return "analytics"

    def lineage_source_target(self) -> LineageTarget:
        """The platform's dataset the task reads (``cohort/<code>``, ``funnel_analysis``)."""
        base_url = self.hook.client_config.base_url.rstrip("/")
        return LineageTarget(base_url, self.lineage_input_name())

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """The platform's dataset in, every object or table written out, with column lineage."""
        from airflow_provider_analytics.operators.lineage import openlineage_datasets

        return openlineage_datasets(self.lineage_source_target(), self.written)
