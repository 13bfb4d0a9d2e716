"""Funnel and event analysis routes (spec 4.16, 4.17).

The analytics engine validates the bodies and computes the answers from the event log;
these routes only hand it the state. It is imported on first use.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from analytics_emulator.http_common import (
    PROJECT,
    JsonObject,
    emulator_state,
    operation,
)

router = APIRouter()


def _context(request: Request) -> dict[str, Any]:
    state = emulator_state(request)
    return {
        "log": state.event_log(),
        "population": state.population,
        "cohorts": state.cohorts,
        "data_until": state.data_until,
    }


@router.post("/uba/api/funnels/analyze", dependencies=[operation("analyze_funnel", PROJECT)])
def analyze_funnel(request: Request, body: JsonObject) -> JSONResponse:
    from analytics_emulator import analytics

    return JSONResponse(analytics.analyze_funnel(body, **_context(request)))


@router.post("/uba/api/events/analyze", dependencies=[operation("analyze_events", PROJECT)])
def analyze_events(request: Request, body: JsonObject) -> JSONResponse:
    from analytics_emulator import analytics

    return JSONResponse(analytics.analyze_events(body, **_context(request)))
