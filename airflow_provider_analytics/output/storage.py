"""Atomic output to object storage: readers see a complete object or none at all.

The data is written to a hidden sibling (``.name.<id>.inprogress``, which readers skip) and
renamed over the destination; a failure deletes it and leaves the destination as it was, and a
killed writer's leftovers are removed by a later write once they are stale
(``docs/howto/object_storage.md``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import time
import uuid
from typing import IO, TYPE_CHECKING, Any, Protocol

from airflow_provider_analytics.core.errors import (
    AnalyticsConfigurationError,
    AnalyticsError,
    AnalyticsStorageError,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

log = logging.getLogger(__name__)


class StoragePath(Protocol):
    """The subset of the pathlib/UPath interface the writers use."""

    @property
    def name(self) -> str: ...

    @property
    def parent(self) -> Any: ...

    def __truediv__(self, other: str) -> Any: ...

    def open(self, mode: str = ...) -> IO[Any]: ...

    def exists(self) -> bool: ...

    def unlink(self, missing_ok: bool = ...) -> None: ...

    def rename(self, target: Any) -> Any: ...

    def iterdir(self) -> Any: ...

    def stat(self) -> Any: ...


def remove_quietly(path: StoragePath) -> None:
    """Delete ``path`` if it exists; a failure is logged, never raised."""
    try:
        path.unlink(missing_ok=True)
    except Exception:  # a clean-up must not hide the error that made it necessary
        log.warning("could not remove temporary object %s", path, exc_info=True)


STALE_TEMPORARY_AGE_VARIABLE = "ANALYTICS_STALE_TEMPORARY_SECONDS"


def stale_temporary_age() -> dt.timedelta:
    """The age after which a temporary object counts as orphaned (from the environment).

    :raises AnalyticsConfigurationError: naming the variable when it is not a number >= 0.
    """
    raw = os.environ.get(STALE_TEMPORARY_AGE_VARIABLE)
    if raw is None or raw.strip() == "":
        return dt.timedelta(hours=1)
    try:  # NaN, inf and past timedelta's range (1e20) raise here
        age = dt.timedelta(seconds=float(raw))
    except (ValueError, OverflowError):
        age = dt.timedelta(-1)
    if age < dt.timedelta(0):
        raise AnalyticsConfigurationError(
            f"{STALE_TEMPORARY_AGE_VARIABLE} must be a finite number of seconds >= 0, at most "
            f"8.6e13 (got {raw!r})"
        )
    return age


def _temporary_prefix(destination: StoragePath) -> str:
    return f".{destination.name}."


def temporary_sibling(destination: StoragePath) -> StoragePath:
    """A fresh hidden sibling of ``destination`` (``.<name>.<id>.inprogress``)."""
    return destination.parent / f"{_temporary_prefix(destination)}{uuid.uuid4().hex}.inprogress"


def remove_stale_temporaries(
    destination: StoragePath, *, older_than: dt.timedelta, now: float | None = None
) -> list[str]:
    """Delete ``destination``'s temporaries (``.<name>.<id>.inprogress``) older than the age
    (younger ones may belong to a writer still at work). Listing or deleting problems are
    logged, never raised: a clean-up must not fail the write that runs it.

    :param destination: the object whose leftovers to remove (its directory is listed).
    :param older_than: minimum age, by the object's modification time.
    :param now: the current time as a POSIX timestamp (default: the clock).
    :return: the names removed.
    """
    cutoff = (time.time() if now is None else now) - older_than.total_seconds()
    prefix = _temporary_prefix(destination)
    removed: list[str] = []
    try:
        siblings = list(destination.parent.iterdir())
    except FileNotFoundError:
        return removed
    except Exception:
        log.warning("could not list %s for stale temporaries", destination.parent, exc_info=True)
        return removed
    for sibling in siblings:
        name = sibling.name
        if not (name.startswith(prefix) and name.endswith(".inprogress")):
            continue
        try:
            modified = float(sibling.stat().st_mtime)
        except FileNotFoundError:
            continue  # its writer finished or removed it meanwhile
        except Exception:
            log.warning("could not read the age of %s", sibling, exc_info=True)
            continue
        if modified <= cutoff:
            remove_quietly(sibling)
            log.info("removed stale temporary %s (left by a writer that was killed)", sibling)
            removed.append(name)
    return removed


@contextlib.contextmanager
def atomic_destination(
    destination: StoragePath, *, subject: str | None = None
) -> Iterator[StoragePath]:
    """Yield a temporary sibling of ``destination``; move it into place when the block succeeds
    (stale temporaries of the same object are removed first).

    :param destination: where the finished object must appear.
    :param subject: what is written, for an error (``cohort 'vip'``); by default the Hive
        partitions of ``destination`` (``cohort=vip, dt=2024-01-15``).
    :raises AnalyticsStorageError: the storage failed (an ``OSError`` that is not the network's).
    """
    try:
        with contextlib.suppress(FileExistsError):
            destination.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise AnalyticsStorageError(destination, subject, error) from error
    remove_stale_temporaries(destination, older_than=stale_temporary_age())
    temporary = temporary_sibling(destination)
    try:
        yield temporary
        temporary.rename(destination)
    except BaseException as error:
        remove_quietly(temporary)
        if (  # an OSError of the storage, not of the network (which raises its own subclasses)
            isinstance(error, OSError)
            and not isinstance(error, AnalyticsError | ConnectionError | TimeoutError)
            and not type(error).__module__.startswith(("requests", "urllib3", "http"))
        ):
            raise AnalyticsStorageError(destination, subject, error) from error
        raise


def open_unheard(path: StoragePath, mode: str) -> IO[Any]:
    """``path`` opened without Airflow's hook lineage hearing of it (``ObjectStoragePath.open``
    reports every write): a hidden temporary is not the task's output, and the object it
    becomes is reported once it is in place."""
    fs, fs_path = getattr(path, "fs", None), getattr(path, "path", None)
    if fs is not None and isinstance(fs_path, str):  # a UPath: its fsspec file system
        handle: IO[Any] = fs.open(fs_path, mode)
        return handle
    return path.open(mode)


def write_bytes_atomically(path: StoragePath, data: bytes) -> None:
    """A small object (a record) written whole or not at all."""
    with atomic_destination(path) as temporary, open_unheard(temporary, "wb") as handle:
        handle.write(data)
