"""The project's tracking plan: user properties, events and event properties (spec 2.2-2.4, 3).

Starts as a copy of :mod:`.catalog` and follows the spec's state table:

- adding an item that exists outside the plan (``plan=0``) moves it inside and gives it
  the submitted name and remark;
- adding an item already inside the plan with the same data type is skipped silently;
- adding an item that exists with a *different* data type is refused with a 400 naming
  ``dataType``. The spec only describes the equal-type case; silently keeping the old
  type would hide a client bug, and silently changing it would contradict the rule that
  a type may change only while no data is reported, so the emulator refuses;
- adding a new id creates it inside the plan with ``dataStatus=0`` (nothing reported);
- modifying changes only the fields sent; ``dataType`` may change only while
  ``dataStatus == 0``.

All methods are thread-safe; listings return copies.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from analytics_emulator import catalog
from analytics_emulator.errors import BadRequest

if TYPE_CHECKING:
    from collections.abc import Iterable

Record = dict[str, Any]


@dataclass(frozen=True)
class ItemSpec:
    """An item named in an add request, already validated.

    :param param: the request path of the item (``""`` or ``properties[2]``), used to name
        offending parameters.
    """

    id: str
    name: str | None = None
    remark: str | None = None
    data_type: str | None = None
    param: str = ""

    def field(self, key: str) -> str:
        return f"{self.param}.{key}" if self.param else key


@dataclass(frozen=True)
class Changes:
    """Fields a modify request sends; None means not sent."""

    name: str | None = None
    remark: str | None = None
    data_type: str | None = None


def _user_property_record(p: catalog.UserProperty) -> Record:
    return {**p.as_record(), "remark": p.remark}


def _matches(record: Record, plan: int | None, data_status: int | None) -> bool:
    return (plan is None or record["plan"] == plan) and (
        data_status is None or record["dataStatus"] == data_status
    )


def _new_user_property(spec: ItemSpec) -> Record:
    name = spec.name or spec.id
    data_type = spec.data_type or "string"
    return _user_property_record(
        catalog.UserProperty(spec.id, name, data_type, data_status=0, remark=spec.remark or "")
    )


def _new_event_property(spec: ItemSpec, preset: int) -> Record:
    return catalog.EventProperty(
        spec.id,
        spec.name or spec.id,
        spec.data_type or "string",
        preset=preset,
        data_status=0,
        remark=spec.remark or "",
    ).as_record()


class TrackingPlan:
    """User properties, events and their properties, keyed by id in catalog order."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._user: dict[str, Record] = {
            p.id: _user_property_record(p) for p in catalog.USER_PROPERTIES
        }
        self._events: dict[str, Record] = {e.id: e.as_record() for e in catalog.EVENTS}
        self._event_properties: dict[str, dict[str, Record]] = {
            e.id: {p.id: p.as_record() for p in e.properties} for e in catalog.EVENTS
        }
        self._global: dict[str, Record] = {
            p.id: p.as_record() for p in catalog.GLOBAL_EVENT_PROPERTIES
        }

    # Reading -------------------------------------------------------------------------

    def user_properties(
        self, *, plan: int | None = None, data_status: int | None = None
    ) -> list[Record]:
        """User property records (spec 2.2, plus ``remark``) matching the filters."""
        with self._lock:
            return [dict(r) for r in self._user.values() if _matches(r, plan, data_status)]

    def events(self, *, plan: int | None = None, data_status: int | None = None) -> list[Record]:
        with self._lock:
            return [dict(r) for r in self._events.values() if _matches(r, plan, data_status)]

    def event_properties(
        self, event_id: str, *, plan: int | None = None, data_status: int | None = None
    ) -> list[Record]:
        """Event-defined properties of ``event_id`` followed by the common ones.

        :raises BadRequest: naming ``eventId`` when the event does not exist.
        """
        with self._lock:
            self._event_or_fail(event_id, "eventId")
            records = [*self._event_properties[event_id].values(), *self._global.values()]
            return [dict(r) for r in records if _matches(r, plan, data_status)]

    def has_user_property(self, prop_id: str) -> bool:
        with self._lock:
            return prop_id in self._user

    def masked_user_properties(self) -> frozenset[str]:
        with self._lock:
            return frozenset(i for i, r in self._user.items() if r["masking"] == 1)

    def is_preset_user_property(self, prop_id: str) -> bool:
        with self._lock:
            return self._user.get(prop_id, {}).get("preset") == 1

    def is_preset_event(self, event_id: str) -> bool:
        with self._lock:
            return self._events.get(event_id, {}).get("preset") == 1

    def is_preset_event_property(self, prop_id: str) -> bool:
        """Whether any event (or the common set) has a preset property with this id."""
        with self._lock:
            return any(r.get("preset") == 1 for r in self._all_event_property_records(prop_id))

    def _all_event_property_records(self, prop_id: str) -> Iterable[Record]:
        if prop_id in self._global:
            yield self._global[prop_id]
        for props in self._event_properties.values():
            if prop_id in props:
                yield props[prop_id]

    # Adding --------------------------------------------------------------------------

    def add_user_property(self, spec: ItemSpec) -> None:
        """Spec 4.8 under the rules of the module docstring."""
        with self._lock:
            existing = self._user.get(spec.id)
            if existing is None:
                self._user[spec.id] = _new_user_property(spec)
                return
            _check_same_type(existing, spec)
            _move_into_plan(existing, spec)

    def add_event(self, event: ItemSpec, properties: list[ItemSpec]) -> None:
        """Spec 4.9: the event and each of its properties, all or nothing."""
        with self._lock:
            existing = self._events.get(event.id)
            own = self._event_properties.get(event.id, {})
            for spec in properties:
                found = own.get(spec.id) or self._global.get(spec.id)
                if found is not None:
                    _check_same_type(found, spec)
                else:
                    self._check_preset_type(spec)
            if existing is None:
                self._events[event.id] = catalog.Event(
                    event.id, event.name or event.id, data_status=0, remark=event.remark or ""
                ).as_record()
                self._event_properties[event.id] = own = {}
            else:
                _move_into_plan(existing, event)
            for spec in properties:
                found = own.get(spec.id) or self._global.get(spec.id)
                if found is None:
                    preset = 1 if spec.id.startswith("$") else 0
                    own[spec.id] = _new_event_property(spec, preset)
                else:
                    _move_into_plan(found, spec)

    def _check_preset_type(self, spec: ItemSpec) -> None:
        """A ``$`` property new to this event must keep the preset item's data type."""
        for record in self._all_event_property_records(spec.id):
            _check_same_type(record, spec)

    # Modifying -----------------------------------------------------------------------

    def update_user_property(self, prop_id: str, changes: Changes) -> None:
        """Spec 4.10.

        :raises BadRequest: naming ``id`` for an unknown property, ``dataType`` for a type
            change after data was reported.
        """
        with self._lock:
            record = self._user.get(prop_id)
            if record is None:
                raise BadRequest(f"user property {prop_id!r} does not exist", ["id"])
            _apply(record, changes)

    def update_event(self, event_id: str, changes: Changes) -> None:
        with self._lock:
            _apply(self._event_or_fail(event_id, "id"), changes)

    def update_event_property(self, event_id: str, prop_id: str, changes: Changes) -> None:
        with self._lock:
            self._event_or_fail(event_id, "eventId")
            record = self._event_properties[event_id].get(prop_id) or self._global.get(prop_id)
            if record is None:
                raise BadRequest(f"event {event_id!r} has no property {prop_id!r}", ["propertyId"])
            _apply(record, changes)

    def set_data_status(
        self,
        *,
        status: int,
        event_id: str | None = None,
        event_property_id: str | None = None,
        user_property_id: str | None = None,
    ) -> None:
        """Flip whether data was reported for an item (an administrative shortcut)."""
        with self._lock:
            if user_property_id is not None:
                record = self._user.get(user_property_id)
                if record is None:
                    raise BadRequest("unknown user property", ["userProperty"])
            elif event_id is None:
                raise BadRequest("name an event or a user property", ["event"])
            elif event_property_id is None:
                record = self._event_or_fail(event_id, "event")
            else:
                self._event_or_fail(event_id, "event")
                record = self._event_properties[event_id].get(
                    event_property_id
                ) or self._global.get(event_property_id)
                if record is None:
                    raise BadRequest("unknown event property", ["property"])
            record["dataStatus"] = status

    def _event_or_fail(self, event_id: str, param: str) -> Record:
        record = self._events.get(event_id)
        if record is None:
            raise BadRequest(f"event {event_id!r} does not exist", [param])
        return record


def _check_same_type(record: Record, spec: ItemSpec) -> None:
    if spec.data_type is not None and record["dataType"] != spec.data_type:
        raise BadRequest(
            f"{record['id']!r} already exists with data type {record['dataType']}",
            [spec.field("dataType")],
        )


def _move_into_plan(record: Record, spec: ItemSpec) -> None:
    """Outside the plan: move in with the submitted name and remark. Inside: no change."""
    if record["plan"] == 1:
        return
    record["plan"] = 1
    if spec.name is not None:
        record["name"] = spec.name
    if spec.remark is not None:
        record["remark"] = spec.remark


def _apply(record: Record, changes: Changes) -> None:
    if changes.data_type is not None and changes.data_type != record.get("dataType"):
        if "dataType" not in record:
            raise BadRequest("events have no data type", ["dataType"])
        if record["dataStatus"] == 1:
            raise BadRequest(
                f"the data type of {record['id']!r} cannot change: data was reported",
                ["dataType"],
            )
        record["dataType"] = changes.data_type
    if changes.name is not None:
        record["name"] = changes.name
    if changes.remark is not None:
        record["remark"] = changes.remark
