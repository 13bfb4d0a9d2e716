"""Cohort user routes: the paged listing (spec 4.12) and the streamed export (4.13).

Paging (platform 4.6+): without ``page`` the first ``min(limit, count)`` users come back
(``limit`` defaults to 1000) as page 1. With ``page``, ``pageSize`` is required, ``limit``
defaults to the cohort's size, and page ``p`` holds users ``(p-1)*pageSize`` up to
``min(p*pageSize, limit)``. ``pageSize <= limit`` is checked when ``limit`` is sent; a
default limit never refuses a page size, so paging a tiny cohort with a large page works.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from analytics_emulator import catalog
from analytics_emulator import validation as v
from analytics_emulator.errors import BadRequest
from analytics_emulator.export import ExportResponse, ExportSource
from analytics_emulator.http_common import (
    EXPORT_FAULT,
    PROJECT,
    JsonObject,
    emulator_state,
    operation,
)

if TYPE_CHECKING:
    from analytics_emulator.state import EmulatorState

router = APIRouter()
PAGED_DEFAULT_LIMIT: Final = 1000


@dataclass(frozen=True)
class CohortRequest:
    """The fields 4.12 and 4.13 share, validated against the state."""

    count: int
    properties: tuple[str, ...]
    limit: int | None


def parse_cohort_request(body: dict[str, Any], state: EmulatorState) -> CohortRequest:
    """``cohortCode`` must be a configured cohort; ``properties`` (default: the visible plan
    items) may name user properties of the plan and tag codes."""
    code = v.string(v.required(body, "cohortCode"), "cohortCode")
    if code not in state.cohorts:
        raise BadRequest(f"cohort {code!r} does not exist", ["cohortCode"])
    limit = v.optional_positive_int(body, "limit")
    raw = body.get("properties")
    properties = v.array(raw, "properties") if raw is not None else []
    for index, prop in enumerate(properties):
        param = v.join_path("properties", index)
        if not isinstance(prop, str) or not (
            prop in catalog.TAG_CODES or state.plan.has_user_property(prop)
        ):
            raise BadRequest(f"{param} is not a user property or tag code", [param])
    chosen = tuple(dict.fromkeys(properties)) or tuple(catalog.default_user_property_ids())
    return CohortRequest(state.cohorts[code], chosen, limit)


@router.post("/uba/api/cohort/users", dependencies=[operation("get_cohort_users", PROJECT)])
def get_cohort_users(request: Request, body: JsonObject) -> JSONResponse:
    state = emulator_state(request)
    cohort = parse_cohort_request(body, state)
    page = v.optional_positive_int(body, "page")
    if page is None:
        start, stop, page = 0, min(cohort.limit or PAGED_DEFAULT_LIMIT, cohort.count), 1
    else:
        page_size = v.positive_int(v.required(body, "pageSize"), "pageSize")
        if cohort.limit is not None and page_size > cohort.limit:
            raise BadRequest("pageSize must not exceed limit", ["pageSize"])
        limit = min(cohort.count if cohort.limit is None else cohort.limit, cohort.count)
        start = min((page - 1) * page_size, limit)
        stop = min(page * page_size, limit)
    users = state.population.records(
        start, stop, cohort.properties, masked=state.masked_properties()
    )
    return JSONResponse({"count": cohort.count, "page": page, "size": len(users), "users": users})


@router.post(
    "/uba/api/cohort/users/export", dependencies=[operation("export_cohort_users", PROJECT)]
)
def export_cohort_users(request: Request, body: JsonObject) -> ExportResponse:
    state = emulator_state(request)
    cohort = parse_cohort_request(body, state)
    rows = cohort.count if cohort.limit is None else min(cohort.limit, cohort.count)
    source = ExportSource(
        population=state.population,
        cache=state.export_blocks,
        properties=cohort.properties,
        masked=state.masked_properties(),
        rows=rows,
    )
    fault = getattr(request.state, EXPORT_FAULT, None)
    return ExportResponse(source, fault, state.connections)
