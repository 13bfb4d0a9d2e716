"""Errors the emulator turns into the platform's ``{code, msg, data}`` error bodies."""

from __future__ import annotations

from typing import Any


class EmulatorError(Exception):
    """A failed call: HTTP ``status`` with body ``{"code": code, "msg": msg, "data": data}``."""

    status = 500
    default_code = 500

    def __init__(self, msg: str, *, data: Any = None, code: int | None = None) -> None:
        super().__init__(msg)
        self.msg = msg
        self.data = data
        self.code = self.default_code if code is None else code

    def body(self) -> dict[str, Any]:
        return {"code": self.code, "msg": self.msg, "data": self.data}

    def response_headers(self) -> dict[str, str]:
        """Extra headers of the error response (none unless a subclass needs some)."""
        return {}


class BadRequest(EmulatorError):
    """400: a parameter is missing or wrong, or the object does not exist.

    ``data`` lists the offending parameters, e.g. ``["steps[1].expression"]``.
    """

    status = 400
    default_code = 400

    def __init__(self, msg: str, params: list[str]) -> None:
        super().__init__(msg, data=list(params))


class Unauthorized(EmulatorError):
    status = 401
    default_code = 401


class NotFound(EmulatorError):
    """404: no such API."""

    status = 404
    default_code = 404


class UnsupportedMediaType(EmulatorError):
    status = 415
    default_code = 415


class NotCompleted(EmulatorError):
    """501 with a code: 501 quota exceeded, 50101 already exists, 50102 exists but disabled."""

    status = 501
    default_code = 501
