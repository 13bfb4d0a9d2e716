"""The shared record of the platform's hold-off for every shard of a cohort export.

The hold-off is the throttle's (:mod:`~airflow_provider_analytics.client.throttle`): it holds
back every call of one process when an answer's ``Retry-After`` asks it to. The shards of one
export run in many processes on many workers, and the one place they all reach is the plan's
staging folder, so a shard reader attaches this record of it to the throttle
(:meth:`~airflow_provider_analytics.client.throttle.PlatformThrottle.sharing`), kept in
``hold.json``::

    {"until": 1717171717.5, "status": 429, "set_by": "shard 3 (pid 4242 on worker-1)"}

- **Published.** When a page call of a shard gets a ``429`` or ``503`` with a readable
  ``Retry-After``, the shard writes the record (whole or not at all) with ``until`` = now + the
  wait, unless the record it knows already holds until later. A record that cannot be written
  is logged and the shards go on; only the sharing is lost.
- **Observed.** Before each call the throttle reads the record, at most once every
  :data:`REFRESH_SECONDS` per process (every read of object storage is a request that costs);
  a record still ahead holds the process's throttle until then, so every thread of the process
  waits, not only the shard that read it.
- **Bounded.** Each record is honoured once, for at most ``retry_after_max`` seconds (the client
  setting that bounds a ``Retry-After``): a record dated far ahead (a clock that is wrong, a file
  written by something else) delays a process once by that much, never for ever. A record
  that does not have the declared shape is refused by name (:class:`ShardStagingError`).
- **Clocks.** ``until`` is wall-clock time (UTC seconds since the epoch), the only time workers
  share. A worker whose clock is δ seconds behind the writer's waits δ seconds longer; one ahead
  waits δ seconds less, and not at all when δ exceeds the wait. Workers kept in time by NTP
  differ by milliseconds; the ``retry_after_max`` bound caps what a large skew can cost.

A call already in flight when the record is written is not recalled, and another process learns
of the record at its next page call once its last read is :data:`REFRESH_SECONDS` old. When two
shards write at the same moment the last write wins; each of them also holds its own process
until its own ``Retry-After`` has passed.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
from typing import TYPE_CHECKING, Final, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from airflow_provider_analytics.core.errors import ShardStagingError
from airflow_provider_analytics.output.roots import open_own
from airflow_provider_analytics.output.storage import write_bytes_atomically

if TYPE_CHECKING:
    from collections.abc import Callable

    from airflow_provider_analytics.output.storage import StoragePath

log = logging.getLogger(__name__)

HOLD_FILE: Final = "hold.json"
"""The record's name in the staging folder."""

REFRESH_SECONDS: Final = 1.0
"""A process reads the record at most this often."""

RECORD_BYTES_MAX: Final = 4096
"""A record longer than this is refused unread (the ones written here are about 100 bytes)."""


_Record = TypeVar("_Record", bound=BaseModel)


def read_record(
    path: StoragePath, model: type[_Record], what: str, max_bytes: int = -1
) -> _Record | None:
    """A record of the staging folder (the plan, a finished shard's, the hold-off) in its
    declared shape ``model``; ``None`` when there is none.

    :param what: what the record is, for the refusal.
    :param max_bytes: a longer record is refused unread (``-1``: no bound).
    :raises ShardStagingError: the record is not of the declared shape, or not a plain file
        (a link or a pipe is refused unread, :func:`~airflow_provider_analytics.output.roots.
        open_own`).
    """
    try:
        with open_own(path) as handle:
            raw = handle.read(max_bytes + 1 if max_bytes >= 0 else -1)
    except FileNotFoundError:
        return None
    if 0 <= max_bytes < len(raw):
        raise ShardStagingError(f"{path}: not a {what} (longer than {max_bytes} bytes)")
    try:
        return model.model_validate_json(raw)
    except ValidationError as error:
        detail = error.errors()[0]
        where = ".".join(str(part) for part in detail["loc"]) or "the record"
        raise ShardStagingError(f"{path}: not a {what} ({where}: {detail['msg']})") from None


