"""The shared record of the platform's hold-off for every shard of a cohort export
(``hold.json`` in the plan's staging folder, the one place every process on every worker
reaches), attached to the throttle (:mod:`~airflow_provider_analytics.client.throttle`). How it
is published, observed, bounded by ``retry_after_max`` and read across clocks is explained in
``docs/operators/cohort_shards.md`` (*One hold-off for every shard*); when two shards write at
once the last write wins, each also holding its own process for its own ``Retry-After``.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Final, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from airflow_provider_analytics.core import strict_json
from airflow_provider_analytics.core.errors import ShardStagingError
from airflow_provider_analytics.output.roots import open_own
from airflow_provider_analytics.output.storage import write_bytes_atomically

if TYPE_CHECKING:
    from collections.abc import Callable

    from airflow_provider_analytics.output.storage import StoragePath

log = logging.getLogger(__name__)

HOLD_FILE: Final = "hold.json"
REFRESH_SECONDS: Final = 1.0
"""A process reads the record at most this often (each read of object storage costs)."""
RECORD_BYTES_MAX: Final = 4096
"""A record longer than this is refused unread (the ones written here are about 100 bytes)."""

_Record = TypeVar("_Record", bound=BaseModel)


def read_record(
    path: StoragePath, model: type[_Record], what: str, max_bytes: int = -1
) -> _Record | None:
    """A record of the staging folder (the plan, a finished shard's, the hold-off) in its
    declared shape ``model`` (``what`` names it in the refusal); ``None`` when there is none.

    :raises ShardStagingError: the record is not of the declared shape, longer than
        ``max_bytes`` (``-1``: no bound), or not a plain file (``open_own``).
    """
    try:
        with open_own(path) as handle:
            raw = handle.read(max_bytes + 1 if max_bytes >= 0 else -1)
    except FileNotFoundError:
        return None
    if 0 <= max_bytes < len(raw):
        raise ShardStagingError(f"{path}: not a {what} (longer than {max_bytes} bytes)")
    try:
        strict_json.loads(raw)  # the strict rules first: a repeated key, NaN, bad UTF-8
        return model.model_validate_json(raw)
    except strict_json.StrictJsonError as error:
        raise ShardStagingError(f"{path}: not a {what} (it {error})") from None
    except ValidationError as error:
        detail = error.errors()[0]
        where = ".".join(str(part) for part in detail["loc"]) or "the record"
        raise ShardStagingError(f"{path}: not a {what} ({where}: {detail['msg']})") from None


class HoldRecord(BaseModel):
    """The declared shape of ``hold.json``."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    until: float = Field(ge=0, allow_inf_nan=False)  # no page call before (UTC epoch seconds)
    status: Literal[429, 503]  # of the answer whose Retry-After asked for it
    set_by: str = Field(  # logged: one line, so no C0/C1 control and no line separator
        max_length=200, pattern=r"^[^\x00-\x1f\x7f-\x9f\u2028\u2029]*$"
    )


@dataclass(eq=False)
class SharedHold:
    """The hold-off record of one staging folder as one process sees it (every thread of a
    reader): the last record read (for ``refresh`` seconds) and the last one honoured, which
    held this process at most ``retry_after_max`` seconds. ``wall`` gives epoch seconds,
    ``clock`` monotonic ones."""

    path: StoragePath
    _: KW_ONLY
    retry_after_max: float
    refresh: float = REFRESH_SECONDS
    wall: Callable[[], float] = time.time
    clock: Callable[[], float] = time.monotonic
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _known: HoldRecord | None = field(default=None, init=False)
    _read_at: float = field(default=-math.inf, init=False)
    _honoured: HoldRecord | None = field(default=None, init=False)

    def publish(self, seconds: float, status: int, who: str) -> None:
        """Ask every shard to hold off ``seconds`` from now, because of an answer ``who`` got
        with ``status``. Never raises: a record that cannot be written is logged."""
        where = f"{who} (pid {os.getpid()} on {socket.gethostname()})"[:200]
        now = self.wall()
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
        per record and at most ``retry_after_max``; ``None`` when it asks nothing new. A record
        that cannot be read (the storage failing) is logged and the last one read kept.

        :raises ShardStagingError: the record is not of the declared shape.
        """
        with self._lock:
            now = self.clock()
            if now - self._read_at >= self.refresh:
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
        seconds = record.until - self.wall()
        if seconds <= 0:
            return None
        if seconds > self.retry_after_max:
            log.warning(
                "%s asks to hold off %.0f s, more than retry_after_max: a clock ahead of this "
                "one, or a record not written by a shard; holding %g s",
                self.path,
                seconds,
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
