"""Lineage to the column: which platform property, or which part of an analysis request, each
written column holds, reported to OpenLineage and to Airflow's hook lineage. A property the
tracking plan masks is personal data: its column is marked masked (transformation ``masking``,
type ``MASKED``) and tagged ``personal_data=masked`` on both datasets, so an audit finds every
place it went. OpenLineage is imported only when its events are built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from airflow_provider_analytics.output.destination import iceberg_table_uri, uri_path

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from airflow_provider_analytics.output.destination import LineageTarget
    from airflow_provider_analytics.reports.job import ReportKind

PERSONAL_DATA: Final = ("personal_data", "masked")
TAG_SOURCE: Final = "analytics tracking plan"


@dataclass(frozen=True)
class ColumnOrigin:
    """One written column and the platform's fields it is made from: a property id (``$city``),
    or a report request's steps, measures (``TOTAL_COUNT(event.purchase)``) or split fields;
    ``how`` is OpenLineage's subtype, ``IDENTITY`` or ``AGGREGATION`` (a report's figures)."""

    column: str
    fields: tuple[str, ...]
    masked: bool = False
    how: str = "IDENTITY"


def export_origins(summary: Mapping[str, Any]) -> tuple[ColumnOrigin, ...]:
    """Each column of a cohort export, from its summary's ``column_ids`` and ``column_origins``."""
    origins = summary.get("column_origins") or {}
    return tuple(
        ColumnOrigin(column, (property_id,), origins.get(column) == "masked")
        for column, property_id in (summary.get("column_ids") or {}).items()
    )


_STEP_COLUMNS: Final = (
    "step_number",
    "step_expression",
    "step_event",
    "converted_users",
    "conversion_rate",
    "completion_rate",
    "median_seconds_to_next",
)
"""The funnel table's columns computed from the request's steps (named, not by position: a
column added to the schema must not shift what they mean)."""
_MEASURE_COLUMNS: Final = (
    "measure_index",
    "measure_label",
    "measure_expression",
    "measure_aggregator",
    "count",
    "value",
)
"""The event table's columns computed from the request's measures."""


def report_origins(kind: ReportKind, request: Mapping[str, Any]) -> dict[str, list[ColumnOrigin]]:
    """Each report table's computed columns (by table name) and the request's parts they
    come from; the columns that only place a row (dates, report times) are left out."""
    from airflow_provider_analytics.client.analysis_requests import FunnelRequest
    from airflow_provider_analytics.reports import schemas

    model = kind.validate(request)
    sources: dict[str, tuple[str, ...]] = {}
    if isinstance(model, FunnelRequest):
        steps = tuple(dict.fromkeys(step.expression for step in model.steps))
        sources.update(dict.fromkeys(_STEP_COLUMNS, steps))
        if model.by_field is not None:
            sources.update(dict.fromkeys(("by_field", "by_value"), (model.by_field.expression,)))
    else:
        measures = tuple(dict.fromkeys(f"{m.aggregator}({m.expression})" for m in model.measures))
        sources.update(dict.fromkeys(_MEASURE_COLUMNS, measures))
        split = model.by_fields or ()
        planned = schemas.plan_by_columns(
            [f.expression for f in split], [bool(f.buckets) for f in split]
        )
        for by_column in planned:
            sources.update(dict.fromkeys(by_column.names, (by_column.expression,)))
    flattened = kind.schema(dict(request))
    return {
        grain.name: [
            ColumnOrigin(name, sources[name], how="AGGREGATION")
            for name in grain.schema(flattened).names
            if name in sources
        ]
        for grain in kind.grains
    }


def target_uri(target: LineageTarget) -> str:
    """The Asset URI of a written object or table."""
    if target.namespace.startswith("iceberg://"):
        return iceberg_table_uri(target.namespace.removeprefix("iceberg://"), target.name)
    if "://" not in target.namespace:
        return f"{target.namespace}:///{uri_path(target.name.lstrip('/'))}"
    return f"{target.namespace.rstrip('/')}/{uri_path(target.name)}"


def report_hook_lineage(
    hook: Any,
    source: LineageTarget,
    written: Mapping[LineageTarget, Sequence[ColumnOrigin]],
) -> None:
    """Tell Airflow's hook lineage collector what the task read from the platform (through
    ``hook``) and every object or table it wrote, each asset's ``extra`` naming its columns'
    fields and the masked ones (``personal_data``)."""
    from airflow.sdk.lineage import get_hook_lineage_collector

    collector = get_hook_lineage_collector()
    masked: list[Any] = sorted(
        {f for cols in written.values() for c in cols if c.masked for f in c.fields}
    )
    collector.add_input_asset(
        context=hook,
        uri=target_uri(source),
        asset_extra={"personal_data": masked} if masked else None,
    )
    for target, columns in written.items():
        extra: dict[str, Any] = {}
        if columns:
            extra["columns"] = {c.column: list(c.fields) for c in columns}
        if personal := [c.column for c in columns if c.masked]:
            extra["personal_data"] = personal
        collector.add_output_asset(context=hook, uri=target_uri(target), asset_extra=extra or None)


def openlineage_datasets(
    source: LineageTarget, written: Mapping[LineageTarget, Sequence[ColumnOrigin]]
) -> Any:
    """The task's OpenLineage input (the platform's dataset, its masked fields tagged) and
    outputs, each with the column lineage facet from the platform's fields to its columns."""
    from airflow.providers.common.compat.openlineage.facet import (
        ColumnLineageDatasetFacet,
        Dataset,
        Fields,
        InputField,
    )
    from airflow.providers.openlineage.extractors import OperatorLineage
    from openlineage.client.generated.column_lineage_dataset import Transformation
    from openlineage.client.generated.tags_dataset import TagsDatasetFacet, TagsDatasetFacetFields

    def tags(fields: Sequence[str]) -> dict[str, Any]:
        marked = [TagsDatasetFacetFields(*PERSONAL_DATA, TAG_SOURCE, field) for field in fields]
        return {"tags": TagsDatasetFacet(tags=marked)} if marked else {}

    def lineage_of(column: ColumnOrigin) -> Fields:
        change = Transformation(type="DIRECT", subtype=column.how, masking=column.masked)
        inputs = [
            InputField(source.namespace, source.name, field, transformations=[change])
            for field in column.fields
        ]
        # the facet's older summary knows IDENTITY and MASKED only
        kind = "MASKED" if column.masked else "IDENTITY" if column.how == "IDENTITY" else None
        return Fields(inputFields=inputs, transformationType=kind)

    outputs = []
    for target, columns in written.items():
        facets: dict[str, Any] = tags([c.column for c in columns if c.masked])
        if columns:
            lineage = {c.column: lineage_of(c) for c in columns}
            facets["columnLineage"] = ColumnLineageDatasetFacet(fields=lineage)
        outputs.append(Dataset(namespace=target.namespace, name=target.name, facets=facets))
    masked = {f: None for cols in written.values() for c in cols if c.masked for f in c.fields}
    inputs = [Dataset(namespace=source.namespace, name=source.name, facets=tags(list(masked)))]
    return OperatorLineage(inputs=inputs, outputs=outputs)
