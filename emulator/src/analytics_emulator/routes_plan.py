"""Tracking plan routes (spec 4.5-4.11)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from analytics_emulator import validation as v
from analytics_emulator.errors import BadRequest
from analytics_emulator.http_common import (
    PROJECT,
    JsonObject,
    emulator_state,
    operation,
)
from analytics_emulator.plan import Changes, ItemSpec

if TYPE_CHECKING:
    from collections.abc import Callable

router = APIRouter()
prefixed_router = APIRouter()
"""The user property listing, also served under the ad tracking prefixes (spec 4 notes
that one sample call carries ``/svc``)."""

USER_PROPERTIES = "/uba/api/schema/userProperties"
EVENTS = "/uba/api/schema/event"
EVENT_PROPERTIES = "/uba/api/schema/eventProperties"
SUCCESS = {"success": 0}


def _filters(request: Request) -> dict[str, int | None]:
    query = request.query_params
    return {
        "plan": v.flag_query(query.get("plan"), "plan"),
        "data_status": v.flag_query(query.get("dataStatus"), "dataStatus"),
    }


def list_user_properties(request: Request) -> JSONResponse:
    filters = _filters(request)
    return JSONResponse(emulator_state(request).plan.user_properties(**filters))


for _router in (router, prefixed_router):
    _router.add_api_route(
        USER_PROPERTIES,
        list_user_properties,
        methods=["GET"],
        dependencies=[operation("list_user_properties", PROJECT)],
    )


@router.get(EVENTS, dependencies=[operation("list_events", PROJECT)])
def list_events(request: Request) -> JSONResponse:
    filters = _filters(request)
    return JSONResponse(emulator_state(request).plan.events(**filters))


@router.get(EVENT_PROPERTIES, dependencies=[operation("list_event_properties", PROJECT)])
def list_event_properties(request: Request) -> JSONResponse:
    event_id = v.required_query(request.query_params.get("eventId"), "eventId")
    filters = _filters(request)
    return JSONResponse(emulator_state(request).plan.event_properties(event_id, **filters))


def _item(
    body: dict[str, Any], path: str, *, is_preset: Callable[[str], bool], typed: bool
) -> ItemSpec:
    """An item of an add request: id, optional name and remark, and a data type if typed."""
    item_id = v.identifier(
        v.required(body, "id", path), v.join_path(path, "id"), is_preset=is_preset
    )
    data_type = None
    if typed:
        data_type = v.data_type(v.required(body, "dataType", path), v.join_path(path, "dataType"))
    return ItemSpec(
        id=item_id,
        name=v.optional_name(body, "name", path),
        remark=v.optional_remark(body, "remark", path),
        data_type=data_type,
        param=path,
    )


@router.post(USER_PROPERTIES, dependencies=[operation("add_user_property", PROJECT)])
def add_user_property(request: Request, body: JsonObject) -> JSONResponse:
    plan = emulator_state(request).plan
    plan.add_user_property(_item(body, "", is_preset=plan.is_preset_user_property, typed=True))
    return JSONResponse(SUCCESS)


@router.post(EVENTS, dependencies=[operation("add_event", PROJECT)])
def add_event(request: Request, body: JsonObject) -> JSONResponse:
    plan = emulator_state(request).plan
    event = _item(body, "", is_preset=plan.is_preset_event, typed=False)
    properties: list[ItemSpec] = []
    raw = body.get("properties")
    for index, item in enumerate([] if raw is None else v.array(raw, "properties")):
        path = v.join_path("properties", index)
        spec = _item(v.obj(item, path), path, is_preset=plan.is_preset_event_property, typed=True)
        if any(p.id == spec.id for p in properties):
            raise BadRequest(f"{path}.id repeats an earlier property", [f"{path}.id"])
        properties.append(spec)
    plan.add_event(event, properties)
    return JSONResponse(SUCCESS)


def _changes(body: dict[str, Any], *, typed: bool) -> Changes:
    data_type = body.get("dataType")
    return Changes(
        name=v.optional_name(body, "name"),
        remark=v.optional_remark(body, "remark"),
        data_type=None if data_type is None or not typed else v.data_type(data_type, "dataType"),
    )


@router.put(USER_PROPERTIES, dependencies=[operation("update_user_property", PROJECT)])
def update_user_property(request: Request, body: JsonObject) -> JSONResponse:
    prop_id = v.required_query(request.query_params.get("id"), "id")
    emulator_state(request).plan.update_user_property(prop_id, _changes(body, typed=True))
    return JSONResponse(SUCCESS)


@router.put(EVENTS, dependencies=[operation("update_event", PROJECT)])
def update_event(request: Request, body: JsonObject) -> JSONResponse:
    event_id = v.required_query(request.query_params.get("id"), "id")
    emulator_state(request).plan.update_event(event_id, _changes(body, typed=False))
    return JSONResponse(SUCCESS)


@router.put(EVENT_PROPERTIES, dependencies=[operation("update_event_property", PROJECT)])
def update_event_property(request: Request, body: JsonObject) -> JSONResponse:
    query = request.query_params
    event_id = v.required_query(query.get("eventId"), "eventId")
    prop_id = v.required_query(query.get("propertyId"), "propertyId")
    emulator_state(request).plan.update_event_property(
        event_id, prop_id, _changes(body, typed=True)
    )
    return JSONResponse(SUCCESS)
