"""Where the example pipelines write (one root and one prefix per table), and the zone the
platform writes its times in.

The root comes from ANALYTICS_OUTPUT_ROOT: by default ``analytics-output/`` under
AIRFLOW_HOME on local disk, or object storage such as
``s3://aws_default@my-bucket/analytics/`` (the connection id before the ``@``).
Each prefix ends in ``/``, so the operators add the Hive-style partitions (``dt=<day>/``, the
first day the run covers) and declare the prefix as their Asset; a downstream pipeline is
scheduled on that same Asset.
"""

from __future__ import annotations

import os

_LOCAL_DEFAULT = os.path.join(os.environ.get("AIRFLOW_HOME", os.path.expanduser("~/airflow")), "")
OUTPUT_ROOT = os.environ.get("ANALYTICS_OUTPUT_ROOT", f"file://{_LOCAL_DEFAULT}analytics-output/")

COHORT_USERS = f"{OUTPUT_ROOT}cohort_users/"
LARGE_COHORT_USERS = f"{OUTPUT_ROOT}large_cohort_users/"
CHECKOUT_FUNNEL = f"{OUTPUT_ROOT}checkout_funnel/"
DAILY_EVENTS = f"{OUTPUT_ROOT}daily_events/"
EVENT_DRIVEN_USERS = f"{OUTPUT_ROOT}event_driven/cohort_users/"

READY_POLL_SECONDS = float(os.environ.get("ANALYTICS_READY_POLL_SECONDS", "300"))
"""How often the event-driven examples ask the platform whether a day has landed (a stack
under test asks every few seconds)."""

PROJECT_TIMEZONE = "Asia/Shanghai"
"""The IANA zone the platform writes its datetimes in (the emulator's project is in Shanghai).
Given to every operator that reads datetimes; without it (and without the connection extra
``timezone``) they are read as UTC, with a warning, and a platform 8 hours ahead would put
every datetime 8 hours off."""
