"""Ad tracking routes (spec 4.1-4.4), mounted under every configured prefix (``/svc``...)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from analytics_emulator import validation as v
from analytics_emulator.campaigns import (
    DEFAULT_TARGET,
    EVENT_AGGREGATORS,
    CampaignSpec,
    Measure,
)
from analytics_emulator.errors import BadRequest
from analytics_emulator.http_common import (
    PROJECT,
    JsonObject,
    emulator_state,
    operation,
)

router = APIRouter()
BASE = "/uba/api/operations/utm"
_CAMPAIGN_ID = re.compile(r"[0-9]{1,18}")
_EVENT_EXPRESSION = re.compile(r"event\.\$?[A-Za-z0-9_]+")
SUCCESS = {"success": 0}


def campaign_id(text: str) -> int:
    if not _CAMPAIGN_ID.fullmatch(text):
        raise BadRequest("campaignId must be a number", ["campaignId"])
    return int(text)


def _page_url(value: Any) -> str:
    url = v.string(value, "pageUrl")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise BadRequest("pageUrl must be an absolute http or https address", ["pageUrl"])
    return url


def parse_campaign(body: dict[str, Any]) -> CampaignSpec:
    """Spec 4.1's body: four required strings, four optional ones."""
    return CampaignSpec(
        page_url=_page_url(v.required(body, "pageUrl")),
        utm_campaign=v.string(v.required(body, "utmCampaign"), "utmCampaign"),
        utm_medium=v.string(v.required(body, "utmMedium"), "utmMedium"),
        utm_source=v.string(v.required(body, "utmSource"), "utmSource"),
        utm_content=v.optional_string(body, "utmContent"),
        utm_term=v.optional_string(body, "utmTerm"),
        remarks=v.optional_string(body, "remarks"),
        utm_type=v.optional_string(body, "utmType"),
    )


def _measure(expression: Any, aggregator: Any, path: str) -> Measure:
    expression_param = v.join_path(path, "expression")
    text = v.string(expression, expression_param)
    if not _EVENT_EXPRESSION.fullmatch(text):
        raise BadRequest(
            f"{expression_param} must be an event expression event.<id>", [expression_param]
        )
    if aggregator not in EVENT_AGGREGATORS:
        param = v.join_path(path, "aggregator")
        raise BadRequest(f"{param} must be one of {', '.join(EVENT_AGGREGATORS)}", [param])
    return Measure(text, str(aggregator))


def parse_measures(body: dict[str, Any]) -> list[Measure]:
    """``convertMeasures`` if sent, else ``expression`` counted by users, else the default."""
    if body.get("convertMeasures") is not None:
        items = v.array(body["convertMeasures"], "convertMeasures")
        if not items:
            raise BadRequest("convertMeasures must not be empty", ["convertMeasures"])
        measures = []
        for index, item in enumerate(items):
            path = v.join_path("convertMeasures", index)
            item = v.obj(item, path)
            measures.append(
                _measure(
                    v.required(item, "expression", path), v.required(item, "aggregator", path), path
                )
            )
        return measures
    expression = body.get("expression")
    return [_measure(expression or DEFAULT_TARGET, "TRIGGER_USER_COUNT", "")]


@router.post(BASE, dependencies=[operation("create_utm", PROJECT)])
def create_utm(request: Request, body: JsonObject) -> JSONResponse:
    spec = parse_campaign(body)
    login_user = request.query_params.get("loginUser")
    new_id = emulator_state(request).campaigns.create(spec, login_user)
    return JSONResponse({"success": 0, "campaignId": new_id})


@router.get(BASE + "/{campaign}", dependencies=[operation("get_utm", PROJECT)])
def get_utm(request: Request, campaign: str) -> JSONResponse:
    return JSONResponse(emulator_state(request).campaigns.get(campaign_id(campaign)))


@router.post(BASE + "/analysys/{campaign}", dependencies=[operation("get_utm_conversion", PROJECT)])
def get_utm_conversion(request: Request, campaign: str, body: JsonObject) -> JSONResponse:
    target = campaign_id(campaign)
    first, last = v.date_range(body)
    v.optional_boolean(body, "useCache")
    measures = parse_measures(body)
    return JSONResponse(emulator_state(request).campaigns.conversion(target, first, last, measures))


@router.delete(BASE + "/drop/{campaign}", dependencies=[operation("delete_utm", PROJECT)])
def delete_utm(request: Request, campaign: str) -> JSONResponse:
    emulator_state(request).campaigns.delete(campaign_id(campaign))
    return JSONResponse(SUCCESS)
