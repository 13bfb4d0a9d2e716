"""The proxy in front of a cohort's stream (see :class:`.cohort_settings.ProxyCut`).

A forwarding proxy (endings ``mid_line`` and ``drop``) lets the rows through as they come and
cuts the stream at the first trigger: :class:`StreamCutter` counts the lines of the pieces
that pass and stops them there. A buffering proxy (ending ``504``) sends nothing before the
upstream has finished, so a stream longer than the cut reaches the client as one
``504 Gateway Time-out`` page and no row: :func:`times_out` decides it.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Final

import numpy as np
from starlette.responses import Response

from analytics_emulator.cohort_settings import MID_LINE

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterator, Callable

    from analytics_emulator.cohort_settings import ProxyCut

GATEWAY_TIMEOUT_PAGE: Final = (
    b"<html>\r\n<head><title>504 Gateway Time-out</title></head>\r\n<body>\r\n"
    b"<center><h1>504 Gateway Time-out</h1></center>\r\n</body>\r\n</html>\r\n"
)
"""What a proxy sends when the upstream took too long (an HTML page, not the platform's JSON)."""
_NEWLINE: Final = ord("\n")


def gateway_timeout() -> Response:
    return Response(GATEWAY_TIMEOUT_PAGE, status_code=504, media_type="text/html")


async def times_out(
    cut: ProxyCut, rows: int, produce: Callable[[], AsyncGenerator[object]], started: float
) -> bool:
    """Whether a buffering proxy gives up on a stream of ``rows`` lines before its end.

    Past ``cut.rows`` it always does (the wait the platform would take is skipped). With
    ``cut.seconds``, the stream is produced and thrown away until it ends or the time is up,
    as the proxy would have read it.

    :param produce: starts the stream's pieces (the export's ``ExportSource.blocks``).
    :param started: ``time.monotonic()`` when the request arrived.
    """
    if cut.rows is not None and rows > cut.rows:
        return True
    if cut.seconds is None:
        return False
    deadline = started + cut.seconds
    blocks = produce()
    async with contextlib.aclosing(blocks):
        async for _ in blocks:
            if time.monotonic() > deadline:
                return True
    return time.monotonic() > deadline


class StreamCutter:
    """Passes a forwarding proxy's pieces through until its cut; ``cut`` tells whether it
    happened (the response must then drop the connection instead of ending the body).

    :param cut: the proxy's triggers and ending (``mid_line`` or ``drop``).
    :param started: ``time.monotonic()`` when the request arrived.
    """

    def __init__(self, cut: ProxyCut, started: float) -> None:
        self.rows_left = cut.rows
        self.deadline = None if cut.seconds is None else started + cut.seconds
        self.mid_line = cut.ending == MID_LINE
        self.cut = False

    async def apply(self, pieces: AsyncIterator[memoryview]) -> AsyncIterator[memoryview]:
        async for piece in pieces:
            if not piece:
                continue
            if self.deadline is not None and time.monotonic() >= self.deadline:
                for rest in self._cut_at(piece, 0):
                    yield rest
                return
            if self.rows_left is not None:
                ends = np.flatnonzero(np.frombuffer(piece, dtype=np.uint8) == _NEWLINE)
                if len(ends) > self.rows_left:
                    keep = 0 if self.rows_left == 0 else int(ends[self.rows_left - 1]) + 1
                    for rest in self._cut_at(piece, keep):
                        yield rest
                    return
                self.rows_left -= len(ends)
            yield piece

    def _cut_at(self, piece: memoryview, keep: int) -> list[memoryview]:
        """The bytes sent before the drop: ``piece[:keep]`` (whole lines), then for
        ``mid_line`` half of the line that follows."""
        self.cut = True
        sent = [piece[:keep]] if keep else []
        if self.mid_line:
            rest = piece[keep:]
            newline = np.flatnonzero(np.frombuffer(rest, dtype=np.uint8) == _NEWLINE)
            line_length = int(newline[0]) if len(newline) else len(rest)
            half = max(line_length // 2, 1)
            sent.append(rest[:half])
        return sent
