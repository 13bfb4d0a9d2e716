"""The difference between the platform's tracking plan and the plan of a file (pure).

Each declared item becomes one :class:`Change`, following the spec's state table (section 3)
and its modify rules (4.10, 4.11):

- not on the platform: ``add``;
- on the platform outside the plan (``plan=0``): ``add``, which moves it into the plan with
  the file's name and remark;
- inside the plan with another name or remark: ``modify``;
- another data type: ``modify`` while no data has been reported (``dataStatus=0``), else a
  ``conflict`` that is never attempted;
- otherwise ``skip``.

Only the fields a file declares are compared; a field the platform's record does not carry
(user property records need not have ``remark``) cannot be compared and is left alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable

    from airflow_provider_analytics.plan.file import DesiredPlan, PlannedEvent

Record = Mapping[str, Any]


class ChangeKind(StrEnum):
    """What the sync does with one item."""

    ADD = "add"
    MODIFY = "modify"
    SKIP = "skip"
    CONFLICT = "conflict"


class Target(StrEnum):
    """Which kind of tracking plan item a change is about."""

    USER_PROPERTY = "user_property"
    EVENT = "event"
    EVENT_PROPERTY = "event_property"


@dataclass(frozen=True)
class FieldChange:
    """One field's value on the platform (``None`` when the item is new) and in the file."""

    old: Any
    new: Any


@dataclass(frozen=True)
class Change:
    """What to do with one item of the file.

    :param kind: add, modify, skip or conflict.
    :param target: user property, event or event property.
    :param id: the item's id.
    :param event_id: the event an event property belongs to (``None`` otherwise).
    :param fields: the fields that change, under the platform's names (``name``, ``remark``,
        ``dataType``, and ``plan`` when an add moves the item into the plan).
    :param declared: every field the file declares; an add submits all of them.
    :param reason: why a conflict cannot be applied.
    """

    kind: ChangeKind
    target: Target
    id: str
    event_id: str | None = None
    fields: Mapping[str, FieldChange] = field(default_factory=dict)
    declared: Mapping[str, str] = field(default_factory=dict)
    reason: str | None = None

    @property
    def label(self) -> str:
        """``<target> <id>``, with the event for event properties (``event_property a.b``)."""
        item = self.id if self.event_id is None else f"{self.event_id}.{self.id}"
        return f"{self.target} {item}"

    @property
    def moves_into_plan(self) -> bool:
        """An add of an item that exists outside the plan."""
        return "plan" in self.fields

    def describe(self) -> str:
        """One line for logs and error messages: the label, the fields and any reason."""
        parts = [f"{key} {value.old!r} -> {value.new!r}" for key, value in self.fields.items()]
        text = self.label + (f" ({', '.join(parts)})" if parts else "")
        return f"{text}: {self.reason}" if self.reason else text

    def as_dict(self) -> dict[str, Any]:
        """JSON-able summary: target, ids, changed fields (old and new) and any reason."""
        summary: dict[str, Any] = {"target": str(self.target), "id": self.id}
        if self.event_id is not None:
            summary["event_id"] = self.event_id
        summary["fields"] = {
            key: {"old": value.old, "new": value.new} for key, value in self.fields.items()
        }
        if self.reason is not None:
            summary["reason"] = self.reason
        return summary


@dataclass(frozen=True)
class LivePlan:
    """The platform's tracking plan as far as the sync needs it, keyed by id.

    :param user_properties: user property records (spec 2.2) by id.
    :param events: event records (spec 2.3) by id.
    :param event_properties: for each listed event, its property records (spec 2.4) by id,
        its own and the common (``global=1``) ones.
    """

    user_properties: Mapping[str, Record] = field(default_factory=dict)
    events: Mapping[str, Record] = field(default_factory=dict)
    event_properties: Mapping[str, Mapping[str, Record]] = field(default_factory=dict)

    @classmethod
    def from_records(
        cls,
        user_properties: Iterable[Record],
        events: Iterable[Record],
        event_properties: Mapping[str, Iterable[Record]],
    ) -> LivePlan:
        """Index the listings of spec 4.5, 4.6 and 4.7 by id.

        :param user_properties: records of 4.5.
        :param events: records of 4.6.
        :param event_properties: event id -> records of 4.7 for that event.
        """
        return cls(
            {r["id"]: r for r in user_properties},
            {r["id"]: r for r in events},
            {event: {r["id"]: r for r in records} for event, records in event_properties.items()},
        )

    def properties_of(self, event_id: str) -> Mapping[str, Record]:
        """An event's properties; an event not on the platform has only the common ones
        (``global=1``) seen on any listed event, which every event has."""
        if event_id in self.event_properties:
            return self.event_properties[event_id]
        return {
            prop_id: record
            for records in self.event_properties.values()
            for prop_id, record in records.items()
            if record.get("global") == 1
        }


