"""How far a request got before it failed without an HTTP answer.

The one place that reads what ``requests`` and ``httpx`` raise: both transports hand their
exception to :func:`classify_transport_error` and get the same :class:`TransportFailure`,
which the retry policy and the error messages then use. ``httpx`` is imported only when an
exception that is not ``requests``' has to be classified, so the synchronous path never
loads it.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from enum import StrEnum

import requests
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError


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


@dataclass(frozen=True)
class TransportFailure:
    """A request that got no HTTP answer, classified for the retry decision.

    :param phase: how far the request got.
    :param exception: class name of what was raised, for logs and messages.
    """

    phase: FailurePhase
    exception: str

    @property
    def reached_server(self) -> bool:
        """``False`` only when the request provably never reached the server."""
        return self.phase not in (FailurePhase.CONNECT, FailurePhase.TLS)

    @property
    def retryable(self) -> bool:
        """Whether another attempt may help at all."""
        return self.phase in (FailurePhase.CONNECT, FailurePhase.EXCHANGE)

    @property
    def reason(self) -> str:
        """Exception class and phase, for logs and messages."""
        return f"{self.exception}: {self.phase.value}"


def _causes(exc: BaseException) -> list[BaseException]:
    """The exception, the exceptions it wraps (``args`` and ``reason``) and its context chain."""
    seen: list[BaseException] = []
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop()
        if any(current is s for s in seen):
            continue
        seen.append(current)
        for nested in (
            getattr(current, "reason", None),
            current.__cause__,
            current.__context__,
            *current.args,
        ):
            if isinstance(nested, BaseException):
                pending.append(nested)
    return seen


def _requests_phase(exc: requests.RequestException) -> FailurePhase:
    if isinstance(exc, requests.exceptions.SSLError):
        return FailurePhase.TLS
    if isinstance(exc, requests.ConnectTimeout):
        return FailurePhase.CONNECT
    if isinstance(exc, requests.ConnectionError) and any(
        isinstance(c, NewConnectionError | ConnectTimeoutError) for c in _causes(exc)
    ):
        return FailurePhase.CONNECT
    if isinstance(
        exc,
        requests.Timeout | requests.ConnectionError | requests.exceptions.ChunkedEncodingError,
    ):
        return FailurePhase.EXCHANGE
    return FailurePhase.OTHER


def _httpx_phase(exc: BaseException) -> FailurePhase:
    import httpx  # only an httpx exception gets here, so httpx is loaded already

    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout):
        if any(isinstance(c, ssl.SSLError) for c in _causes(exc)):
            return FailurePhase.TLS
        return FailurePhase.CONNECT
    if isinstance(
        exc,
        httpx.TimeoutException
        | httpx.ReadError
        | httpx.WriteError
        | httpx.CloseError
        | httpx.RemoteProtocolError
        | httpx.DecodingError,
    ):
        return FailurePhase.EXCHANGE
    return FailurePhase.OTHER


def classify_transport_error(exc: BaseException) -> TransportFailure:
    """Tell how far a failed request got, which decides whether it may be retried.

    :param exc: what ``requests`` or ``httpx`` raised instead of returning a response.
    """
    if isinstance(exc, requests.RequestException):
        phase = _requests_phase(exc)
    elif type(exc).__module__.split(".")[0] == "httpx":
        phase = _httpx_phase(exc)
    else:
        phase = FailurePhase.OTHER
    return TransportFailure(phase, type(exc).__name__)
