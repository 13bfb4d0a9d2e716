"""What operators that write to object storage share: the destination, its Airflow Asset and
its lineage.

Each such operator declares, unless given ``outlets``, one Asset for its destination: the part
of the URI before anything templated (``.../cohort_users/`` for
``.../cohort_users/cohort=vip/dt={{ ds }}/users.parquet``), so a downstream DAG can be scheduled
on it. At run time the asset event carries the rendered object's URI and row count, and, where
the OpenLineage provider is installed, the task reports the platform as input and the object
as output.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from airflow.sdk import Asset

from airflow_provider_analytics.operators.base import AnalyticsBaseOperator

if TYPE_CHECKING:
    from airflow.sdk import Context, ObjectStoragePath

_CONN_IN_AUTHORITY = re.compile(r"^(?P<scheme>[a-z][a-z0-9+.-]*)://[^@/]+@")


def without_conn_id(uri: str) -> str:
    """``s3://conn_id@bucket/key`` -> ``s3://bucket/key``: the connection is not the data's name."""
    return _CONN_IN_AUTHORITY.sub(r"\g<scheme>://", uri)


def destination_asset(destination: str) -> Asset | None:
    """The Asset standing for every object a templated ``destination`` can render to.

    :param destination: the operator's (unrendered) destination.
    """
    static = destination.split("{{", 1)[0]
    if "/" not in static:
        return None
    static = static[: static.rfind("/") + 1]
    if static.startswith("/"):
        static = f"file://{static}"
    if "://" not in static:
        return None
    uri = without_conn_id(static)
    return Asset(uri=uri, name=uri)


class AnalyticsOutputOperator(AnalyticsBaseOperator):
    """Base of operators that write one object per run to object storage.

    :param destination: object URI or a prefix ending in ``/`` (templated by the subclass).
    """

    lineage_source = "analytics"
    """What the input dataset is called in lineage; subclasses name their source."""

    def __init__(self, *, destination: str, **kwargs: Any) -> None:
        if "outlets" not in kwargs and (asset := destination_asset(destination)) is not None:
            kwargs["outlets"] = [asset]
        super().__init__(**kwargs)
        self.destination = destination
        self.written_uri: str | None = None

    def publish_output(self, context: Context, path: ObjectStoragePath, **details: Any) -> None:
        """Record what was written on this task's asset events (and for lineage)."""
        self.written_uri = str(path)
        for outlet in self.outlets:
            if isinstance(outlet, Asset):
                context["outlet_events"][outlet].extra = {"uri": self.written_uri, **details}

    def lineage_input_name(self) -> str:
        return self.lineage_source

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """Input: the platform's analysis or cohort; output: the object written."""
        from airflow.providers.common.compat.openlineage.facet import Dataset
        from airflow.providers.openlineage.extractors import OperatorLineage

        base_url = self.hook.client_config.base_url.rstrip("/")
        inputs = [Dataset(namespace=base_url, name=self.lineage_input_name())]
        outputs = []
        if self.written_uri:
            scheme, _, rest = without_conn_id(self.written_uri).partition("://")
            if scheme == "file":
                outputs.append(Dataset(namespace="file", name=rest))
            else:
                bucket, _, key = rest.partition("/")
                outputs.append(Dataset(namespace=f"{scheme}://{bucket}", name=key))
        return OperatorLineage(inputs=inputs, outputs=outputs)
