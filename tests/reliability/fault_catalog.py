"""The faults of the matrix: what the emulator is told to do to the next requests.

Each column arms one emulator fault (``/_emulator/faults``) for the operation a row targets.
"Once" faults hit one request and a well-behaved caller gets past them; "persistent" ones hit
every request of the case, so the caller has to give up cleanly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

READ_TIMEOUT: Final = 10.0
"""The connection's timeouts (connect, ordinary calls, the export) in every case but the
stalls: far beyond any answer of the emulator, so a loaded machine never turns an ordinary
answer into a timeout."""
STALL_READ_TIMEOUT: Final = 2.0
"""The read timeouts in the stall cases. Each such case waits this long once for the stalled
answer, so it is kept short; the other answers of the case (a retry, the rest of the run) get
the same margin."""
STALL_SECONDS: Final = 60.0
"""How long a stall fault holds a request at most. The emulator ends a stall as soon as the
client closes the connection, so a stall costs only the read timeout; being far longer than it,
the stall is outlasted however late the client gets to read."""
PERSISTENT_TIMES: Final = 10_000
"""A count no case uses up: the fault lasts the whole case."""
EXPORT_ROWS: Final = 1_000
"""Rows of the cohort the export rows stream (``cohort_small``)."""
CUT_AT_ROWS: Final = 400
"""Where stream faults break the export: after this many complete rows."""
TRICKLE_BYTES_PER_SECOND: Final = 200_000


class Family(StrEnum):
    """What kind of trouble a fault is, which decides the expected outcome."""

    SERVER_ERROR = "server error"
    RATE_LIMITED = "rate limited"
    NOT_COMPLETED = "not completed"
    RESET = "connection reset"
    STALL = "stall"
    STREAM_CUT = "stream cut"
    STREAM_SHORT = "stream ends early"
    STREAM_MALFORMED = "malformed line"
    STREAM_STALL = "stream stalls"
    STREAM_SLOW = "slow stream"


STALL_FAMILIES: Final = frozenset({Family.STALL, Family.STREAM_STALL})

STREAM_FAMILIES: Final = frozenset(
    {
        Family.STREAM_CUT,
        Family.STREAM_SHORT,
        Family.STREAM_MALFORMED,
        Family.STREAM_STALL,
        Family.STREAM_SLOW,
    }
)


@dataclass(frozen=True)
class MatrixFault:
    """One column of the matrix.

    :param key: short column name, also the test id.
    :param description: what the emulator does, for the report's legend.
    :param family: decides the expected outcome.
    :param kind: the emulator's fault kind.
    :param args: the fault's arguments (besides ``operation`` and ``times``).
    :param persistent: hit every request of the case instead of the first one.
    """

    key: str
    description: str
    family: Family
    kind: str
    args: dict[str, Any] = field(default_factory=dict)
    persistent: bool = False

    @property
    def times(self) -> int:
        return PERSISTENT_TIMES if self.persistent else 1

    @property
    def read_timeout(self) -> float:
        """The read timeouts of the case: short only where the fault stalls the answer."""
        return STALL_READ_TIMEOUT if self.family in STALL_FAMILIES else READ_TIMEOUT

    @property
    def stream_only(self) -> bool:
        """Whether the fault exists only for the export stream."""
        return self.family in STREAM_FAMILIES


def _status(status: int, **args: Any) -> dict[str, Any]:
    return {"status": status, "code": args.pop("code", status), "msg": f"injected {status}", **args}


GENERIC_FAULTS: Final[tuple[MatrixFault, ...]] = (
    MatrixFault("500", "HTTP 500 once", Family.SERVER_ERROR, "status", _status(500)),
    MatrixFault("502", "HTTP 502 once (proxy)", Family.SERVER_ERROR, "status", _status(502)),
    MatrixFault("503", "HTTP 503 once", Family.SERVER_ERROR, "status", _status(503)),
    MatrixFault(
        "504", "HTTP 504 once (proxy timeout)", Family.SERVER_ERROR, "status", _status(504)
    ),
    MatrixFault(
        "429",
        "HTTP 429 with Retry-After: 1, once",
        Family.RATE_LIMITED,
        "status",
        _status(429, retry_after=1),
    ),
    MatrixFault(
        "501",
        "HTTP 501 with code 501 (quota exceeded), once",
        Family.NOT_COMPLETED,
        "status",
        _status(501, code=501),
    ),
    MatrixFault("reset", "connection reset before any answer, once", Family.RESET, "reset"),
    MatrixFault(
        "stall",
        f"no answer until the client gives up (read timeout {STALL_READ_TIMEOUT:g} s), once; "
        "the request is then carried out",
        Family.STALL,
        "stall",
        {"seconds": STALL_SECONDS},
    ),
    MatrixFault(
        "503*", "HTTP 503 on every request", Family.SERVER_ERROR, "status", _status(503), True
    ),
    MatrixFault(
        "429*",
        "HTTP 429 with Retry-After: 0 on every request",
        Family.RATE_LIMITED,
        "status",
        _status(429, retry_after=0),
        True,
    ),
    MatrixFault("reset*", "connection reset on every request", Family.RESET, "reset", {}, True),
)

STREAM_FAULTS: Final[tuple[MatrixFault, ...]] = (
    MatrixFault(
        "cut",
        f"connection dropped after {CUT_AT_ROWS} complete rows, once",
        Family.STREAM_CUT,
        "cut_after_rows",
        {"rows": CUT_AT_ROWS},
    ),
    MatrixFault(
        "cut-in-line",
        f"connection dropped inside row {CUT_AT_ROWS + 1}, once",
        Family.STREAM_CUT,
        "cut_inside_line",
        {"rows": CUT_AT_ROWS},
    ),
    MatrixFault(
        "short",
        f"body ends cleanly after {CUT_AT_ROWS} rows (silent truncation), once",
        Family.STREAM_SHORT,
        "end_after_rows",
        {"rows": CUT_AT_ROWS},
    ),
    MatrixFault(
        "malformed",
        f"a line that is not JSON after {CUT_AT_ROWS} rows, once",
        Family.STREAM_MALFORMED,
        "malformed_line",
        {"rows": CUT_AT_ROWS},
    ),
    MatrixFault(
        "stall-mid",
        f"no data after {CUT_AT_ROWS} rows until the client gives up (read timeout "
        f"{STALL_READ_TIMEOUT:g} s), once",
        Family.STREAM_STALL,
        "stall_after_rows",
        {"rows": CUT_AT_ROWS, "seconds": STALL_SECONDS},
    ),
    MatrixFault(
        "trickle",
        f"body sent at {TRICKLE_BYTES_PER_SECOND // 1000} kB/s, once",
        Family.STREAM_SLOW,
        "trickle",
        {"bytes_per_second": TRICKLE_BYTES_PER_SECOND},
    ),
    MatrixFault(
        "cut*",
        f"connection dropped after {CUT_AT_ROWS} rows on every export",
        Family.STREAM_CUT,
        "cut_after_rows",
        {"rows": CUT_AT_ROWS},
        True,
    ),
    MatrixFault(
        "short*",
        f"body ends cleanly after {CUT_AT_ROWS} rows on every export",
        Family.STREAM_SHORT,
        "end_after_rows",
        {"rows": CUT_AT_ROWS},
        True,
    ),
)

ALL_FAULTS: Final = GENERIC_FAULTS + STREAM_FAULTS
