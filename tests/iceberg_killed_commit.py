"""A writer killed in the middle of its commit, for the maintenance tests.

Run as ``python -m tests.iceberg_killed_commit IDENTIFIER DAY ROWS``: opens the catalog of the
``iceberg_default`` connection (from ``AIRFLOW_CONN_ICEBERG_DEFAULT``, as the hook would), writes
``ROWS`` rows for ``DAY`` into several data files, and when the commit is about to reach the
catalog (its data files, manifests and manifest list written) kills itself with SIGKILL, the way
the OOM killer or a lost worker ends a task: no ``finally`` runs, nothing is cleaned up.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import sys
from typing import Any

import pyarrow as pa
from pyiceberg.table import Table

from airflow_provider_analytics.core.identity import Identity
from airflow_provider_analytics.output.iceberg import (
    IcebergDayWriter,
    catalog_properties,
    open_catalog,
)


def _killed(*_: Any, **__: Any) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def main(identifier: str, day: str, rows: int) -> None:
    connection = json.loads(os.environ["AIRFLOW_CONN_ICEBERG_DEFAULT"])
    extra = connection.get("extra") or {}
    properties = catalog_properties(
        host=connection.get("host"),
        port=connection.get("port"),
        schema=connection.get("schema"),
        login=connection.get("login"),
        password=connection.get("password"),
        extra=extra,
    )
    catalog = open_catalog(extra.get("catalog_name") or "iceberg_default", properties)
    data = pa.table({"user_id": pa.array(range(rows), pa.int64())})
    writer = IcebergDayWriter(
        catalog,
        identifier,
        dt.date.fromisoformat(day),
        identity=Identity("cohort_code", "vip"),
        target_file_bytes=1,
    )
    writer.open(data.schema)
    for batch in data.to_batches(max_chunksize=max(rows // 3, 1)):
        writer.write(batch)
    Table._do_commit = _killed  # type: ignore[method-assign]  # the catalog commit never happens
    writer.commit()
    sys.exit("the commit was not killed")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
