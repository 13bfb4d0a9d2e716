"""The hostname Airflow records for a stack's Celery worker: its name, so that the task
instances show which of the two workers on this machine ran them (``[core] hostname_callable``).
"""

from __future__ import annotations

import os
import socket


def worker_name() -> str:
    """``STACK_WORKER_NAME`` when set (a stack's worker), else the machine's FQDN."""
    return os.environ.get("STACK_WORKER_NAME") or socket.getfqdn()
