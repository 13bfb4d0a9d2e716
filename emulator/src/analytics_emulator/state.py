"""Everything a running emulator remembers, and how to put it back to the seeded start.

The stores (tracking plan, ad tracking, accounts) guard themselves with their own locks;
this object swaps them as a whole on :meth:`EmulatorState.reset`. The synthetic event log
is built on first use (it takes a moment) and kept across resets; a hand-built log from
the admin API, or the log with events added through it (late arrivals), replaces it until
the next reset.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import TYPE_CHECKING, Any

from analytics_emulator.accounts import AccountStore
from analytics_emulator.campaigns import CampaignStore
from analytics_emulator.cohort_book import CohortBook
from analytics_emulator.connections import ConnectionRegistry
from analytics_emulator.export import DEFAULT_CACHE_BYTES, DEFAULT_CACHE_ROWS, BlockCache
from analytics_emulator.faults import FaultStore
from analytics_emulator.in_flight import InFlightRequests
from analytics_emulator.plan import TrackingPlan
from analytics_emulator.population import Population

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from datetime import date

    from analytics_emulator.cohort_settings import MembershipChange, ProxyCut
    from analytics_emulator.eventlog import EventLog


class RequestStats:
    """How many requests each operation received (faulted and refused ones included)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def count(self, operation: str) -> None:
        with self._lock:
            self._counts[operation] += 1

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)


class EmulatorState:
    """The emulator's memory.

    :param seed: seed of every synthetic value (population, ids, event log).
    :param cohorts: cohort code -> size; a cohort of size N holds users 0..N-1.
    :param app_key: the project key ad tracking records carry.
    :param export_cache_bytes: cap of the encoded export block cache.
    :param export_cache_rows: largest cohort whose export blocks are cached.
    :param proxy_cuts: cohort code -> the proxy cut in front of its stream.
    :param membership_changes: cohort code -> how its membership changes between calls.
    """

    def __init__(
        self,
        *,
        seed: int,
        cohorts: Mapping[str, int],
        app_key: str,
        export_cache_bytes: int = DEFAULT_CACHE_BYTES,
        export_cache_rows: int = DEFAULT_CACHE_ROWS,
        proxy_cuts: Mapping[str, ProxyCut] | None = None,
        membership_changes: Mapping[str, MembershipChange] | None = None,
    ) -> None:
        self.seed = seed
        self.cohort_book = CohortBook(cohorts, proxy_cuts, membership_changes)
        self.export_cache_rows = export_cache_rows
        self.app_key = app_key
        self.population = Population(seed)
        self.export_blocks = BlockCache(export_cache_bytes)
        self.connections = ConnectionRegistry()
        self.faults = FaultStore()
        self.in_flight = InFlightRequests()
        self._lock = threading.Lock()
        self._log_lock = threading.Lock()
        self._generated_log: EventLog | None = None
        self.reset()

    @property
    def cohorts(self) -> dict[str, int]:
        """Cohort code -> size (before any membership change)."""
        return self.cohort_book.sizes

    def reset(self) -> None:
        """Back to the seeded start: plan, ad tracking, accounts, faults, data-until, stats,
        masked values, event log, and the configured cohorts with no call counted."""
        with self._lock:
            self.plan = TrackingPlan()
            self.campaigns = CampaignStore(self.seed, self.app_key)
            self.accounts = AccountStore(self.seed)
            self.stats = RequestStats()
            self.data_until: date | None = None
            self.masked_overrides: frozenset[str] = frozenset()
            self._replaced_log: EventLog | None = None
        self.faults.clear()
        self.connections.reset_count()
        self.cohort_book.reset()

    def masked_properties(self) -> frozenset[str]:
        """Properties whose values read as the masked marker: the plan's, plus overrides."""
        return self.plan.masked_user_properties() | self.masked_overrides

    def set_masked_overrides(self, properties: Iterable[str]) -> None:
        self.masked_overrides = frozenset(properties)

    def event_log(self) -> EventLog:
        """The log analyses read: a hand-built one if set, else the synthetic one."""
        replaced = self._replaced_log
        if replaced is not None:
            return replaced
        with self._log_lock:
            if self._generated_log is None:
                from analytics_emulator import eventlog

                self._generated_log = eventlog.generate_event_log(self.seed)
            return self._generated_log

    def replace_event_log(self, records: Iterable[Mapping[str, Any]]) -> int:
        """Use a hand-built log until the next reset; returns its number of events.

        :raises ValueError: from the log builder, for a record that does not fit.
        """
        from analytics_emulator import eventlog

        log = eventlog.EventLog.from_records(records)
        self._replaced_log = log
        return len(log)

    def add_events(self, records: Iterable[Mapping[str, Any]]) -> tuple[int, int]:
        """Add events to the log analyses read (the synthetic or a hand-built one) until the
        next reset: events that arrive late, for any day. Returns the number added and the
        log's new size.

        :raises ValueError: from the log builder, for a record that does not fit.
        """
        from analytics_emulator import eventlog

        added = eventlog.EventLog.from_records(records)
        with self._lock:
            log = self.event_log().with_events(added)
            self._replaced_log = log
        return len(added), len(log)
