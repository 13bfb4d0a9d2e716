"""Where a run's output goes: Parquet objects in object storage, or Iceberg tables.

Both sit behind one interface (:class:`~airflow_provider_analytics.destinations.base.
Destination`) that the jobs receive: an operator renders its arguments, builds the destination
(:func:`~airflow_provider_analytics.destinations.build.destination_for`), calls one job and
returns its summary. A destination knows the identity of what it holds (a cohort, a report),
checks every place it will write before the first request, and replaces exactly the run's own
(identity, day).
"""
