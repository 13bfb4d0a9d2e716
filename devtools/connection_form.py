"""Write ``airflow_provider_analytics/connection_form.json`` from the settings' declaration.

The provider's metadata (``provider_info.CONNECTION_FIELDS``) reads the connection form from
that file, so that Airflow does not build the settings' model in every process it starts;
``tests/unit/package/test_provider_info.py`` fails when the file and the declaration differ.

Usage: python -m devtools.connection_form
"""

from __future__ import annotations

import json
from pathlib import Path

from airflow_provider_analytics.client.config import connection_form_fields

FORM = Path(__file__).resolve().parents[1] / "airflow_provider_analytics" / "connection_form.json"


def main() -> None:
    text = json.dumps(connection_form_fields(), indent=2, ensure_ascii=False) + "\n"
    FORM.write_text(text, encoding="utf-8")
    print(f"wrote {FORM.name}")


if __name__ == "__main__":
    main()
