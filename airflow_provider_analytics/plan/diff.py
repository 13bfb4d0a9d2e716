"""The difference between the platform's tracking plan and the plan of a file (pure).

Each declared item becomes one :class:`Change` by the spec's state table (section 3) and modify
rules (4.10, 4.11): not on the platform, or outside the plan (``plan=0``, moved in): ``add``;
another name or remark: ``modify``; another data type: ``modify`` while no data was reported
(``dataStatus=0``), else a ``conflict`` never attempted; otherwise ``skip``. A preset item
(``$`` id) that would be added, and a common property that the file declares with other values
under two events, are conflicts too. Only the fields the file declares and the record carries
are compared.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from airflow_provider_analytics.plan.file import DesiredPlan, PlannedEvent, PlannedProperty

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
    """What to do with one item of the file: the ``fields`` that change under the platform's
    names (``plan`` when an add moves the item into the plan), every field ``declared`` (an add
    submits them all), and the ``reason`` a conflict cannot be applied."""

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
        fields = {key: {"old": value.old, "new": value.new} for key, value in self.fields.items()}
        summary = dict(target=str(self.target), id=self.id, event_id=self.event_id, fields=fields)
        summary["reason"] = self.reason
        return {key: value for key, value in summary.items() if value is not None}


@dataclass(frozen=True)
class LivePlan:
    """The platform's tracking plan as far as the sync needs it: records (spec 2.2-2.4) by id,
    for each listed event its own and the common (``global=1``) properties."""

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
        """Index the listings of spec 4.5, 4.6 and 4.7 (by event id) by id."""
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


def _compare(
    target: Target,
    item: PlannedProperty | PlannedEvent,
    record: Record | None,
    event_id: str | None,
) -> Change:
    """The change for one item under the rules of the module docstring."""
    declared = item.declared()
    base = Change(ChangeKind.SKIP, target, item.id, event_id, declared=declared)
    if item.id.startswith("$") and (record is None or record.get("plan", 1) == 0):
        reason = (
            "preset items ($ ids) cannot be created, and the platform has none by this id"
            if record is None
            else "a preset item ($ id) outside the plan cannot be moved into it: the add that "
            "moves an item takes no $ id (spec 2.5)"
        )
        return replace(base, kind=ChangeKind.CONFLICT, reason=reason)
    if record is None:
        added = {key: FieldChange(None, value) for key, value in declared.items()}
        return replace(base, kind=ChangeKind.ADD, fields=added)
    fields = {  # the platform writes an absent name or remark as null or as ""
        key: FieldChange(record[key], new)
        for key, new in declared.items()
        if key in record and ("" if record[key] is None else record[key]) != new
    }
    if "dataType" in fields and record.get("dataStatus", 1) != 0:  # unsaid: has data
        old, new = fields["dataType"].old, fields["dataType"].new
        reason = f"data was reported, so the data type cannot change from {old} to {new}"
        return replace(base, kind=ChangeKind.CONFLICT, fields=fields, reason=reason)
    if record.get("plan", 1) == 0:
        # the add that moves it in gives it the submitted name and remark (spec 4.8, 4.9): an
        # undeclared one is submitted as the platform has it, not left out (cleared)
        kept = {key: record.get(key) for key in ("name", "remark") if key not in declared}
        submitted = {**{key: value for key, value in kept.items() if value}, **declared}
        moved = {"plan": FieldChange(0, 1), **fields}
        return replace(base, kind=ChangeKind.ADD, fields=moved, declared=submitted)
    if fields:
        return replace(base, kind=ChangeKind.MODIFY, fields=fields)
    return base


def declared_items(
    live: LivePlan, desired: DesiredPlan
) -> Iterator[tuple[Target, PlannedProperty | PlannedEvent, Record | None, str | None]]:
    """Each item of ``desired`` with the platform's record of it (``None``: none) and, for an
    event property, its event: user properties first, then each event followed by its
    properties, in file order."""
    for prop in desired.user_properties:
        yield Target.USER_PROPERTY, prop, live.user_properties.get(prop.id), None
    for event in desired.events:
        yield Target.EVENT, event, live.events.get(event.id), None
        known = live.properties_of(event.id)
        for prop in event.properties:
            yield Target.EVENT_PROPERTY, prop, known.get(prop.id), event.id


def _contradicted(live: LivePlan, desired: DesiredPlan) -> dict[str, str]:
    """The common properties (``global=1``: one property that every event has) that the file
    declares under two events with a field set to two values, each with the reason: applied
    one after the other, every run would change it back."""
    first: dict[str, tuple[str | None, dict[str, str]]] = {}
    reasons: dict[str, str] = {}
    for target, item, record, event_id in declared_items(live, desired):
        if target is not Target.EVENT_PROPERTY or record is None or record.get("global") != 1:
            continue
        earlier_event, earlier = first.setdefault(item.id, (event_id, item.declared()))
        declared = item.declared()
        if any(earlier[key] != value for key, value in declared.items() if key in earlier):
            reasons.setdefault(
                item.id,
                f"a common property, declared with other values under {earlier_event} and "
                f"{event_id}: the file must declare it alike",
            )
    return reasons


def plan_changes(live: LivePlan, desired: DesiredPlan) -> list[Change]:
    """One change per item of ``desired``, in the order of :func:`declared_items`; the
    properties of an event that cannot be added are in conflict too, and so is each
    declaration of a common property that the file declares with other values elsewhere."""
    contradicted = _contradicted(live, desired)
    changes: list[Change] = []
    for target, item, record, event_id in declared_items(live, desired):
        change = _compare(target, item, record, event_id)
        if target is Target.EVENT:
            event_change = change
        elif event_id is not None and event_change.kind is ChangeKind.CONFLICT:
            reason = f"its event {event_id} cannot be added"
            change = replace(change, kind=ChangeKind.CONFLICT, fields={}, reason=reason)
        elif item.id in contradicted and record and record.get("global") == 1:
            change = replace(change, kind=ChangeKind.CONFLICT, reason=contradicted[item.id])
        changes.append(change)
    return changes


def untracked(live: LivePlan, desired: DesiredPlan) -> dict[str, int]:
    """How many items the platform has that the file does not declare (left alone); event
    properties of the file's events only, the common ones left out."""
    own = 0
    for event in desired.events:
        declared = {p.id for p in event.properties}
        records = live.event_properties.get(event.id, {})
        own += sum(1 for pid, r in records.items() if r.get("global") != 1 and pid not in declared)
    return {
        "user_properties": len(
            live.user_properties.keys() - {p.id for p in desired.user_properties}
        ),
        "events": len(live.events.keys() - {e.id for e in desired.events}),
        "event_properties": own,
    }