def _differences(declared: Mapping[str, str], record: Record) -> dict[str, FieldChange]:
    # the platform writes an absent name or remark as null or as an empty string
    return {
        key: FieldChange(record[key], new)
        for key, new in declared.items()
        if key in record and ("" if record[key] is None else record[key]) != new
    }


def _has_data(record: Record) -> bool:
    """Whether data was reported; a record that does not say is treated as having data."""
    return record.get("dataStatus", 1) != 0


def _compare(
    target: Target,
    item_id: str,
    declared: Mapping[str, str],
    record: Record | None,
    event_id: str | None = None,
) -> Change:
    """The change for one item under the rules of the module docstring."""
    base = Change(ChangeKind.SKIP, target, item_id, event_id, declared=dict(declared))
    if record is None:
        if item_id.startswith("$"):
            reason = "preset items ($ ids) cannot be created, and the platform has none by this id"
            return replace(base, kind=ChangeKind.CONFLICT, reason=reason)
        added = {key: FieldChange(None, value) for key, value in declared.items()}
        return replace(base, kind=ChangeKind.ADD, fields=added)
    fields = _differences(declared, record)
    if "dataType" in fields and _has_data(record):
        old, new = fields["dataType"].old, fields["dataType"].new
        reason = f"data was reported, so the data type cannot change from {old} to {new}"
        return replace(base, kind=ChangeKind.CONFLICT, fields=fields, reason=reason)
    if record.get("plan", 1) == 0:
        return replace(base, kind=ChangeKind.ADD, fields={"plan": FieldChange(0, 1), **fields})
    if fields:
        return replace(base, kind=ChangeKind.MODIFY, fields=fields)
    return base


def _event_changes(event: PlannedEvent, live: LivePlan) -> list[Change]:
    event_change = _compare(Target.EVENT, event.id, event.declared(), live.events.get(event.id))
    changes = [event_change]
    known = live.properties_of(event.id)
    for prop in event.properties:
        if event_change.kind is ChangeKind.CONFLICT:
            blocked = Change(
                ChangeKind.CONFLICT,
                Target.EVENT_PROPERTY,
                prop.id,
                event.id,
                declared=prop.declared(),
                reason=f"its event {event.id} cannot be added",
            )
            changes.append(blocked)
            continue
        record = known.get(prop.id)
        changes.append(
            _compare(Target.EVENT_PROPERTY, prop.id, prop.declared(), record, event_id=event.id)
        )
    return changes


def plan_changes(live: LivePlan, desired: DesiredPlan) -> list[Change]:
    """One change per item of ``desired``: user properties first, then each event followed
    by its properties, in file order.

    :param live: the platform's plan (see :class:`LivePlan`).
    :param desired: the checked plan of the file.
    """
    changes = [
        _compare(Target.USER_PROPERTY, p.id, p.declared(), live.user_properties.get(p.id))
        for p in desired.user_properties
    ]
    for event in desired.events:
        changes.extend(_event_changes(event, live))
    return changes


def untracked(live: LivePlan, desired: DesiredPlan) -> dict[str, int]:
    """How many items the platform has that the file does not declare (left alone).

    Event properties are counted for the file's events only, without the common ones.

    :param live: the platform's plan.
    :param desired: the plan of the file.
    """
    user_ids = {p.id for p in desired.user_properties}
    event_ids = {e.id for e in desired.events}
    own_properties = 0
    for event in desired.events:
        declared = {p.id for p in event.properties}
        records = live.event_properties.get(event.id, {})
        own_properties += sum(
            1 for pid, r in records.items() if r.get("global") != 1 and pid not in declared
        )
    return {
        "user_properties": sum(1 for pid in live.user_properties if pid not in user_ids),
        "events": sum(1 for eid in live.events if eid not in event_ids),
        "event_properties": own_properties,
    }
