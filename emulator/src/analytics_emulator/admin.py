"""The emulator's own admin API under ``/_emulator/``: faults, reset, data arrival, masking,
hand-built event logs, late events, cohorts at scale and request statistics.

Mounted only when an admin token is configured (otherwise these paths are unknown: 404),
and every call must carry it in the ``X-Emulator-Admin`` header (401 otherwise).
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from analytics_emulator import validation as v
from analytics_emulator.admin_client import ADMIN_HEADER, PREFIX
from analytics_emulator.cohort_settings import (
    SettingError,
    membership_change_from,
    proxy_cut_from,
)
from analytics_emulator.errors import BadRequest, Unauthorized
from analytics_emulator.faults import parse_fault
from analytics_emulator.http_common import (
    JsonObject,
    emulator_config,
    emulator_state,
    same_secret,
)


async def require_admin(request: Request) -> None:
    token = emulator_config(request).admin_token
    if token is None or not same_secret(request.headers.get(ADMIN_HEADER), token):
        raise Unauthorized(f"admin calls need the {ADMIN_HEADER} header")


router = APIRouter(prefix=PREFIX, dependencies=[Depends(require_admin)])
OK = {"success": 0}


@router.post("/faults")
def arm_fault(request: Request, body: JsonObject) -> JSONResponse:
    fault = parse_fault(body)
    faults = emulator_state(request).faults
    faults.arm(fault)
    return JSONResponse({"success": 0, "pending": faults.pending()})


@router.get("/faults")
def list_faults(request: Request) -> JSONResponse:
    return JSONResponse({"pending": emulator_state(request).faults.pending()})


@router.delete("/faults")
def clear_faults(request: Request) -> JSONResponse:
    emulator_state(request).faults.clear()
    return JSONResponse(OK)


@router.post("/reset")
def reset(request: Request) -> JSONResponse:
    emulator_state(request).reset()
    return JSONResponse(OK)


@router.put("/data-until")
def set_data_until(request: Request, body: JsonObject) -> JSONResponse:
    """``{"date": "yyyy-MM-dd" | null}``: analyses see no event after that day."""
    if "date" not in body:
        raise BadRequest("date is required (a yyyy-MM-dd day or null)", ["date"])
    state = emulator_state(request)
    state.data_until = None if body["date"] is None else v.day(body["date"], "date")
    return JSONResponse(OK)


@router.put("/data-status")
def set_data_status(request: Request, body: JsonObject) -> JSONResponse:
    """``{"event": id, "property": optional id, "dataStatus": 0|1}``, or
    ``{"userProperty": id, "dataStatus": 0|1}``."""
    status = body.get("dataStatus")
    if status not in (0, 1) or isinstance(status, bool):
        raise BadRequest("dataStatus must be 0 or 1", ["dataStatus"])
    for key in ("event", "property", "userProperty"):
        if body.get(key) is not None:
            v.string(body[key], key)
    emulator_state(request).plan.set_data_status(
        status=status,
        event_id=body.get("event"),
        event_property_id=body.get("property"),
        user_property_id=body.get("userProperty"),
    )
    return JSONResponse(OK)


@router.put("/mask-values")
def mask_values(request: Request, body: JsonObject) -> JSONResponse:
    """``{"properties": [ids]}``: these read as the masked marker although the plan says
    ``masking=0``; an empty list removes the overrides."""
    properties = v.array(v.required(body, "properties"), "properties")
    state = emulator_state(request)
    for index, prop in enumerate(properties):
        if not isinstance(prop, str) or not state.plan.has_user_property(prop):
            param = v.join_path("properties", index)
            raise BadRequest(f"{param} is not a user property", [param])
    state.set_masked_overrides(properties)
    return JSONResponse(OK)


@router.put("/event-log")
def replace_event_log(request: Request, body: JsonObject) -> JSONResponse:
    """``{"events": [{"user", "event", "time", "properties"}]}`` replaces the event log."""
    events = v.array(v.required(body, "events"), "events")
    for index, event in enumerate(events):
        v.obj(event, v.join_path("events", index))
    try:
        count = emulator_state(request).replace_event_log(events)
    except ValueError as exc:
        raise BadRequest(f"events: {exc}", ["events"]) from exc
    return JSONResponse({"success": 0, "events": count})


@router.post("/event-log/events")
def add_events(request: Request, body: JsonObject) -> JSONResponse:
    """``{"events": [{"user", "event", "time", "properties"}]}`` adds events to the log
    analyses read, on any day (late arrivals), until the next reset."""
    events = v.array(v.required(body, "events"), "events")
    for index, event in enumerate(events):
        v.obj(event, v.join_path("events", index))
    try:
        added, count = emulator_state(request).add_events(events)
    except ValueError as exc:
        raise BadRequest(f"events: {exc}", ["events"]) from exc
    return JSONResponse({"success": 0, "added": added, "events": count})


@router.get("/cohorts")
def list_cohorts(request: Request) -> JSONResponse:
    """Every cohort: size, calls so far, proxy cut and membership change."""
    return JSONResponse({"cohorts": emulator_state(request).cohort_book.describe()})


@router.put("/cohorts/{code}")
def define_cohort(code: str, request: Request, body: JsonObject) -> JSONResponse:
    """``{"size": N, "proxy_cut": {...} | null, "membership_change": {...} | null}`` adds or
    replaces a cohort until the next reset (see :mod:`.cohort_settings` for the settings)."""
    unknown = sorted(set(body) - {"size", "proxy_cut", "membership_change"})
    if unknown:
        raise BadRequest(f"unknown fields: {', '.join(unknown)}", unknown)
    size = v.required(body, "size")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise BadRequest("size must be a non-negative integer", ["size"])
    try:
        cut = None if body.get("proxy_cut") is None else proxy_cut_from(body["proxy_cut"])
        change = body.get("membership_change")
        change = None if change is None else membership_change_from(change)
    except SettingError as exc:
        raise BadRequest(str(exc), [exc.field]) from exc
    book = emulator_state(request).cohort_book
    book.define(v.string(code, "code"), size, proxy_cut=cut, membership_change=change)
    return JSONResponse({"success": 0, "cohort": book.describe()[code]})


@router.get("/stats")
def stats(request: Request) -> JSONResponse:
    """Requests per operation and TCP connections accepted since the last reset, and the API
    requests being served right now (``in_flight``; admin calls are not counted, and a reset
    leaves it alone)."""
    state = emulator_state(request)
    cache = state.export_blocks
    return JSONResponse(
        {
            "requests": state.stats.snapshot(),
            "connections": state.connections.accepted,
            "in_flight": state.in_flight.count,
            "export_cache": {
                "bytes": cache.size_bytes,
                "hits": cache.hits,
                "misses": cache.misses,
            },
        }
    )
