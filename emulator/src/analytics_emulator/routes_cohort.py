"""Cohort user routes: the paged listing (spec 4.12) and the streamed export (4.13).

Paging (platform 4.6+): without ``page`` the first ``min(limit, count)`` users come back
(``limit`` defaults to 1000) as page 1. With ``page``, ``pageSize`` is required, ``limit``
defaults to the cohort's size, and page ``p`` holds users ``(p-1)*pageSize`` up to
``min(p*pageSize, limit)``. ``pageSize <= limit`` is checked when ``limit`` is sent; a
default limit never refuses a page size, so paging a tiny cohort with a large page works.
``pageSize`` is at most the configured maximum (the documented 10,000 by default).

Both routes read the cohort's members the same way (:class:`.cohort_book.CohortCall`):
position ``p`` holds user ``first_user + p``. A page's users are the very NDJSON lines the
stream sends for the same positions, joined into a JSON array, so page ``k`` of size ``s`` and
lines ``(k-1)*s ..`` of the stream hold the same users with the same values, byte for byte.
Each call counts towards the cohort's membership change, and the stream passes its proxy cut.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from fastapi import APIRouter, Request
from fastapi.responses import Response

from analytics_emulator import catalog
from analytics_emulator import validation as v
from analytics_emulator.errors import BadRequest
from analytics_emulator.export import ExportResponse, ExportSource
from analytics_emulator.http_common import (
    EXPORT_FAULT,
    PROJECT,
    JsonObject,
    emulator_config,
    emulator_state,
    operation,
)

if TYPE_CHECKING:
    from analytics_emulator.cohort_settings import Membership, ProxyCut
    from analytics_emulator.state import EmulatorState

router = APIRouter()
PAGED_DEFAULT_LIMIT: Final = 1000


@dataclass(frozen=True)
class CohortRequest:
    """The fields 4.12 and 4.13 share, validated against the state, and the cohort as this
    call sees it."""

    members: Membership
    proxy_cut: ProxyCut | None
    properties: tuple[str, ...]
    limit: int | None

    @property
    def count(self) -> int:
        return self.members.count


def parse_cohort_request(body: dict[str, Any], state: EmulatorState) -> CohortRequest:
    """``cohortCode`` must be a configured cohort; ``properties`` (default: the visible plan
    items) may name user properties of the plan and tag codes."""
    code = v.string(v.required(body, "cohortCode"), "cohortCode")
    if code not in state.cohort_book:
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
    call = state.cohort_book.call(code)
    return CohortRequest(call.members, call.proxy_cut, chosen, limit)


def _page_size(body: dict[str, Any], most: int) -> int:
    page_size = v.positive_int(v.required(body, "pageSize"), "pageSize")
    if page_size > most:
        raise BadRequest(f"pageSize must not exceed {most}", ["pageSize"])
    return page_size


def _source(state: EmulatorState, cohort: CohortRequest, start: int, stop: int) -> ExportSource:
    """Positions ``start..stop-1`` of the cohort as this call sees it."""
    return ExportSource(
        population=state.population,
        cache=state.export_blocks,
        properties=cohort.properties,
        masked=state.masked_properties(),
        rows=stop - start,
        first_user=cohort.members.first_user + start,
        skip_from=cohort.members.skip_from,
        skip=cohort.members.skip,
        cached=cohort.count <= state.export_cache_rows,
    )


@router.post("/uba/api/cohort/users", dependencies=[operation("get_cohort_users", PROJECT)])
def get_cohort_users(request: Request, body: JsonObject) -> Response:
    state = emulator_state(request)
    cohort = parse_cohort_request(body, state)
    page = v.optional_positive_int(body, "page")
    if page is None:
        start, stop, page = 0, min(cohort.limit or PAGED_DEFAULT_LIMIT, cohort.count), 1
    else:
        page_size = _page_size(body, emulator_config(request).max_page_size)
        if cohort.limit is not None and page_size > cohort.limit:
            raise BadRequest("pageSize must not exceed limit", ["pageSize"])
        limit = min(cohort.count if cohort.limit is None else cohort.limit, cohort.count)
        start = min((page - 1) * page_size, limit)
        stop = min(page * page_size, limit)
    lines = _source(state, cohort, start, stop).text()
    head = f'{{"count":{cohort.count},"page":{page},"size":{stop - start},"users":['
    users = lines[:-1].replace(b"\n", b",")  # a line's JSON never holds a raw newline
    return Response(head.encode() + users + b"]}", media_type="application/json")


@router.post(
    "/uba/api/cohort/users/export", dependencies=[operation("export_cohort_users", PROJECT)]
)
def export_cohort_users(request: Request, body: JsonObject) -> ExportResponse:
    state = emulator_state(request)
    cohort = parse_cohort_request(body, state)
    rows = cohort.count if cohort.limit is None else min(cohort.limit, cohort.count)
    source = _source(state, cohort, 0, rows)
    fault = getattr(request.state, EXPORT_FAULT, None)
    return ExportResponse(source, fault, state.connections, cohort.proxy_cut)
