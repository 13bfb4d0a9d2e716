"""How a cohort behaves at scale: the proxy cut in front of its stream, and how its membership
changes between calls.

Both settings are plain frozen dataclasses, built from a mapping (the admin API's JSON, the
command line's ``key=value`` lists, a pytest marker) by :func:`proxy_cut_from` and
:func:`membership_change_from`, which refuse a value that does not fit with a
:class:`SettingError` naming the field and the rule.

The documented cut: the platform's documentation places a proxy in front of it that answers
``504`` after about 10 minutes, around two million rows of a related export.
:data:`DOCUMENTED_CUT_ROWS` is that figure; the emulator produces rows far faster than the
platform does, so the cut is counted in rows by default, not in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Mapping

DOCUMENTED_CUT_ROWS: Final = 2_000_000
"""Rows a stream carries before the documented proxy cut (about 10 minutes on the platform)."""
DOCUMENTED_CUT_SECONDS: Final = 600.0
"""The documented proxy timeout, for a cut counted in seconds."""

GATEWAY_TIMEOUT: Final = "504"
"""The proxy buffers the stream; past the cut it answers ``504 Gateway Time-out`` instead."""
MID_LINE: Final = "mid_line"
"""The proxy forwards the stream; at the cut it sends half of the next line and drops the
connection."""
DROP: Final = "drop"
"""The proxy forwards the stream; at the cut it drops the connection after a whole line."""
ENDINGS: Final = (GATEWAY_TIMEOUT, MID_LINE, DROP)

SHIFT: Final = "shift"
"""Users leave at the front and as many join at the end: the count stays the same."""
GROW: Final = "grow"
"""Users join at the end: the count grows."""
SHRINK: Final = "shrink"
"""Users leave at the end: the count shrinks (never below zero)."""
EXCHANGE: Final = "exchange"
"""Users leave at position ``at`` and as many join at the end: the count stays the same, the
users before ``at`` stay where they are."""
CHANGE_KINDS: Final = (SHIFT, GROW, SHRINK, EXCHANGE)


class SettingError(ValueError):
    """A setting that does not fit; ``field`` names it (``proxy_cut.rows``)."""

    def __init__(self, field: str, rule: str) -> None:
        super().__init__(f"{field} {rule}")
        self.field = field
        self.rule = rule


def _count(value: Any, field: str, *, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise SettingError(field, f"must be an integer of at least {least}, not {value!r}")
    return value


@dataclass(frozen=True)
class ProxyCut:
    """A proxy in front of a cohort's stream that cuts it after ``rows`` rows or ``seconds``
    seconds, whichever comes first (None: that trigger is off).

    :param rows: the stream carries at most this many rows.
    :param seconds: the stream lasts at most this long, counted from the request.
    :param ending: :data:`GATEWAY_TIMEOUT`, :data:`MID_LINE` or :data:`DROP`.
    """

    rows: int | None = DOCUMENTED_CUT_ROWS
    seconds: float | None = None
    ending: str = GATEWAY_TIMEOUT

    def __post_init__(self) -> None:
        if self.rows is None and self.seconds is None:
            raise SettingError("proxy_cut", "needs rows or seconds (or both)")
        if self.rows is not None:
            _count(self.rows, "proxy_cut.rows", least=0)
        if self.seconds is not None and (
            isinstance(self.seconds, bool)
            or not isinstance(self.seconds, int | float)
            or not self.seconds > 0
        ):
            raise SettingError(
                "proxy_cut.seconds", f"must be a positive number, not {self.seconds!r}"
            )
        if self.ending not in ENDINGS:
            raise SettingError("proxy_cut.ending", f"must be one of {', '.join(ENDINGS)}")

    def public(self) -> dict[str, Any]:
        return {"rows": self.rows, "seconds": self.seconds, "ending": self.ending}


@dataclass(frozen=True)
class MembershipChange:
    """The cohort is recomputed between calls: after every ``after_calls`` calls to it (the
    paged listing and the stream alike), ``users`` users change as ``kind`` says, at most
    ``times`` times.

    Generation ``g = min(earlier_calls // after_calls, times)`` of a cohort of size ``N`` holds,
    in this order: for :data:`SHIFT` users ``g*users .. g*users + N - 1``; for :data:`GROW`
    users ``0 .. N + g*users - 1``; for :data:`SHRINK` users ``0 .. N - g*users - 1``; for
    :data:`EXCHANGE` users ``0 .. at - 1``, then ``at + g*users .. N + g*users - 1``.

    :param after_calls: calls served before each change.
    :param kind: :data:`SHIFT`, :data:`GROW`, :data:`SHRINK` or :data:`EXCHANGE`.
    :param users: users that change each time.
    :param times: how many changes at most.
    :param at: for :data:`EXCHANGE`, the position of the first user who leaves.
    """

    after_calls: int
    kind: str = SHIFT
    users: int = 1
    times: int = 1
    at: int = 0

    def __post_init__(self) -> None:
        _count(self.after_calls, "membership_change.after_calls", least=1)
        if self.kind not in CHANGE_KINDS:
            raise SettingError(
                "membership_change.kind", f"must be one of {', '.join(CHANGE_KINDS)}"
            )
        _count(self.users, "membership_change.users", least=1)
        _count(self.times, "membership_change.times", least=1)
        _count(self.at, "membership_change.at", least=0)

    def generation(self, earlier_calls: int) -> int:
        """Which version of the cohort a call sees after ``earlier_calls`` calls."""
        return min(earlier_calls // self.after_calls, self.times)

    def public(self) -> dict[str, Any]:
        return {
            "after_calls": self.after_calls,
            "kind": self.kind,
            "users": self.users,
            "times": self.times,
            "at": self.at,
        }


@dataclass(frozen=True)
class Membership:
    """Who is in a cohort for one call: positions ``0..count-1`` hold users
    ``first_user..first_user+count-1``, in that order, except that users from ``skip_from``
    on are ``skip`` further (the users in between left)."""

    first_user: int
    count: int
    skip_from: int = 0
    skip: int = 0


def membership(size: int, change: MembershipChange | None, earlier_calls: int) -> Membership:
    """The members a call sees, after ``earlier_calls`` calls to a cohort of ``size`` users."""
    if change is None:
        return Membership(0, size)
    moved = change.generation(earlier_calls) * change.users
    if change.kind == SHIFT:
        return Membership(moved, size)
    if change.kind == GROW:
        return Membership(0, size + moved)
    if change.kind == EXCHANGE:
        return Membership(0, size, skip_from=change.at, skip=moved)
    return Membership(0, max(size - moved, 0))


def _known_keys(values: Mapping[str, Any], field: str, keys: tuple[str, ...]) -> None:
    unknown = sorted(set(values) - set(keys))
    if unknown:
        raise SettingError(field, f"has unknown keys {unknown}; known: {', '.join(keys)}")


def proxy_cut_from(values: Mapping[str, Any]) -> ProxyCut:
    """A :class:`ProxyCut` from ``{"rows", "seconds", "ending"}``; a key left out takes the
    documented default (``rows`` stays on unless it is given as null)."""
    if not isinstance(values, dict):
        raise SettingError("proxy_cut", "must be an object")
    _known_keys(values, "proxy_cut", ("rows", "seconds", "ending"))
    ending = values.get("ending", GATEWAY_TIMEOUT)
    if ending == int(GATEWAY_TIMEOUT) and not isinstance(ending, bool):
        ending = GATEWAY_TIMEOUT  # 504 written as a number
    return ProxyCut(
        rows=values.get("rows", DOCUMENTED_CUT_ROWS),
        seconds=values.get("seconds"),
        ending=ending,
    )


def membership_change_from(values: Mapping[str, Any]) -> MembershipChange:
    """A :class:`MembershipChange` from ``{"after_calls", "kind", "users", "times", "at"}``."""
    if not isinstance(values, dict):
        raise SettingError("membership_change", "must be an object")
    _known_keys(values, "membership_change", ("after_calls", "kind", "users", "times", "at"))
    if "after_calls" not in values:
        raise SettingError("membership_change.after_calls", "is required")
    return MembershipChange(
        after_calls=values["after_calls"],
        kind=values.get("kind", SHIFT),
        users=values.get("users", 1),
        times=values.get("times", 1),
        at=values.get("at", 0),
    )


def key_values(text: str, field: str) -> dict[str, Any]:
    """``rows=5000,ending=mid_line`` as a mapping, integers and decimals read as numbers and
    ``none`` as null (for the command line)."""
    values: dict[str, Any] = {}
    for item in filter(None, text.split(",")):
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise SettingError(field, f"expects key=value items, not {item!r}")
        values[key] = _scalar(raw)
    return values


def _scalar(raw: str) -> Any:
    if raw.lower() in ("none", "null"):
        return None
    for parse in (int, float):
        try:
            return parse(raw)
        except ValueError:
            pass
    return raw
