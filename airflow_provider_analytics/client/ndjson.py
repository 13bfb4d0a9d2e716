"""Deprecated alias of a moved module, removed in 0.3.0 (the warning names the new home)."""

from __future__ import annotations

from airflow_provider_analytics._moved import moved_module

__getattr__ = moved_module(__name__, "airflow_provider_analytics.core.ndjson")
