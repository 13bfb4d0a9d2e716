"""The emulator's analytics engine: funnel analysis (spec 4.16) and event analysis (4.17).

Both compute their numbers from the event log, so a wrong number anywhere between here and
a report table shows up in tests. Semantics are documented in analysis_funnel and
analysis_events; request checks in analysis_validation, analysis_filters and
analysis_expressions. Bad input raises :class:`errors.BadRequest` and nothing else.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from analytics_emulator import catalog
from analytics_emulator.analysis_events import compute_events, parse_events
from analytics_emulator.analysis_funnel import compute_funnel, parse_funnel
from analytics_emulator.analysis_scope import visible_scope
from analytics_emulator.analysis_validation import require_body

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Callable, Mapping

    from analytics_emulator.analysis_scope import Population
    from analytics_emulator.eventlog import EventLog


def report_update_time() -> str:
    """Now on the project's clock, written ``yyyy-MM-dd HH:mm:ss``."""
    return datetime.now(ZoneInfo(catalog.PROJECT_TIMEZONE)).strftime("%Y-%m-%d %H:%M:%S")


def _answer(
    parse: Callable[[Mapping[str, Any], Mapping[str, int]], Any],
    compute: Callable[[Any, Any], dict[str, Any]],
    request: object,
    *,
    log: EventLog,
    population: Population,
    cohorts: Mapping[str, int],
    data_until: dt.date | None,
) -> dict[str, Any]:
    """Check a request, find the events it can see, compute, stamp the update time."""
    query = parse(require_body(request), cohorts)
    scope = visible_scope(
        log,
        dates=query.dates,
        user_limit=query.user_limit,
        sampling=query.sampling,
        data_until=data_until,
        population=population,
        expressions=query.property_expressions(),
    )
    return {**compute(query, scope), "reportUpdateTime": report_update_time()}


def analyze_funnel(
    request: object,
    *,
    log: EventLog,
    population: Population,
    cohorts: Mapping[str, int],
    data_until: dt.date | None,
) -> dict[str, Any]:
    """Answer a funnel analysis request.

    :param request: the JSON body (spec 4.16).
    :param log: the event log to analyse.
    :param population: source of user property values (``records(start, stop, properties)``).
    :param cohorts: cohort code -> size; a cohort of size N holds users 0..N-1.
    :param data_until: last day whose events are visible; None when all are.
    :raises BadRequest: for an invalid body, naming the offending parameters.
    """
    return _answer(
        parse_funnel,
        compute_funnel,
        request,
        log=log,
        population=population,
        cohorts=cohorts,
        data_until=data_until,
    )


def analyze_events(
    request: object,
    *,
    log: EventLog,
    population: Population,
    cohorts: Mapping[str, int],
    data_until: dt.date | None,
) -> dict[str, Any]:
    """Answer an event analysis request; parameters as for :func:`analyze_funnel` (spec 4.17).

    :raises BadRequest: for an invalid body, naming the offending parameters.
    """
    return _answer(
        parse_events,
        compute_events,
        request,
        log=log,
        population=population,
        cohorts=cohorts,
        data_until=data_until,
    )
