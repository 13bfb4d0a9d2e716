"""The cohorts a running emulator serves: each one's size, proxy cut and membership change,
and how many calls it has had (which decides its current members)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from analytics_emulator.cohort_settings import Membership, membership

if TYPE_CHECKING:
    from collections.abc import Mapping

    from analytics_emulator.cohort_settings import MembershipChange, ProxyCut


@dataclass(frozen=True)
class CohortCall:
    """What one call to a cohort sees: its members, and the proxy cut in front of its stream."""

    members: Membership
    proxy_cut: ProxyCut | None


class CohortBook:
    """Cohorts by code, thread safe.

    :param sizes: code -> number of users at the start.
    :param proxy_cuts: code -> the proxy cut in front of its stream.
    :param membership_changes: code -> how its membership changes between calls.
    """

    def __init__(
        self,
        sizes: Mapping[str, int],
        proxy_cuts: Mapping[str, ProxyCut] | None = None,
        membership_changes: Mapping[str, MembershipChange] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._seeded = (dict(sizes), dict(proxy_cuts or {}), dict(membership_changes or {}))
        self.reset()

    def reset(self) -> None:
        """Back to the configured cohorts, with no call counted."""
        sizes, cuts, changes = self._seeded
        with self._lock:
            self._sizes = dict(sizes)
            self._cuts = dict(cuts)
            self._changes = dict(changes)
            self._calls: dict[str, int] = {}

    @property
    def sizes(self) -> dict[str, int]:
        """Code -> size before any membership change (what analyses filter by)."""
        with self._lock:
            return dict(self._sizes)

    def __contains__(self, code: object) -> bool:
        with self._lock:
            return code in self._sizes

    def define(
        self,
        code: str,
        size: int,
        *,
        proxy_cut: ProxyCut | None,
        membership_change: MembershipChange | None,
    ) -> None:
        """Add or replace a cohort (until the next reset); its call count starts again."""
        with self._lock:
            self._sizes[code] = size
            self._cuts.pop(code, None)
            self._changes.pop(code, None)
            if proxy_cut is not None:
                self._cuts[code] = proxy_cut
            if membership_change is not None:
                self._changes[code] = membership_change
            self._calls.pop(code, None)

    def call(self, code: str) -> CohortCall:
        """Count one call to ``code`` and return what it sees.

        :raises KeyError: for an unknown code.
        """
        with self._lock:
            size = self._sizes[code]
            earlier = self._calls.get(code, 0)
            self._calls[code] = earlier + 1
            members = membership(size, self._changes.get(code), earlier)
            return CohortCall(members, self._cuts.get(code))

    def describe(self) -> dict[str, dict[str, Any]]:
        """Every cohort's settings and calls so far, for the admin API."""
        with self._lock:
            return {
                code: {
                    "size": size,
                    "calls": self._calls.get(code, 0),
                    "proxy_cut": _public(self._cuts.get(code)),
                    "membership_change": _public(self._changes.get(code)),
                }
                for code, size in self._sizes.items()
            }


def _public(setting: ProxyCut | MembershipChange | None) -> dict[str, Any] | None:
    return None if setting is None else setting.public()
