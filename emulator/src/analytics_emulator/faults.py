"""Injectable faults: what the next requests of an operation should suffer.

A fault is armed for ``times`` requests of one operation (or ``*`` for any), by the
names the client's methods use. Kinds:

- ``status``: answer with an error body (``status``, ``code``, ``msg``, optional
  ``retry_after`` for a ``Retry-After`` header) without performing the operation;
- ``reset``: drop the connection without answering;
- ``answer``: answer 200 with ``body`` (text, sent as it is with ``application/json``)
  without performing the operation: a valid-looking answer with the wrong meaning (``"7"``
  for a count, a repeated day, ``NaN``), which a client must refuse by name;
- ``stall``: hold the request ``seconds``, or until the client closes the connection if that
  comes first, then perform the operation normally (so a long stall costs a client no more
  than its read timeout; ``in_flight`` in the statistics tells when the operation is done);
- for ``export_cohort_users`` only: ``cut_after_rows`` (``rows`` complete lines, then the
  connection drops without the terminating chunk), ``cut_inside_line`` (``rows`` lines and
  half of the next, then the drop), ``end_after_rows`` (``rows`` complete lines, then a clean
  end of the body, as a proxy that silently truncates would send), ``malformed_line``
  (after ``rows`` lines one line that is not JSON, then the rest), ``stall_after_rows``
  (``rows`` lines, then nothing for ``seconds`` or until the client closes the connection,
  then the rest: a stream that stalls past the client's read timeout), ``trickle``
  (``bytes_per_second``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from analytics_emulator import validation as v
from analytics_emulator.errors import BadRequest, EmulatorError

if TYPE_CHECKING:
    from collections.abc import Mapping

OPERATIONS: Final = (
    "create_utm",
    "get_utm",
    "get_utm_conversion",
    "delete_utm",
    "list_user_properties",
    "list_events",
    "list_event_properties",
    "add_user_property",
    "add_event",
    "update_user_property",
    "update_event",
    "update_event_property",
    "get_cohort_users",
    "export_cohort_users",
    "register_account",
    "set_account_activation",
    "analyze_funnel",
    "analyze_events",
)
ANY_OPERATION: Final = "*"
EXPORT_OPERATION: Final = "export_cohort_users"

STATUS: Final = "status"
RESET: Final = "reset"
ANSWER: Final = "answer"
MAX_ANSWER_CHARACTERS: Final = 1 << 20
STALL: Final = "stall"
CUT_AFTER_ROWS: Final = "cut_after_rows"
CUT_INSIDE_LINE: Final = "cut_inside_line"
END_AFTER_ROWS: Final = "end_after_rows"
STALL_AFTER_ROWS: Final = "stall_after_rows"
MALFORMED_LINE: Final = "malformed_line"
TRICKLE: Final = "trickle"
EXPORT_KINDS: Final = (
    CUT_AFTER_ROWS,
    CUT_INSIDE_LINE,
    END_AFTER_ROWS,
    MALFORMED_LINE,
    STALL_AFTER_ROWS,
    TRICKLE,
)
KINDS: Final = (STATUS, RESET, STALL, ANSWER, *EXPORT_KINDS)
MAX_STALL_SECONDS: Final = 300

_ARGUMENTS: Final[dict[str, tuple[str, ...]]] = {
    STATUS: ("status", "code", "msg", "retry_after"),
    RESET: (),
    ANSWER: ("body",),
    STALL: ("seconds",),
    CUT_AFTER_ROWS: ("rows",),
    CUT_INSIDE_LINE: ("rows",),
    END_AFTER_ROWS: ("rows",),
    STALL_AFTER_ROWS: ("rows", "seconds"),
    MALFORMED_LINE: ("rows",),
    TRICKLE: ("bytes_per_second",),
}


@dataclass
class Fault:
    """One armed fault; ``remaining`` counts the requests it still applies to."""

    operation: str
    kind: str
    remaining: int
    args: dict[str, Any] = field(default_factory=dict)

    def applies_to(self, operation: str) -> bool:
        if self.kind in EXPORT_KINDS and operation != EXPORT_OPERATION:
            return False
        return self.operation in (operation, ANY_OPERATION)

    def public(self) -> dict[str, Any]:
        return {
            "operation": self.operation,
            "kind": self.kind,
            "times": self.remaining,
            **self.args,
        }


class InjectedAnswer(Exception):
    """The answer an ``answer`` fault sends instead of performing the operation."""

    def __init__(self, body: str) -> None:
        super().__init__("injected answer")
        self.body = body


class InjectedFailure(EmulatorError):
    """The error a ``status`` fault answers with."""

    def __init__(self, status: int, code: int, msg: str, retry_after: str | None) -> None:
        super().__init__(msg, code=code)
        self.status = status
        self.retry_after = retry_after

    def response_headers(self) -> dict[str, str]:
        return {} if self.retry_after is None else {"Retry-After": self.retry_after}


def _non_negative_int(value: Any, param: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadRequest(f"{param} must be a non-negative integer", [param])
    return value


def _stall_seconds(body: Mapping[str, Any]) -> float:
    seconds = v.required(body, "seconds")
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or not 0 <= seconds <= MAX_STALL_SECONDS
    ):
        raise BadRequest(f"seconds must be a number from 0 to {MAX_STALL_SECONDS}", ["seconds"])
    return float(seconds)


def _parse_args(kind: str, body: Mapping[str, Any]) -> dict[str, Any]:
    if kind == STATUS:
        status = body.get("status", 503)
        if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
            raise BadRequest("status must be an HTTP error status (400-599)", ["status"])
        code = body.get("code", status)
        if isinstance(code, bool) or not isinstance(code, int):
            raise BadRequest("code must be an integer", ["code"])
        msg = v.string(body.get("msg", "injected failure"), "msg")
        retry_after = body.get("retry_after")
        if retry_after is not None:
            if isinstance(retry_after, int) and not isinstance(retry_after, bool):
                retry_after = str(_non_negative_int(retry_after, "retry_after"))
            else:
                retry_after = v.string(retry_after, "retry_after")
        return {"status": status, "code": code, "msg": msg, "retry_after": retry_after}
    if kind == ANSWER:
        text = v.required(body, "body")
        if not isinstance(text, str) or len(text) > MAX_ANSWER_CHARACTERS:
            raise BadRequest(
                f"body must be text of at most {MAX_ANSWER_CHARACTERS} characters", ["body"]
            )
        return {"body": text}
    if kind == STALL:
        return {"seconds": _stall_seconds(body)}
    if kind == STALL_AFTER_ROWS:
        rows = _non_negative_int(v.required(body, "rows"), "rows")
        return {"rows": rows, "seconds": _stall_seconds(body)}
    if kind == TRICKLE:
        return {
            "bytes_per_second": v.positive_int(
                v.required(body, "bytes_per_second"), "bytes_per_second"
            )
        }
    if kind in EXPORT_KINDS:
        return {"rows": _non_negative_int(v.required(body, "rows"), "rows")}
    return {}


def parse_fault(body: Mapping[str, Any]) -> Fault:
    """A :class:`Fault` from the admin API's body ``{operation, kind, times, ...args}``."""
    operation = body.get("operation")
    if operation != ANY_OPERATION and operation not in OPERATIONS:
        raise BadRequest(f"operation must be '*' or one of {', '.join(OPERATIONS)}", ["operation"])
    kind = body.get("kind")
    if kind not in KINDS:
        raise BadRequest(f"kind must be one of {', '.join(KINDS)}", ["kind"])
    if kind in EXPORT_KINDS and operation != EXPORT_OPERATION:
        raise BadRequest(f"kind {kind} applies to {EXPORT_OPERATION} only", ["operation"])
    unknown = sorted(set(body) - {"operation", "kind", "times", *_ARGUMENTS[kind]})
    if unknown:
        raise BadRequest(f"unknown arguments for kind {kind}: {', '.join(unknown)}", unknown)
    times = v.positive_int(body.get("times", 1), "times")
    return Fault(str(operation), str(kind), times, _parse_args(str(kind), body))


class FaultStore:
    """Armed faults in arming order; the first one that applies is used first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []

    def arm(self, fault: Fault) -> None:
        with self._lock:
            self._faults.append(fault)

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def take(self, operation: str) -> Fault | None:
        """Use up one application of the first fault armed for ``operation``."""
        with self._lock:
            for fault in self._faults:
                if fault.applies_to(operation):
                    fault.remaining -= 1
                    if fault.remaining == 0:
                        self._faults.remove(fault)
                    return fault
            return None

    def pending(self) -> list[dict[str, Any]]:
        with self._lock:
            return [f.public() for f in self._faults]
