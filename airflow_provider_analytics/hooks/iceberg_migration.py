"""``python -m airflow_provider_analytics.hooks.iceberg_migration --conn-id iceberg_default
analytics.cohort_users cohort_code=vip``: migrate an Iceberg table of the earlier layout with
the catalog of an Airflow connection (docs/howto/iceberg.md); the summary is the output's last
line, as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from airflow_provider_analytics.core.errors import AnalyticsError
from airflow_provider_analytics.core.identity import Identity
from airflow_provider_analytics.hooks.iceberg import IcebergCatalogHook

if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m airflow_provider_analytics.hooks.iceberg_migration",
        description="Give an earlier version's Iceberg table the identity column and partition "
        "that let many cohorts or reports share it.",
    )
    parser.add_argument("table", help="namespace.table")
    parser.add_argument(
        "identity", help="what its rows hold: cohort_code=<code> or report_key=<key>"
    )
    parser.add_argument("--conn-id", default="iceberg_default", help="the catalog's connection")
    parser.add_argument("--dry-run", action="store_true", help="change nothing; say what")
    arguments = parser.parse_args(argv)
    from airflow_provider_analytics.output.iceberg_migration import migrate_to_identity
    from airflow_provider_analytics.output.roots import deployment_roots

    try:  # the identity rule every operator applies, before the catalog is touched
        identity = Identity.parse(arguments.identity)
        if identity is None:
            parser.error("identity: must be cohort_code=<code> or report_key=<key>")
        catalog = IcebergCatalogHook(iceberg_conn_id=arguments.conn_id).get_conn()
        summary = migrate_to_identity(
            catalog,
            arguments.table,
            identity,
            dry_run=arguments.dry_run,
            allowed_roots=deployment_roots(),
        )
    except AnalyticsError as error:  # a bad connection too, not only a bad identity or table
        parser.exit(2, f"error: {error}\n")
    print(json.dumps(summary))  # one line: the last line of the output
    return 0


if __name__ == "__main__":
    sys.exit(main())
