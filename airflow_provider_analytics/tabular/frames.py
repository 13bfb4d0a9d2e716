"""Funnel and event analysis responses as tidy DataFrames for Parquet and warehouses.

The entry points the report operators use. Everything here is pure (no Airflow, no
HTTP): a decoded response goes in, an Arrow-backed :class:`pandas.DataFrame` comes out,
with the columns and types documented in ``docs/report_tables.md``.
"""

from __future__ import annotations

from airflow_provider_analytics.tabular.event_frame import event_frame, event_schema
from airflow_provider_analytics.tabular.funnel_frame import funnel_frame
from airflow_provider_analytics.tabular.schemas import EVENT_SCHEMA, FUNNEL_SCHEMA

__all__ = ["EVENT_SCHEMA", "FUNNEL_SCHEMA", "event_frame", "event_schema", "funnel_frame"]
