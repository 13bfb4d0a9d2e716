"""The package's single exception hierarchy (the client's, the export's and the output's).

Every error carries ``status`` (HTTP status or ``None``), ``code``, ``msg`` and ``data``
(from the platform's ``{code, msg, data}`` error body when there was one) and
``operation`` (the client method that failed). Messages say what happened and what to
check. Whatever an error shows is passed through the one redaction
(:mod:`~airflow_provider_analytics.core.redaction`): the secrets it is given and every secret
the process knows are masked when it is made and again whenever it is shown, so a server
echoing a header, a record or a value cannot leak a token, however the error was built.

Each class also says whether it is **transient** (:attr:`AnalyticsError.transient`): whether
the same call may succeed if it is made again later. This is the one place that decides it;
the retry engine (:mod:`~airflow_provider_analytics.core.retry`), the export's attempts, the
shard reads and the data-ready sensor all ask the error.
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
"""The HTTP statuses another attempt may mend: rate limited, server error, bad gateway,
unavailable, gateway timeout. (501 says the operation was not completed and why; 505 and the
other 5xx name a setup fault.)"""


def _restore(cls: type[AnalyticsError], state: dict[str, Any]) -> AnalyticsError:
    """Rebuild a pickled error without calling its (keyword-heavy) ``__init__``."""
    error = cls.__new__(cls)
    Exception.__init__(error, state.get("message", ""))
    error.__dict__.update(state)
    return error


class AnalyticsError(Exception):
    """Base of every error raised by the client.

    :param message: what happened and what to check.
    :param status: HTTP status of the answer, ``None`` when there was no answer.
    :param code: ``code`` of the platform's error body.
    :param msg: ``msg`` of the platform's error body.
    :param data: ``data`` of the platform's error body.
    :param operation: name of the client method that failed.
    :param secrets: values to mask in everything the error shows.
    """

    @property
    def transient(self) -> bool:
        """Whether the same call may succeed if made again later: each class answers for its
        instances (the HTTP errors from their status); by default it may not."""
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

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (type(self), dict(self.__dict__)))


def is_transient(error: BaseException) -> bool:
    """Whether ``error`` says the same call may succeed if made again later (its class's
    answer, :attr:`AnalyticsError.transient`; ``False`` outside the package's hierarchy)."""
    return isinstance(error, AnalyticsError) and error.transient


class _MaskedRepr(reprlib.Repr):
    """``reprlib`` that masks a string's secrets before cutting it (mask, then cut)."""

    def repr_str(self, x: str, level: int) -> str:
        return super().repr_str(known().text(x), level)


def _bounded_repr_settings() -> reprlib.Repr:
    settings = _MaskedRepr()
    settings.maxlevel = 3
    for name in (
        "maxtuple",
        "maxlist",
        "maxarray",
        "maxdict",
        "maxset",
        "maxfrozenset",
        "maxdeque",
    ):
        setattr(settings, name, 6)
    settings.maxstring = settings.maxother = _MAX_SHOWN_VALUE
    settings.maxlong = 40
    return settings


_BOUNDED_REPR = _bounded_repr_settings()


def bounded_repr(value: Any, limit: int = _MAX_SHOWN_VALUE) -> str:
    """A ``repr`` of ``value`` at most ``limit`` characters long, whatever its size.

    Built from a few items and levels only (:mod:`reprlib`), so a huge or deeply shared
    value (a YAML alias bomb, a 10,000-character string) costs no more than a small one.
    Every string is masked (the secrets the process knows) before it is cut.
    """
    # reprlib cuts every string at its own size: a string within ``limit`` is shown whole;
    # known secrets are masked before the text is cut
    text = (
        repr(value) if isinstance(value, str) and len(value) < limit else _BOUNDED_REPR.repr(value)
    )
    text = known().text(text)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def _shown(value: Any) -> str:
    text = bounded_repr(value)
    if len(text) > _MAX_SHOWN_VALUE:
        text = text[: _MAX_SHOWN_VALUE - 3] + "..."
    return text


class AnalyticsValidationError(AnalyticsError, ValueError):
    """An argument breaks one of the spec's rules; raised before any request is sent.

    :param field: the parameter at fault, as the request names it (``steps[1].expression``).
    :param rule: the rule it breaks, phrased as what it must be.
    :param value: the offending value, shown (shortened) in the message when given.
    """

    def __init__(self, field: str, rule: str, value: Any = _NOT_GIVEN) -> None:
        got = "" if value is _NOT_GIVEN else f" (got {_shown(value)})"
        super().__init__(f"{field}: {rule}{got}")
        self.field = field
        self.rule = rule
        self.got = got

    def at(self, field: str) -> AnalyticsValidationError:
        """The same refusal, naming ``field`` (where a declared request found it)."""
        error = AnalyticsValidationError(field, self.rule)
        error.message, error.got = f"{field}: {self.rule}{self.got}", self.got
        error.args = (error.message,)
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
    """400 (legacy 498): a parameter is empty or wrong, or the object does not exist.

    ``params`` holds the offending parameter names when the body's ``data`` lists them.
    """

    @property
    def params(self) -> list[Any] | None:
        return list(self.data) if isinstance(self.data, list) else None


class AnalyticsAuthenticationError(AnalyticsApiError):
    """401: the credentials of the connection were refused."""


class AnalyticsNotFoundError(AnalyticsApiError):
    """404: no such API at that address."""


class AnalyticsUnsupportedMediaTypeError(AnalyticsApiError):
    """415: the server refused the request's content type."""


class AnalyticsRateLimitError(AnalyticsApiError):
    """429, still answered after every retry was spent (or a hold-off longer than the call
    may wait): transient, since the platform asks only to wait."""

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
    """The TLS handshake failed: never reached the server, and retrying will not help."""
    EXCHANGE = "connection dropped or timed out after sending"
    """Sent, but no complete answer came back: the server may have processed it."""
    OTHER = "request could not be made"
    """Anything else (an invalid URL or header, for example): retrying will not help."""


class AnalyticsTransportError(AnalyticsError):
    """No usable answer: connection failure or timeout, after the retries allowed.

    ``phase`` tells how far the request got (``None``: the call's deadline or turn ran out);
    a TLS failure or a request that could not be made is not transient.
    """

    phase: FailurePhase | None = None

    @property
    def transient(self) -> bool:
        return self.phase not in (FailurePhase.TLS, FailurePhase.OTHER)


class AnalyticsStreamError(AnalyticsTransportError):
    """An export stream broke mid-body, ended inside a line, or carried a malformed line."""


class AnalyticsProtocolError(AnalyticsError):
    """A successful status whose body is not the JSON shape the operation promises.

    Transient: a body cut or garbled on its way (a proxy's page, a truncated answer) is mended
    by asking again, as a malformed line of a stream is; a subclass whose fault another
    attempt cannot mend says so.
    """

    transient = True


class AnalyticsUsageError(AnalyticsError, TypeError, RuntimeError):
    """The package's own API was used in a way it does not allow: an object that only its
    checking function may make, a writer used before it was opened, an export read twice.
    Fix the calling code; retrying cannot help. (Also a ``TypeError`` and a ``RuntimeError``,
    which such misuse raised before.)"""


class ShardStagingError(AnalyticsError, ValueError):
    """A staging folder, or a record or part in it, is not what this package writes: a record
    of another shape, a symbolic link or a pipe where its own file belongs, a folder that
    is not the worker's own."""


class ExportIncompleteError(AnalyticsError, RuntimeError):
    """A cohort export delivered a different number of rows than the cohort holds, or every
    attempt failed: transient, another attempt (or run) may deliver them all."""

    transient = True


_HIVE_PARTITION = re.compile(r"[^/=]+=[^/]+")


class AnalyticsStorageError(AnalyticsError, OSError):
    """Writing an object failed in the storage itself (full disk, permissions, quota).

    Nothing was replaced: the destination holds what it held before, and the temporary object
    was removed.

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


class EarlierDayUnreadableError(AnalyticsError, ValueError):
    """The earlier day's file that decides the column types is not a readable Parquet file
    of this provider; the message names it and what to do."""


class IcebergSchemaError(AnalyticsError, ValueError):
    """The data cannot be written to the table as it is (a column's type cannot evolve)."""


class IcebergLayoutError(IcebergSchemaError):
    """The table was not created to hold many identities (an earlier version's layout): a run
    would replace every identity's rows of its day. The message names the migration."""


class IcebergCommitError(AnalyticsError):
    """A commit did not land because another writer committed first (every attempt, once
    raised): transient, nothing landed and the next attempt plans again."""

    transient = True


class CohortChangedError(AnalyticsError, RuntimeError):
    """The cohort changed while it was read in shards (its count, or a user seen twice);
    nothing was published."""


class ExportDataError(AnalyticsError, ValueError):
    """A value in a cohort export does not fit its column (and is not the masked marker); the
    message names the column and the 1-based row of the export."""


class NumberRefusal(AnalyticsError):
    """A number the export's number rule refuses: ``why`` it is refused and the ``setting``
    that accepts it. The decoder raises it as an :class:`ExportDataError` naming the column
    and the row."""

    def __init__(self, why: str, setting: str) -> None:
        super().__init__(f"{why}; {setting}")
        self.why = why
        self.setting = setting


class DecimalFound(AnalyticsError):
    """A decimal in an export's ``number`` column read as int64 so far: a signal inside the
    decoder, never raised to a caller (the column becomes double and the block is read again).

    :param rows: ``{column index: 1-based row of a decimal}``, where the decoder knows them.
    """

    def __init__(self, rows: dict[int, int] | None = None) -> None:
        super().__init__("a decimal in a column read as int64 so far")
        self.rows = rows or {}


class Unfit(AnalyticsError, TypeError, ValueError):
    """A value an export column's line-by-line rule cannot take; inside the decoder only, which
    turns it into the :class:`ExportDataError` naming the column and the row (a ``TypeError``
    and a ``ValueError``, as the converters' failures are caught with Arrow's)."""


class IcebergMaintenanceError(AnalyticsError):
    """A table could not be maintained (its FileIO cannot list files, or commits kept failing)."""
