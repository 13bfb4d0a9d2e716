"""Keep the platform's tracking plan in line with a plan file: read, compare, apply.

The work behind ``TrackingPlanSyncOperator``, usable without Airflow: the live plan is read
(spec 4.5-4.7), compared with the file (:func:`~airflow_provider_analytics.plan.diff.plan_changes`)
and the adds and modifications sent (4.8-4.11). Conflicts are never attempted and by default
stop the sync before any write; the same file again finds nothing to do. A change to approve
first is previewed (``dry_run``), reviewed (:meth:`SyncResult.review`), then applied with the
reviewed result, which sends nothing unless it finds exactly that difference again.
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
    declared_items,
    plan_changes,
    untracked,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow_provider_analytics.client import AnalyticsClient
    from airflow_provider_analytics.plan.diff import FieldChange
    from airflow_provider_analytics.plan.file import DesiredPlan

log = logging.getLogger(__name__)

_WRITES = (ChangeKind.ADD, ChangeKind.MODIFY)
_CLIENT_ARGUMENTS = {"name": "name", "remark": "remark", "dataType": "data_type"}


class TrackingPlanConflictError(AnalyticsError):
    """The file asks for changes the platform does not allow (``conflicts``); nothing was
    applied."""

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
    """What a sync found and did: every planned change in order, counts of the platform's
    items the file does not declare, whether writes were left out, and the
    :func:`live_digest` the difference was computed from."""

    changes: Sequence[Change]
    untracked: Mapping[str, int] = field(default_factory=dict)
    dry_run: bool = False
    live_digest: str = ""

    def of_kind(self, kind: ChangeKind) -> list[Change]:
        """The changes of one kind, in order."""
        return [c for c in self.changes if c.kind is kind]

    def counts(self) -> tuple[int, ...]:
        """How many changes of each kind: added, modified, skipped (unchanged), in conflict."""
        return tuple(len(self.of_kind(kind)) for kind in ChangeKind)

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
        adds, modifies, skips, conflicts = self.counts()
        lines = [
            f"**Tracking plan**: {adds} to add, {modifies} to modify, {skips} unchanged, "
            f"{conflicts} conflict(s).",
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
    records = {
        Change(ChangeKind.SKIP, target, item.id, event_id).label: record
        for target, item, record, event_id in declared_items(live, desired)
    }
    text = json.dumps(records, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def check_reviewed(result: SyncResult, reviewed: Any) -> None:
    """Refuse, before any write, a difference other than the one a person ``reviewed`` (the
    preview's :meth:`SyncResult.as_dict`), naming what changed since the preview."""
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
    that exist on the platform."""
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


def _arguments(fields: Mapping[str, FieldChange]) -> dict[str, Any]:
    """Client keyword arguments for the changed fields (``plan`` is not a field one sets)."""
    return {_CLIENT_ARGUMENTS[k]: v.new for k, v in fields.items() if k in _CLIENT_ARGUMENTS}


def _ids(change: Change) -> tuple[str, ...]:
    """The item's ids as the client's methods take them (an event property: event, then id)."""
    return (change.id,) if change.event_id is None else (change.event_id, change.id)


def _add(added: tuple[Change, ...]) -> _Request:
    """One add: a user property, or an event with its new properties (4.9)."""
    first = added[0]
    declared = {} if first.target is Target.EVENT_PROPERTY else first.declared
    arguments: dict[str, Any] = {"name": declared.get("name"), "remark": declared.get("remark")}
    if first.target is Target.USER_PROPERTY:
        return _Request("add_user_property", (first.id, declared["dataType"]), arguments, added)
    arguments["properties"] = [
        {"id": c.id, **c.declared} for c in added if c.target is Target.EVENT_PROPERTY
    ] or None
    return _Request("add_event", _ids(first)[:1], arguments, added)


def _requests(changes: Sequence[Change]) -> list[_Request]:
    """User properties first, then per event (in order of first appearance); for each: the
    retypes (an add of an item outside the plan with another data type would be refused, so
    its type, changeable while no data was reported, is set first), one add (an event with
    its new properties, 4.9), then the modifies."""
    groups: dict[tuple[str, ...], list[Change]] = {}
    for change in (c for c in changes if c.kind in _WRITES):
        user = change.target is Target.USER_PROPERTY  # else grouped by the event's id
        key = (change.target, change.id) if user else _ids(change)[:1]
        groups.setdefault(key, []).append(change)
    requests: list[_Request] = []
    for group in sorted(groups.values(), key=lambda g: g[0].target is not Target.USER_PROPERTY):
        # the event before its properties, however the changes were listed
        group.sort(key=lambda c: c.target is Target.EVENT_PROPERTY)
        added = tuple(c for c in group if c.kind is ChangeKind.ADD)
        requests += [
            _Request(f"update_{c.target}", _ids(c), {"data_type": c.fields["dataType"].new})
            for c in added
            if c.moves_into_plan and "dataType" in c.fields
        ]
        requests += [_add(added)] if added else []
        requests += [
            _Request(f"update_{c.target}", _ids(c), _arguments(c.fields), (c,))
            for c in group
            if c.kind is ChangeKind.MODIFY
        ]
    return requests


def apply_changes(client: AnalyticsClient, changes: Sequence[Change]) -> list[Change]:
    """Send the adds and modifications among ``changes`` (skips and conflicts send nothing) and
    return those completed, in order; one log line each. A failed request is raised after
    logging how far the sync got (rerunning is safe: the difference is computed afresh)."""
    requests = _requests(changes)
    total = sum(len(r.completes) for r in requests)
    applied: list[Change] = []
    for request in requests:
        try:
            getattr(client, request.method)(*request.args, **request.arguments)
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
    """Bring the platform's plan in line with ``desired`` (the checked plan of the file).

    :param client: the platform.
    :param desired: the checked plan of the file.
    :param dry_run: only read and compare; the result lists what would change.
    :param apply_despite_conflicts: apply everything else when there are conflicts (else
        :class:`TrackingPlanConflictError` stops the sync before any write).
    :param reviewed: the preview's result a person approved: apply only if the difference found
        now is exactly that one (else :class:`TrackingPlanChangedError`).
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
        *result.counts(),
    )
    return result
