"""The package's single exception hierarchy (the client's, the export's and the output's).

Every error carries ``status``, ``code``, ``msg``, ``data`` (the platform's error body, when
there was one) and ``operation`` (the client method that failed). Whatever it shows goes
through the one redaction (:mod:`~airflow_provider_analytics.core.redaction`), when made and
again when shown, so a server echoing a token cannot leak it. Each class says whether it is
**transient** (:attr:`AnalyticsError.transient`): the one place the retry engine, the export's
attempts, the shard reads and the data-ready sensor ask.
"""

from __future__ import annotations

import re
import reprlib
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final

from airflow_provider_analytics.core.redaction import Redactor, known

if TYPE_CHECKING:
    from collections.abc import Iterable

_NOT_GIVEN: Any = object()
_MAX_SHOWN_VALUE = 80

TRANSIENT_STATUSES: Final = frozenset({429, 500, 502, 503, 504})
"""The HTTP statuses another attempt may mend (501 says why the operation was not completed;
505 and the other 5xx name a setup fault)."""


class AnalyticsError(Exception):
    """Base of every error raised by the package.

    :param message: what happened and what to check.
    :param status: HTTP status of the answer, ``None`` when there was none.
    :param code: ``code`` of the platform's error body.
    :param msg: ``msg`` of the platform's error body.
    :param data: ``data`` of the platform's error body.
    :param operation: the client method that failed.
    :param secrets: values to mask in everything the error shows.
    """

    @property
    def transient(self) -> bool:
        """Whether the same call may succeed if made again later (each class answers)."""
        return False

    retry_after: float | None = None
    """Seconds the server asked the caller to wait (``Retry-After``), when it did."""
    reason: str | None = None
    """A short account of the failure for the retry log (``HTTP 503``), when there is one."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: Any = None,
        msg: str | None = None,
        data: Any = None,
        operation: str | None = None,
        secrets: Iterable[str | None] = (),
    ) -> None:
        redactor = Redactor(secrets)
        self.message: str = redactor.text(message)
        self.status = status
        self.code = redactor.value(code)
        self.msg: str | None = redactor.value(msg)
        self.data = redactor.value(data)
        self.operation = operation
        super().__init__(self.message)

    def __str__(self) -> str:
        return known().text(self.message)  # and the secrets remembered since it was made

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:  # rebuilt without calling its ``__init__``
        return (type(self).__new__, (type(self),), {**self.__dict__, "args": self.args})


def is_transient(error: BaseException) -> bool:
    """:attr:`AnalyticsError.transient` of ``error``; ``False`` outside the hierarchy."""
    return isinstance(error, AnalyticsError) and error.transient


class _MaskedRepr(reprlib.Repr):
    def repr_str(self, x: str, level: int) -> str:
        return super().repr_str(known().text(x), level)  # mask, then cut


_BOUNDED_REPR = _MaskedRepr()
_SIZES = ("maxtuple", "maxlist", "maxarray", "maxdict", "maxset", "maxfrozenset", "maxdeque")
vars(_BOUNDED_REPR).update(dict.fromkeys(_SIZES, 6), maxlevel=3, maxlong=40)
_BOUNDED_REPR.maxstring = _BOUNDED_REPR.maxother = _MAX_SHOWN_VALUE


def bounded_repr(value: Any, limit: int = _MAX_SHOWN_VALUE) -> str:
    """A masked ``repr`` of ``value``, at most ``limit`` characters, built from a few items and
    levels only (:mod:`reprlib`), so a huge or deeply shared value (a YAML alias bomb) costs
    no more than a small one."""
    text = (  # reprlib cuts a string at its own size: one within ``limit`` is shown whole
        repr(value) if isinstance(value, str) and len(value) < limit else _BOUNDED_REPR.repr(value)
    )
    return known().excerpt(text, limit)


class AnalyticsValidationError(AnalyticsError, ValueError):
    """An argument breaks one of the spec's rules; raised before any request is sent.

    :param field: the parameter at fault, as the request names it (``steps[1].expression``).
    :param rule: the rule it breaks, phrased as what it must be.
    :param value: the offending value, shown (shortened) in the message when given.
    """

    def __init__(self, field: str, rule: str, value: Any = _NOT_GIVEN) -> None:
        got = "" if value is _NOT_GIVEN else f" (got {bounded_repr(value)})"
        super().__init__(f"{field}: {rule}{got}")
        self.field = field
        self.rule = rule
        self.got = got

    def at(self, field: str) -> AnalyticsValidationError:
        """The same refusal, naming ``field`` (where a declared request found it)."""
        error = AnalyticsValidationError(field, self.rule + self.got)
        error.rule, error.got = self.rule, self.got
        return error


class AnalyticsConfigurationError(AnalyticsError, ValueError):
    """The client configuration (or the connection it came from) is unusable."""


class AnalyticsApiError(AnalyticsError):
    """The server answered with an error status (or an unexpected one)."""

    @property
    def transient(self) -> bool:
        """Whether the status is one another attempt may mend (:data:`TRANSIENT_STATUSES`)."""
        return self.status in TRANSIENT_STATUSES


class AnalyticsBadRequestError(AnalyticsApiError):
    """400 (legacy 498): a parameter is empty or wrong, or the object does not exist."""

    @property
    def params(self) -> list[Any] | None:
        """The offending parameter names, when the body's ``data`` lists them."""
        return list(self.data) if isinstance(self.data, list) else None


