"""Expressions of analysis requests, checked against the catalog's tracking plan.

Grammar: ``event.<event_id>`` (``event.$Anything`` = any event), event property
``event.<event_id>.<property_id>`` and user property ``user.<property_id>``. An event
property must be one of that event's properties or a common (global) one; with
``$Anything`` any event property of the catalog is allowed. Property values are read by
property id from the event being looked at, so an event that does not carry the
property reads as null.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from analytics_emulator import catalog
from analytics_emulator.errors import BadRequest
from analytics_emulator.eventlog import EVENT_PROPERTY_TYPES

ANY_EVENT: Final = "$Anything"


@dataclass(frozen=True)
class EventExpr:
    """``event.<event_id>``; ``event_id`` is ``$Anything`` for any event."""

    text: str
    event_id: str

    @property
    def is_any(self) -> bool:
        return self.event_id == ANY_EVENT

    @property
    def bare(self) -> str:
        """The expression without its ``event.`` prefix (``$startup``)."""
        return self.text.removeprefix("event.")


@dataclass(frozen=True)
class PropertyExpr:
    """``event.<event_id>.<property_id>`` (scope ``event``) or ``user.<property_id>``."""

    text: str
    scope: Literal["event", "user"]
    event_id: str | None
    property_id: str
    data_type: str


def _event_id(event_id: str, text: str, where: str) -> str:
    if event_id != ANY_EVENT and catalog.event(event_id) is None:
        raise BadRequest(f"unknown event {event_id!r} in {text!r}", [where])
    return event_id


def _event_property_type(event_id: str, property_id: str, text: str, where: str) -> str:
    if event_id == ANY_EVENT:
        found = EVENT_PROPERTY_TYPES.get(property_id)
    else:
        found = next(
            (p.data_type for p in catalog.event_properties(event_id) if p.id == property_id),
            None,
        )
    if found is None:
        raise BadRequest(f"unknown event property {property_id!r} in {text!r}", [where])
    return found


def parse_expression(text: object, where: str) -> EventExpr | PropertyExpr:
    """Parse and check any expression.

    :param text: the expression from the request.
    :param where: the request parameter it came from, named in a 400.
    :raises BadRequest: for a malformed expression or an id the tracking plan lacks.
    """
    if not isinstance(text, str) or not text:
        raise BadRequest(f"{where} must be a non-empty expression string", [where])
    parts = text.split(".")
    if parts[0] == "event" and len(parts) == 2 and parts[1]:
        return EventExpr(text, _event_id(parts[1], text, where))
    if parts[0] == "event" and len(parts) == 3 and parts[1] and parts[2]:
        event_id = _event_id(parts[1], text, where)
        data_type = _event_property_type(event_id, parts[2], text, where)
        return PropertyExpr(text, "event", event_id, parts[2], data_type)
    if parts[0] == "user" and len(parts) == 2 and parts[1]:
        found = catalog.user_property(parts[1])
        if found is None:
            raise BadRequest(f"unknown user property {parts[1]!r} in {text!r}", [where])
        return PropertyExpr(text, "user", None, parts[1], found.data_type)
    raise BadRequest(
        f"{where}: expected event.<event>, event.<event>.<property> or user.<property>, "
        f"got {text!r}",
        [where],
    )


def parse_event_expression(text: object, where: str) -> EventExpr:
    """An expression that must name an event (a funnel step, an event measure)."""
    parsed = parse_expression(text, where)
    if not isinstance(parsed, EventExpr):
        raise BadRequest(f"{where} must be an event expression event.<event>", [where])
    return parsed


def parse_property_expression(text: object, where: str) -> PropertyExpr:
    """An expression that must name a property (filters, splits)."""
    parsed = parse_expression(text, where)
    if not isinstance(parsed, PropertyExpr):
        raise BadRequest(
            f"{where} must name a property: event.<event>.<property> or user.<property>",
            [where],
        )
    return parsed
