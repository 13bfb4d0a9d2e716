"""Keep the platform's tracking plan in line with a plan file: read, compare, apply.

The work behind ``TrackingPlanSyncOperator``, usable without Airflow. The live plan is read
(spec 4.5, 4.6, and 4.7 for each event of the file), compared with the file
(:func:`~airflow_provider_analytics.plan.diff.plan_changes`) and the adds and
modifications are sent with 4.8 to 4.11. Conflicts (a data type that cannot change because
data was reported) are never attempted; by default their presence stops the sync before any
write. Running the same file again finds nothing to do.

A change a person should approve first is previewed (``dry_run``), reviewed (the preview's
:meth:`SyncResult.review`), then applied with the reviewed result (``reviewed``): the apply
reads the plan again and sends nothing unless it finds exactly the reviewed difference, computed
from the same platform records (``live_digest``).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.core.errors import AnalyticsError
from airflow_provider_analytics.plan.diff import (
    Change,
    ChangeKind,
    LivePlan,
    Target,
    plan_changes,
    untracked,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from airflow_provider_analytics.client import AnalyticsClient
    from airflow_provider_analytics.plan.diff import FieldChange
    from airflow_provider_analytics.plan.file import DesiredPlan

log = logging.getLogger(__name__)

_WRITES = (ChangeKind.ADD, ChangeKind.MODIFY)
_CLIENT_ARGUMENTS = {"name": "name", "remark": "remark", "dataType": "data_type"}


class TrackingPlanConflictError(AnalyticsError):
    """The file asks for changes the platform does not allow; nothing was applied.

    :param conflicts: the conflicting changes.
    """

    def __init__(self, conflicts: Sequence[Change]) -> None:
        listing = "\n".join(f"  - {c.describe()}" for c in conflicts)
        super().__init__(
            f"{len(conflicts)} conflict(s) between the tracking plan file and the platform; "
            f"nothing was applied:\n{listing}\n"
            "Align the file with the platform, or set apply_despite_conflicts=True to apply "
            "every other change."
        )
        self.conflicts = [c.as_dict() for c in conflicts]


class TrackingPlanChangedError(AnalyticsError):
    """The difference found now is not the one a person reviewed (the platform's plan or the
    file changed since the preview); nothing was applied."""


@dataclass(frozen=True)
class SyncResult:
    """What a sync found and did.

    :param changes: every planned change, in order.
    :param untracked: counts of platform items the file does not declare.
    :param dry_run: whether writes were left out.
    :param live_digest: names the platform's records of the file's items the difference was
        computed from (:func:`live_digest`).
    """

    changes: Sequence[Change]
    untracked: Mapping[str, int] = field(default_factory=dict)
    dry_run: bool = False
    live_digest: str = ""

    def of_kind(self, kind: ChangeKind) -> list[Change]:
        """The changes of one kind, in order."""
        return [c for c in self.changes if c.kind is kind]

    def as_dict(self) -> dict[str, Any]:
        """Small JSON-able summary (the operator's XCom)."""
        return {
            "added": [c.as_dict() for c in self.of_kind(ChangeKind.ADD)],
            "modified": [c.as_dict() for c in self.of_kind(ChangeKind.MODIFY)],
            "skipped": len(self.of_kind(ChangeKind.SKIP)),
            "conflicts": [c.as_dict() for c in self.of_kind(ChangeKind.CONFLICT)],
            "untracked": dict(self.untracked),
            "dry_run": self.dry_run,
            "live_digest": self.live_digest,
        }

    def review(self) -> str:
        """The difference as Markdown for the person approving it (Airflow's approval page):
        what is added, modified or in conflict, field by field, and what is left alone."""
        counts = {kind: len(self.of_kind(kind)) for kind in ChangeKind}
        lines = [
            f"**Tracking plan**: {counts[ChangeKind.ADD]} to add, "
            f"{counts[ChangeKind.MODIFY]} to modify, {counts[ChangeKind.SKIP]} unchanged, "
            f"{counts[ChangeKind.CONFLICT]} conflict(s).",
            "",
        ]
        listed = [c for c in self.changes if c.kind is not ChangeKind.SKIP]
        if listed:
            lines += ["| change | item | fields |", "| --- | --- | --- |"]
            for change in listed:
                fields = [f"{k}: {v.old!r} → {v.new!r}" for k, v in change.fields.items()]
                cell = "; ".join([*fields, *filter(None, [change.reason])])
                cell = cell.replace("|", "\\|").replace("\n", " ")
                lines.append(f"| {change.kind} | {change.label} | {cell} |")
            lines.append("")
        unchanged = ", ".join(c.label for c in self.of_kind(ChangeKind.SKIP)) or "none"
        untouched = ", ".join(f"{n} {what.replace('_', ' ')}" for what, n in self.untracked.items())
        lines.append(f"Left as they are: {unchanged}. Not in the file, untouched: {untouched}.")
        return "\n".join(lines)


def live_digest(live: LivePlan, desired: DesiredPlan) -> str:
    """A digest of the platform's record of every item the file declares (none where it has
    none): the records the difference is computed from. Items the file does not declare are
    left out, so a change elsewhere on the platform does not void a review."""
    records: dict[str, Any] = {}
    for prop in desired.user_properties:
        records[f"user_property {prop.id}"] = live.user_properties.get(prop.id)
    for event in desired.events:
        records[f"event {event.id}"] = live.events.get(event.id)
        known = live.properties_of(event.id)
        for item in event.properties:
            records[f"event_property {event.id}.{item.id}"] = known.get(item.id)
    text = json.dumps(records, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def check_reviewed(result: SyncResult, reviewed: Any) -> None:
    """Refuse, before any write, a difference other than the one a person reviewed.

    :param result: the difference found now.
    :param reviewed: the preview's result (:meth:`SyncResult.as_dict`, e.g. its XCom).
    :raises TrackingPlanChangedError: naming what changed since the preview.
    """
    if not isinstance(reviewed, Mapping) or reviewed.get("dry_run") is not True:
        raise TrackingPlanChangedError(
            "the reviewed result is not a preview's (a dry run's result); nothing was applied"
        )
    now = result.as_dict()
    changed = []
    if now["live_digest"] != reviewed.get("live_digest"):
        changed.append("the platform's records of the file's items")
    differing = [k for k in ("added", "modified", "conflicts") if now[k] != reviewed.get(k)]
    if differing:
        changed.append(f"the difference ({', '.join(differing)})")
    if changed:
        raise TrackingPlanChangedError(
            f"{' and '.join(changed)} changed since the preview that was reviewed; nothing was "
            "applied. Run the preview again and review its result."
        )


def read_live_plan(client: AnalyticsClient, desired: DesiredPlan) -> LivePlan:
    """The platform's user properties and events, and the properties of the file's events
    that exist on the platform.

    :param client: the platform.
    :param desired: the file's plan (names the events whose properties are read).
    """
    user_properties = client.list_user_properties()
    events = client.list_events()
    existing = {record.get("id") for record in events}
    event_properties = {
        event.id: client.list_event_properties(event.id)
        for event in desired.events
        if event.id in existing
    }
    return LivePlan.from_records(user_properties, events, event_properties)


@dataclass(frozen=True)
class _Request:
    """One client call and the changes it completes (none for a preparatory retype)."""

    method: str
    args: tuple[str, ...]
    arguments: Mapping[str, Any] = field(default_factory=dict)
    completes: tuple[Change, ...] = ()

    def send(self, client: AnalyticsClient) -> None:
        getattr(client, self.method)(*self.args, **self.arguments)


def _arguments(fields: Mapping[str, FieldChange]) -> dict[str, Any]:
    """Client keyword arguments for the changed fields (``plan`` is not a field one sets)."""
    return {_CLIENT_ARGUMENTS[k]: v.new for k, v in fields.items() if k in _CLIENT_ARGUMENTS}


def _retype_first(change: Change) -> bool:
    """An item outside the plan with another data type: the add would be refused, so its
    type (changeable: no data reported) is set before the add."""
    return change.kind is ChangeKind.ADD and change.moves_into_plan and "dataType" in change.fields


def _retype(method: str, args: tuple[str, ...], change: Change) -> _Request:
    return _Request(method, args, {"data_type": change.fields["dataType"].new})


def _user_property_requests(change: Change) -> list[_Request]:
    requests = []
    if _retype_first(change):
        requests.append(_retype("update_user_property", (change.id,), change))
    if change.kind is ChangeKind.ADD:
        declared = change.declared
        arguments = {"name": declared.get("name"), "remark": declared.get("remark")}
        requests.append(
            _Request("add_user_property", (change.id, declared["dataType"]), arguments, (change,))
        )
    else:
        requests.append(
            _Request("update_user_property", (change.id,), _arguments(change.fields), (change,))
        )
    return requests


def _event_requests(event_id: str, changes: Sequence[Change]) -> list[_Request]:
    """Requests for one event and its properties: retypes, one add (4.9), then modifies."""
    event = next((c for c in changes if c.target is Target.EVENT), None)
    properties = [c for c in changes if c.target is Target.EVENT_PROPERTY]
    requests = [
        _retype("update_event_property", (event_id, p.id), p)
        for p in properties
        if _retype_first(p)
    ]
    added_event = (event,) if event is not None and event.kind is ChangeKind.ADD else ()
    added_properties = tuple(p for p in properties if p.kind is ChangeKind.ADD)
    if added_event or added_properties:
        declared = added_event[0].declared if added_event else {}
        definitions = [{"id": p.id, **p.declared} for p in added_properties]
        arguments = {
            "name": declared.get("name"),
            "remark": declared.get("remark"),
            "properties": definitions or None,
        }
        requests.append(
            _Request("add_event", (event_id,), arguments, added_event + added_properties)
        )
    if event is not None and event.kind is ChangeKind.MODIFY:
        requests.append(_Request("update_event", (event_id,), _arguments(event.fields), (event,)))
    requests.extend(
        _Request("update_event_property", (event_id, p.id), _arguments(p.fields), (p,))
        for p in properties
        if p.kind is ChangeKind.MODIFY
    )
    return requests


def _event_groups(changes: Iterable[Change]) -> dict[str, list[Change]]:
    """Event and event property changes by event id, in order of first appearance."""
    groups: dict[str, list[Change]] = {}
    for change in changes:
        if change.target is Target.EVENT:
            groups.setdefault(change.id, []).append(change)
        elif change.target is Target.EVENT_PROPERTY and change.event_id is not None:
            groups.setdefault(change.event_id, []).append(change)
    return groups


def _requests(changes: Sequence[Change]) -> list[_Request]:
    writes = [c for c in changes if c.kind in _WRITES]
    requests = []
    for change in writes:
        if change.target is Target.USER_PROPERTY:
            requests.extend(_user_property_requests(change))
    for event_id, group in _event_groups(writes).items():
        requests.extend(_event_requests(event_id, group))
    return requests


def apply_changes(client: AnalyticsClient, changes: Sequence[Change]) -> list[Change]:
    """Send the adds and modifications among ``changes``; skips and conflicts send nothing.

    User properties go first, then each event with its properties in one add (spec 4.9)
    followed by the modifications. One log line per completed change. If a request fails,
    the error is raised after logging how far the sync got; rerunning is safe because the
    difference is computed afresh.

    :param client: the platform.
    :param changes: as planned by ``plan_changes``.
    :returns: the changes completed, in the order they were sent.
    """
    requests = _requests(changes)
    total = sum(len(r.completes) for r in requests)
    applied: list[Change] = []
    for request in requests:
        try:
            request.send(client)
        except AnalyticsError:
            log.error(
                "Tracking plan sync stopped after %d of %d change(s); rerun it to finish",
                len(applied),
                total,
            )
            raise
        for change in request.completes:
            verb = "Added" if change.kind is ChangeKind.ADD else "Modified"
            log.info("%s %s", verb, change.describe())
            applied.append(change)
    return applied


def sync_tracking_plan(
    client: AnalyticsClient,
    desired: DesiredPlan,
    *,
    dry_run: bool = False,
    apply_despite_conflicts: bool = False,
    reviewed: Mapping[str, Any] | None = None,
) -> SyncResult:
    """Bring the platform's plan in line with ``desired``.

    :param client: the platform.
    :param desired: the checked plan of the file.
    :param dry_run: only read and compare; the result lists what would change.
    :param apply_despite_conflicts: apply everything else when there are conflicts (they stay
        in the result); by default conflicts stop the sync before any write.
    :param reviewed: the result of the preview (``dry_run``) a person approved: apply only if
        the difference found now is exactly that one, from the same platform records.
    :raises TrackingPlanConflictError: conflicts, unless ``dry_run`` or
        ``apply_despite_conflicts``.
    :raises TrackingPlanChangedError: the difference is not the ``reviewed`` one.
    """
    live = read_live_plan(client, desired)
    changes = plan_changes(live, desired)
    digest = live_digest(live, desired)
    result = SyncResult(changes, untracked(live, desired), dry_run=dry_run, live_digest=digest)
    conflicts = result.of_kind(ChangeKind.CONFLICT)
    for conflict in conflicts:
        log.warning("Conflict, not applied: %s", conflict.describe())
    if dry_run:
        for change in changes:
            if change.kind in _WRITES:
                log.info("Would %s %s", change.kind, change.describe())
        return result
    if reviewed is not None:
        check_reviewed(result, reviewed)
    if conflicts and not apply_despite_conflicts:
        raise TrackingPlanConflictError(conflicts)
    apply_changes(client, changes)
    log.info(
        "Tracking plan in sync: %d added, %d modified, %d unchanged, %d conflict(s)",
        len(result.of_kind(ChangeKind.ADD)),
        len(result.of_kind(ChangeKind.MODIFY)),
        len(result.of_kind(ChangeKind.SKIP)),
        len(conflicts),
    )
    return result