class AnalyticsAuthenticationError(AnalyticsApiError):
    """401: the credentials of the connection were refused."""


class AnalyticsNotFoundError(AnalyticsApiError):
    """404: no such API at that address."""


class AnalyticsUnsupportedMediaTypeError(AnalyticsApiError):
    """415: the server refused the request's content type."""


class AnalyticsRateLimitError(AnalyticsApiError):
    """429 after every retry (or a hold-off longer than the call may wait): transient."""

    transient = True


class AnalyticsNotCompletedError(AnalyticsApiError):
    """501 (legacy 499): the operation was not completed; ``code`` says why."""


class AnalyticsQuotaExceededError(AnalyticsNotCompletedError):
    """501 with code 501: a quota (projects, cohorts) is exhausted."""


class AnalyticsAlreadyExistsError(AnalyticsNotCompletedError):
    """501 with code 50101: the object already exists."""


class AnalyticsDisabledError(AnalyticsNotCompletedError):
    """501 with code 50102: the object exists but is disabled."""


class AnalyticsOperationFailedError(AnalyticsApiError):
    """HTTP 200 whose body reports ``success`` other than 0."""


class AnalyticsServerError(AnalyticsApiError):
    """A 5xx answer (other than 501), after the retries the operation allows."""


class FailurePhase(StrEnum):
    """How far a request got before it failed without an HTTP answer."""

    CONNECT = "could not connect"
    """Refused, unresolvable or timed out while connecting: never reached the server."""
    TLS = "TLS failed"
    """The TLS handshake failed: never reached the server; retrying will not help."""
    EXCHANGE = "connection dropped or timed out after sending"
    """Sent, but no complete answer came back: the server may have processed it."""
    OTHER = "request could not be made"
    """An invalid URL or header, for example: retrying will not help."""


class AnalyticsTransportError(AnalyticsError):
    """No usable answer after the retries allowed; ``phase`` tells how far the request got
    (``None``: the call's deadline or turn ran out)."""

    phase: FailurePhase | None = None

    @property
    def transient(self) -> bool:
        return self.phase not in (FailurePhase.TLS, FailurePhase.OTHER)


class AnalyticsStreamError(AnalyticsTransportError):
    """An export stream broke mid-body, ended inside a line, or carried a malformed line."""


class AnalyticsProtocolError(AnalyticsError):
    """A successful status whose body is not the JSON shape the operation promises: transient,
    as a body cut or garbled on its way (a proxy's page) is mended by asking again."""

    transient = True


class AnalyticsUsageError(AnalyticsError, TypeError, RuntimeError):
    """The package's API was used in a way it does not allow (a writer used before it was
    opened, an export read twice): fix the calling code."""


class ShardStagingError(AnalyticsError, ValueError):
    """A staging folder, or a record or part in it, is not what this package writes (another
    shape, a link or a pipe where its own file belongs, a folder not the worker's own)."""


