"""What every route shares: the operation guard (stats, faults, authentication), JSON body
parsing, and turning every failure into the platform's ``{code, msg, data}`` body.

Order of checks for an operation: count it, apply an armed fault, authenticate, then
parse the body; so a wrong credential is a 401 whatever the body, and a fault hits
before anything else, as a failing proxy or backend would.
"""

from __future__ import annotations

import hmac
import json
import logging
from typing import TYPE_CHECKING, Annotated, Any, Final

from fastapi import Depends, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from analytics_emulator import faults as f
from analytics_emulator.disconnects import hold, wait_disconnect
from analytics_emulator.errors import (
    BadRequest,
    EmulatorError,
    NotFound,
    Unauthorized,
    UnsupportedMediaType,
)
from analytics_emulator.export import DroppedConnectionResponse

if TYPE_CHECKING:
    from fastapi import FastAPI
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from analytics_emulator.config import EmulatorConfig
    from analytics_emulator.state import EmulatorState

log = logging.getLogger(__name__)

PROJECT: Final = "project"
"""Operations authenticated by the ``token`` and ``appKey`` headers."""
ACCOUNT: Final = "account"
"""Operations authenticated by the ``xtoken`` header."""
EXPORT_FAULT: Final = "export_fault"
"""``request.state`` attribute holding a stream fault for the export route."""


class DropConnection(Exception):
    """Raised by the guard for a ``reset`` fault: answer by closing the connection."""


def emulator_state(request: Request) -> EmulatorState:
    state: EmulatorState = request.app.state.emulator
    return state


def emulator_config(request: Request) -> EmulatorConfig:
    config: EmulatorConfig = request.app.state.config
    return config


def same_secret(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def authenticate(request: Request, kind: str) -> None:
    """Check the credential headers; the message never repeats what was sent."""
    config = emulator_config(request)
    headers = request.headers
    if kind == PROJECT:
        if not (
            same_secret(headers.get("token"), config.token)
            and same_secret(headers.get("appKey"), config.app_key)
        ):
            raise Unauthorized("authentication failed: missing or wrong token or appKey header")
    elif not same_secret(headers.get("xtoken"), config.xtoken):
        raise Unauthorized("authentication failed: missing or wrong xtoken header")


async def _apply_fault(fault: f.Fault, request: Request) -> None:
    if fault.kind == f.STATUS:
        args = fault.args
        raise f.InjectedFailure(args["status"], args["code"], args["msg"], args["retry_after"])
    if fault.kind == f.RESET:
        raise DropConnection
    if fault.kind == f.ANSWER:
        await request.body()
        raise f.InjectedAnswer(fault.args["body"])
    if fault.kind == f.STALL:
        await _stall(request, fault.args["seconds"])
        return
    setattr(request.state, EXPORT_FAULT, fault)


async def _stall(request: Request, seconds: float) -> None:
    """Hold the request ``seconds``, or until its client closes the connection if sooner.

    The body is read (and kept for the route) first, so that what the request's ``receive``
    reports next is the client going away.
    """
    await request.body()
    await hold(seconds, wait_disconnect(request.receive))


def operation(name: str, auth: str) -> Any:
    """The dependency every operation's route declares first.

    :param name: the operation's name (the client's method name), for stats and faults.
    :param auth: :data:`PROJECT` or :data:`ACCOUNT`.
    """

    async def guard(request: Request) -> None:
        state = emulator_state(request)
        state.stats.count(name)
        fault = state.faults.take(name)
        if fault is not None:
            await _apply_fault(fault, request)
        authenticate(request, auth)

    return Depends(guard)


def _is_json_media_type(content_type: str) -> bool:
    return content_type.split(";", 1)[0].strip().lower() == "application/json"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


async def json_body(request: Request) -> Any:
    """The request's JSON body, any JSON type.

    :raises UnsupportedMediaType: for a body not declared ``application/json``.
    :raises BadRequest: naming ``body`` when it is missing or not valid JSON.
    """
    raw = await request.body()
    content_type = request.headers.get("content-type")
    if content_type is not None and not _is_json_media_type(content_type):
        raise UnsupportedMediaType("Content-Type must be application/json")
    if not raw.strip():
        raise BadRequest("a JSON body is required", ["body"])
    if content_type is None:
        raise UnsupportedMediaType("Content-Type must be application/json")
    try:
        return json.loads(raw, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise BadRequest("the body is not valid JSON", ["body"]) from exc


async def json_object(request: Request) -> dict[str, Any]:
    """The request's body, which must be a JSON object."""
    body = await json_body(request)
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object", ["body"])
    return body


JsonObject = Annotated[dict[str, Any], Depends(json_object)]
"""A route parameter receiving the request's JSON object body."""


def platform_error(status: int, code: int, msg: str, data: Any = None) -> JSONResponse:
    return JSONResponse({"code": code, "msg": msg, "data": data}, status_code=status)


async def _emulator_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, EmulatorError)
    response = platform_error(exc.status, exc.code, exc.msg, exc.data)
    response.headers.update(exc.response_headers())
    return response


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 404:
        return await _emulator_error(request, NotFound(f"no such API: {request.url.path}"))
    msg = "method not allowed" if exc.status_code == 405 else str(exc.detail)
    return platform_error(exc.status_code, exc.status_code, msg)


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    params = [".".join(str(p) for p in error.get("loc", ())[1:]) for error in exc.errors()]
    return await _emulator_error(request, BadRequest("invalid request parameters", params))


async def _injected_answer(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, f.InjectedAnswer)
    return Response(exc.body.encode(), status_code=200, media_type="application/json")


async def _dropped(request: Request, exc: Exception) -> Response:
    return DroppedConnectionResponse(emulator_state(request).connections)


def install_error_handlers(app: FastAPI) -> None:
    """Every failure answers in the platform's shape; unexpected ones become a 500."""
    app.add_exception_handler(EmulatorError, _emulator_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(DropConnection, _dropped)
    app.add_exception_handler(f.InjectedAnswer, _injected_answer)
    app.add_middleware(UnexpectedErrorMiddleware)


class UnexpectedErrorMiddleware:
    """Answers 500 ``{code, msg, data}`` for an exception no handler knew, and logs it
    (type and traceback only; request headers are never logged)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception:
            log.exception("unexpected error while serving %s", scope.get("path"))
            if started:
                raise
            response = platform_error(500, 500, "internal error")
            await response(scope, receive, send)