class HoldRecord(BaseModel):
    """The declared shape of ``hold.json``."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    until: float = Field(ge=0, allow_inf_nan=False)
    """No page call starts before this moment (UTC seconds since the epoch)."""
    status: Literal[429, 503]
    """The status of the answer whose ``Retry-After`` asked for it."""
    set_by: str = Field(max_length=200)
    """Which shard got that answer, in which process on which host."""


class SharedHold:
    """The hold-off record of one staging folder, as one process sees it.

    One instance serves every thread of a reader; it remembers the last record read (for
    :data:`REFRESH_SECONDS`) and the last one honoured.

    :param path: the record (``hold.json`` in the staging folder).
    :param retry_after_max: the longest a record holds this process, in seconds.
    :param refresh: the least seconds between two reads of the record.
    :param wall: wall-clock epoch seconds (injectable for tests).
    :param clock: monotonic seconds, for the refresh interval (injectable for tests).
    """

    def __init__(
        self,
        path: StoragePath,
        *,
        retry_after_max: float,
        refresh: float = REFRESH_SECONDS,
        wall: Callable[[], float] = time.time,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = path
        self.retry_after_max = retry_after_max
        self._refresh = refresh
        self._wall = wall
        self._clock = clock
        self._lock = threading.Lock()
        self._known: HoldRecord | None = None
        self._read_at = -math.inf
        self._honoured: HoldRecord | None = None

    def __repr__(self) -> str:
        return f"SharedHold({self.path}, known={self._known!r})"

    def publish(self, seconds: float, status: int, who: str) -> None:
        """Ask every shard to hold off ``seconds`` from now, because of an answer ``who`` got
        with ``status``. Never raises: a record that cannot be written is logged."""
        where = f"{who} (pid {os.getpid()} on {socket.gethostname()})"[:200]
        now = self._wall()
        try:
            record = HoldRecord.model_validate(
                {"until": now + seconds, "status": status, "set_by": where}
            )
        except ValidationError as error:  # a status without Retry-After, or a bad clock
            log.warning("not sharing a hold-off of %s s after HTTP %s: %s", seconds, status, error)
            return
        with self._lock:
            known = self._known
            if known is not None and record.until <= known.until <= now + self.retry_after_max:
                return  # a record already holds as long (one dated beyond the bound does not)
            self._known = self._honoured = record  # this process' throttle holds already
        try:
            write_bytes_atomically(self.path, record.model_dump_json().encode())
        except Exception as error:  # the sharing is lost, not the export
            log.warning("could not share the platform's hold-off in %s: %s", self.path, error)
            return
        log.info(
            "%s got HTTP %d with Retry-After: every shard of this export holds off %.1f s",
            who,
            status,
            seconds,
        )

    def observe(self) -> float | None:
        """The seconds the shared record asks this process to hold its calls from now, once
        per record and at most ``retry_after_max``; ``None`` when it asks nothing new. The record
        is read again once the last read is :data:`REFRESH_SECONDS` old; one that cannot be read
        (the storage failing) is logged and the last one read kept.

        :raises ShardStagingError: the record is not of the declared shape.
        """
        with self._lock:
            now = self._clock()
            if now - self._read_at >= self._refresh:
                self._read_at = now  # one read per process per interval, whatever the threads
                try:
                    # an object-storage file system (s3fs) answers "not found" from a listing
                    # it kept of the folder, for an object another process wrote since: drop it
                    if (fs := getattr(self.path, "fs", None)) is not None:
                        fs.invalidate_cache(getattr(self.path, "path", str(self.path)))
                    self._known = read_record(
                        self.path, HoldRecord, "hold record", RECORD_BYTES_MAX
                    )
                except OSError as error:
                    log.warning("could not read the shared hold-off %s: %s", self.path, error)
            record = self._known
            if record is None or record == self._honoured:
                return None
            self._honoured = record
        seconds = record.until - self._wall()
        if seconds <= 0:
            return None
        if seconds > self.retry_after_max:
            log.warning(
                "%s asks to hold off %.0f s, more than retry_after_max (%g s): a clock ahead "
                "of this one, or a record not written by a shard; holding %g s",
                self.path,
                seconds,
                self.retry_after_max,
                self.retry_after_max,
            )
            seconds = self.retry_after_max
        log.info(
            "%s got HTTP %d with Retry-After: this process holds its calls %.1f s",
            record.set_by,
            record.status,
            seconds,
        )
        return seconds
