"""The emulator's sizes and dates as the docs state them, read from the emulator's own code.

Pages say them through MyST substitutions (``{{ emulator_cohort_range }}`` and the others of
:func:`substitutions`), set in ``conf.py``, so every page states what the emulator serves and
no page can drift from another. The README, which GitHub renders without substitutions, is
compared with the same values by ``tests/docs/test_emulator_facts.py``.
"""

from __future__ import annotations

import datetime as dt

from analytics_emulator.catalog import (
    COHORTS,
    EVENT_LOG_DAYS,
    EVENT_LOG_START,
    LARGE_COHORTS,
    TAG_CODES,
)
from analytics_emulator.cohort_settings import DOCUMENTED_CUT_ROWS
from analytics_emulator.export import DEFAULT_CACHE_ROWS
from analytics_emulator.population import BLOCK_ROWS


def _count(number: int) -> str:
    return f"{number:,}"


def event_log_span() -> tuple[str, str]:
    """The first and last day of the synthetic event log (both included)."""
    first = dt.date.fromisoformat(EVENT_LOG_START)
    return first.isoformat(), (first + dt.timedelta(days=EVENT_LOG_DAYS - 1)).isoformat()


def cohort_range() -> str:
    """``0 to 100,000,000``: the smallest and the largest default cohort."""
    return f"{_count(min(COHORTS.values()))} to {_count(max(COHORTS.values()))}"


def cohort_list() -> str:
    """Every default cohort with its size, the ones behind the proxy cut said apart."""
    served = [code for code in COHORTS if code not in LARGE_COHORTS]
    named = ", ".join(f"`{code}` ({_count(COHORTS[code])})" for code in served)
    cut = " and ".join(f"`{code}` ({_count(COHORTS[code])})" for code in LARGE_COHORTS)
    return (
        f"{named}, and, behind the documented proxy cut at {_count(DOCUMENTED_CUT_ROWS)} rows, "
        f"{cut}"
    )


def substitutions() -> dict[str, str]:
    """The MyST substitutions the pages use."""
    first, last = event_log_span()
    return {
        "emulator_cohort_range": cohort_range(),
        "emulator_cohorts": cohort_list(),
        "emulator_proxy_cut_rows": _count(DOCUMENTED_CUT_ROWS),
        "emulator_event_log": f"{first} to {last}",
        "emulator_tags": ", ".join(f"`{code}`" for code in TAG_CODES),
        "emulator_large_cohorts": " and ".join(
            f"`{code}` ({_count(COHORTS[code])})" for code in LARGE_COHORTS
        ),
        "emulator_block_rows": _count(BLOCK_ROWS),
        "emulator_cache_rows": _count(DEFAULT_CACHE_ROWS),
    }