class ExportIncompleteError(AnalyticsError, RuntimeError):
    """A cohort export delivered other than the cohort's row count, or every attempt failed:
    transient."""

    transient = True


_HIVE_PARTITION = re.compile(r"[^/=]+=[^/]+")


class AnalyticsStorageError(AnalyticsError, OSError):
    """Writing an object failed in the storage itself (full disk, permissions, quota); nothing
    was replaced and the temporary object was removed.

    :param destination: the object that was being written.
    :param subject: what was being written (``cohort 'vip'``); its Hive partitions otherwise.
    :param cause: the operating system's error.
    """

    def __init__(self, destination: object, subject: str | None, cause: OSError) -> None:
        where = str(destination)
        subject = subject or ", ".join(_HIVE_PARTITION.findall(where)) or None
        reason = cause.strerror or str(cause) or type(cause).__name__
        super().__init__(
            f"could not write {where}"
            + (f" ({subject})" if subject else "")
            + f": {type(cause).__name__}: {reason}. Nothing was replaced; free space or fix "
            "the permissions of the destination, then rerun"
        )
        self.destination = where
        self.subject = subject
        self.errno = cause.errno


class ReportWrittenInPartError(AnalyticsError):
    """A look-back report's write failed after earlier days were replaced: the message names
    the days replaced and the days not, then the failure; transient as the failure is.

    :param replaced: the days whose tables were all replaced, oldest first.
    :param not_replaced: the day whose write failed (its tables written before the failure
        were replaced) and the days after it, which were not written.
    """

    def __init__(self, replaced: list[str], not_replaced: list[str], cause: BaseException) -> None:
        super().__init__(
            f"the look-back was written in part: {', '.join(replaced)} replaced; "
            f"{', '.join(not_replaced)} not replaced (writing {not_replaced[0]} failed; any of "
            f"its tables written before the failure were replaced): {cause}"
        )
        self.replaced, self.not_replaced = replaced, not_replaced
        self._transient = is_transient(cause)

    @property
    def transient(self) -> bool:
        return self._transient


class EarlierDayUnreadableError(AnalyticsError, ValueError):
    """The earlier day's file that decides the column types is not this provider's Parquet."""


class IcebergSchemaError(AnalyticsError, ValueError):
    """The data cannot be written to the table as it is (a column's type cannot evolve)."""


class IcebergLayoutError(IcebergSchemaError):
    """The table's layout cannot hold a run's rules (an earlier version's one-identity
    partitioning, whose message names the migration; another partition field, a required
    column, a partition column's type or metrics); refused before the first request."""


class IcebergCommitError(AnalyticsError):
    """Another writer committed first on every attempt: transient, nothing landed."""

    transient = True


class CohortChangedError(AnalyticsError, RuntimeError):
    """The cohort changed while read in shards (count, or a user twice); nothing published."""


class ExportDataError(AnalyticsError, ValueError):
    """An export value does not fit its column; the message names the column and the row."""


class NumberRefusal(AnalyticsError):
    """A number the export's number rule refuses (``why``, and the ``setting`` that accepts
    it); the decoder raises it as an :class:`ExportDataError`."""

    def __init__(self, why: str, setting: str) -> None:
        super().__init__(f"{why}; {setting}")
        self.why = why
        self.setting = setting


class DecimalFound(AnalyticsError):
    """A decoder signal, never raised to a caller: a decimal in a ``number`` column read as
    int64 so far (it becomes double); ``rows``: ``{column index: 1-based row}`` where known."""

    def __init__(self, rows: dict[int, int] | None = None) -> None:
        super().__init__("a decimal in a column read as int64 so far")
        self.rows = rows or {}


class Unfit(AnalyticsError, TypeError, ValueError):
    """A value an export column's rule cannot take; the decoder turns it into an
    :class:`ExportDataError` (a ``TypeError`` and ``ValueError``, caught with Arrow's)."""


class IcebergMaintenanceError(AnalyticsError):
    """A table could not be maintained (its metadata or a file it names cannot be read, its
    location holds another table, its FileIO cannot list files, or commits kept failing)."""
