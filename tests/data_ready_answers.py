"""The event-analysis answer a data-ready check reads, for the tests of the check and of the
sensor built on it."""

from __future__ import annotations

from typing import Any


def counts_response(series: list[str], values: list[float | None]) -> dict[str, Any]:
    """The platform's answer of one measure (``$Anything``) counted per day of ``series``."""
    return {
        "measures": ["event.$Anything"],
        "byFields": [],
        "series": series,
        "rows": [{"byValue": [], "values": [values], "sum": [sum(v or 0 for v in values)]}],
        "numRows": 1,
    }
