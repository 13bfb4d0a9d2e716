"""A client of the emulator's admin API (``/_emulator/``) with the standard library only: each
method is one real HTTP call, and a refusal raises :class:`AdminError` with the emulator's
message (which names the offending field)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from datetime import date

ADMIN_HEADER: Final = "X-Emulator-Admin"
"""The header every admin call carries the admin token in."""
PREFIX: Final = "/_emulator"
"""Where the admin API is mounted."""
IDLE_POLL_SECONDS: Final = 0.02


class Secret:
    """A credential that never shows itself: ``repr`` and ``str`` give ``'********'``."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The text itself, for a header, a client or a connection."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('********')"

    __str__ = __repr__


class AdminError(RuntimeError):
    """The admin API refused a call: ``status`` and the emulator's ``message``."""

    def __init__(self, method: str, path: str, status: int, message: str) -> None:
        super().__init__(f"admin {method} {path}: {status} {message}")
        self.status = status
        self.message = message


class AdminClient:
    """The admin API of one running emulator.

    :param base_url: the emulator's ``http://127.0.0.1:<port>``.
    :param admin_token: its admin token (never shown in a ``repr`` or an error).
    :param timeout: seconds each call may take.
    """

    def __init__(self, base_url: str, admin_token: Secret, *, timeout: float = 30.0) -> None:
        self.base_url = base_url
        self._admin_token = admin_token
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"AdminClient(base_url={self.base_url!r})"

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.base_url}{PREFIX}/{path}",
            data=data,
            method=method,
            headers={ADMIN_HEADER: self._admin_token.reveal(), "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            text = exc.read().decode("utf-8", "replace")
            try:
                message = str(json.loads(text).get("msg", text))
            except (ValueError, AttributeError):
                message = text
            raise AdminError(method, path, exc.code, message) from None

    def fault(self, operation: str, kind: str, **args: Any) -> list[dict[str, Any]]:
        """Arm a fault for the next requests of ``operation`` (``times`` defaults to 1);
        returns the faults pending."""
        result = self._call("POST", "faults", {"operation": operation, "kind": kind, **args})
        pending: list[dict[str, Any]] = result["pending"]
        return pending

    def pending_faults(self) -> list[dict[str, Any]]:
        pending: list[dict[str, Any]] = self._call("GET", "faults")["pending"]
        return pending

    def clear_faults(self) -> None:
        self._call("DELETE", "faults")

    def reset(self) -> None:
        """Back to the seeded start: plan, ad tracking, accounts, faults, the synthetic event log
        with no data-until day (a scenario's faults, events and data_until go too), statistics,
        and the configured cohorts with no call counted."""
        self._call("POST", "reset")

    def set_data_until(self, day: date | None) -> None:
        """Analyses see no events after ``day`` (None: all events)."""
        self._call("PUT", "data-until", {"date": None if day is None else day.isoformat()})

    def set_data_status(
        self, status: int, *, event: str | None = None, prop: str | None = None
    ) -> None:
        self._call("PUT", "data-status", {"event": event, "property": prop, "dataStatus": status})

    def mask_values(self, properties: Iterable[str]) -> None:
        """These user properties read as the masked marker (an empty list undoes it)."""
        self._call("PUT", "mask-values", {"properties": list(properties)})

    def replace_event_log(self, events: list[dict[str, Any]]) -> int:
        """Analyses read these events only, until the next reset; returns their number."""
        count: int = self._call("PUT", "event-log", {"events": events})["events"]
        return count

    def add_events(self, events: list[dict[str, Any]]) -> int:
        """Add events (late arrivals, any day) to the log analyses read; returns its size."""
        count: int = self._call("POST", "event-log/events", {"events": events})["events"]
        return count

    def cohorts(self) -> dict[str, dict[str, Any]]:
        """Every cohort: size, calls so far, proxy cut and membership change."""
        cohorts: dict[str, dict[str, Any]] = self._call("GET", "cohorts")["cohorts"]
        return cohorts

    def define_cohort(
        self,
        code: str,
        size: int,
        *,
        proxy_cut: Mapping[str, Any] | None = None,
        membership_change: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Add or replace a cohort until the next reset (settings as in
        :mod:`.cohort_settings`); returns how the emulator describes it."""
        body = {
            "size": size,
            "proxy_cut": None if proxy_cut is None else dict(proxy_cut),
            "membership_change": None if membership_change is None else dict(membership_change),
        }
        cohort: dict[str, Any] = self._call("PUT", f"cohorts/{code}", body)["cohort"]
        return cohort

    def stats(self) -> dict[str, Any]:
        """Requests per operation, connections, requests in flight and the export cache."""
        result: dict[str, Any] = self._call("GET", "stats")
        return result

    def wait_until_idle(self, within: float) -> int:
        """Poll until no API request is being served, for at most ``within`` seconds; returns
        how many still were at the end (0: idle)."""
        deadline = time.monotonic() + within
        while (busy := int(self.stats()["in_flight"])) and time.monotonic() < deadline:
            time.sleep(IDLE_POLL_SECONDS)
        return busy

    def close(self) -> None:
        """Nothing to release (each call opens its own connection); kept for symmetry."""
