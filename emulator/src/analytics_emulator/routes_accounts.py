"""Enterprise account routes (spec 4.14, 4.15), authenticated by ``xtoken``."""

from __future__ import annotations

import re
from typing import Any, Final

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from analytics_emulator import validation as v
from analytics_emulator.accounts import AccountSpec
from analytics_emulator.errors import BadRequest
from analytics_emulator.http_common import (
    ACCOUNT,
    JsonObject,
    emulator_state,
    operation,
)

router = APIRouter()
ACCOUNTS: Final = "/uba/manage/enterprise/accounts"
_EMAIL: Final = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_PHONE: Final = re.compile(r"\+?[0-9][0-9 \-]{4,19}")


def parse_account(body: dict[str, Any]) -> AccountSpec:
    """Spec 4.14's body; the password, if sent, must be a string and is then forgotten."""
    email = v.string(v.required(body, "email"), "email")
    if not _EMAIL.fullmatch(email):
        raise BadRequest("email must be an e-mail address", ["email"])
    phone = v.optional_string(body, "phone")
    if phone is not None and not _PHONE.fullmatch(phone):
        raise BadRequest("phone must be a phone number", ["phone"])
    v.optional_string(body, "password")
    user_name = v.optional_string(body, "userName")
    if user_name is not None:
        v.string(user_name, "userName")
    return AccountSpec(
        email=email,
        user_name=user_name,
        name=v.optional_string(body, "name"),
        phone=phone,
        department=v.optional_string(body, "department"),
    )


@router.post(ACCOUNTS, dependencies=[operation("register_account", ACCOUNT)])
def register_account(request: Request, body: JsonObject) -> JSONResponse:
    spec = parse_account(body)
    login_user = request.query_params.get("loginUser")
    return JSONResponse(emulator_state(request).accounts.register(spec, login_user))


@router.post(ACCOUNTS + "/activation", dependencies=[operation("set_account_activation", ACCOUNT)])
def set_account_activation(request: Request, body: JsonObject) -> JSONResponse:
    email = v.required_query(request.query_params.get("email"), "email")
    enabled = v.boolean(v.required(body, "activation"), "activation")
    login_user = request.query_params.get("loginUser")
    emulator_state(request).accounts.set_activation(email, enabled, login_user)
    return JSONResponse({"success": 0})
