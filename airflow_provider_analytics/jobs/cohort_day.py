"""A cohort's day into a destination: the export job, published as the destination does it.

The earlier days' number types are read from the destination (a Parquet prefix's newest earlier
day, an Iceberg table's columns), the export writes and verifies its Parquet file where the
destination says, and the destination publishes it (in place for object storage, one commit
for Iceberg). Nothing is published when the export fails.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.destinations.base import COHORT_FILE
from airflow_provider_analytics.jobs.cohort_export import export_cohort_to_parquet

if TYPE_CHECKING:
    from airflow_provider_analytics.client import AnalyticsClient
    from airflow_provider_analytics.client.validation import CohortQuery
    from airflow_provider_analytics.destinations.base import Destination


def export_cohort_day(
    client: AnalyticsClient,
    query: CohortQuery,
    destination: Destination,
    day: str,
    **export: Any,
) -> dict[str, Any]:
    """Export ``query``'s cohort as ``day``'s rows of ``destination``; return the XCom.

    :param export: the settings of
        :func:`~airflow_provider_analytics.jobs.cohort_export.export_cohort_to_parquet`
        (``timezone``, ``schema_overrides``, ``column_names``, ``settings``).
    :return: what the export wrote, ``uri`` naming the published object or table, and what
        the publication did (``iceberg``: the commit).
    """
    destination.check([day], [COHORT_FILE])
    earlier = destination.earlier_number_types(day)
    with destination.cohort_file(day) as target:
        result = export_cohort_to_parquet(
            client,
            query,
            target.path,
            earlier_types=earlier,
            file_metadata=target.metadata,
            **export,
        )
    return {**result.as_dict(), "uri": target.uri, **target.published}
