"""The streamed cohort export (spec 4.13): NDJSON blocks, their cache, and stream faults.

The body is produced one block of users at a time (never whole), each block encoded by
:meth:`.Population.encode_block` in a worker thread while the previous block is being
written, and sent with chunked transfer encoding. Encoded blocks are kept in a bounded
LRU cache, so a second export of the same properties is served at socket speed.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from starlette.responses import Response

from analytics_emulator import faults as f
from analytics_emulator.cohort_settings import GATEWAY_TIMEOUT
from analytics_emulator.disconnects import hold, wait_disconnect
from analytics_emulator.proxy_cut import StreamCutter, gateway_timeout, times_out

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterator, Callable

    from starlette.types import Receive, Scope, Send

    from analytics_emulator.cohort_settings import ProxyCut
    from analytics_emulator.connections import ConnectionRegistry
    from analytics_emulator.population import EncodedBlock, Population

DEFAULT_CACHE_BYTES: Final = 1 << 30
DEFAULT_CACHE_ROWS: Final = 4_000_000
"""Largest cohort whose blocks are cached: a larger one could never be served whole from the
cache, so its blocks are built, sent and forgotten, and memory stays flat whatever its size."""
MEDIA_TYPE: Final = "application/x-ndjson; charset=utf-8"
MALFORMED_LINE: Final = memoryview(b'{"distinct_id": 42, "unterminated\n')
"""What a ``malformed_line`` fault writes: a line that is not JSON."""
PREFETCH_BLOCKS: Final = 2
_TRICKLE_TICK: Final = 0.05
_DISCONNECT_GRACE: Final = 30.0

BlockKey = tuple[tuple[str, ...], frozenset[str], int]


class BlockCache:
    """Encoded blocks by (properties, masked properties, block index), least recently used
    evicted first once their total size passes ``max_bytes``.

    :param max_bytes: the cap; 0 disables caching.
    """

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self._blocks: OrderedDict[BlockKey, EncodedBlock] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def get_or_build(self, key: BlockKey, build: Callable[[], EncodedBlock]) -> EncodedBlock:
        with self._lock:
            block = self._blocks.get(key)
            if block is not None:
                self._blocks.move_to_end(key)
                self.hits += 1
                return block
            self.misses += 1
        block = build()
        if block.nbytes <= self.max_bytes:
            with self._lock:
                if key not in self._blocks:
                    self._blocks[key] = block
                    self._bytes += block.nbytes
                while self._bytes > self.max_bytes:
                    _, evicted = self._blocks.popitem(last=False)
                    self._bytes -= evicted.nbytes
        return block

    def clear(self) -> None:
        with self._lock:
            self._blocks.clear()
            self._bytes = 0


@dataclass(frozen=True)
class ExportSource:
    """Which users and properties an export streams.

    :param rows: how many users: ``first_user..first_user+rows-1``, in that order.
    :param first_user: the first one (a cohort whose membership shifted starts later).
    :param skip_from: users from this one on are ``skip`` further (``skip`` users left there).
    :param cached: keep the encoded blocks in ``cache`` (off for very large cohorts).
    """

    population: Population
    cache: BlockCache
    properties: tuple[str, ...]
    masked: frozenset[str]
    rows: int
    first_user: int = 0
    skip_from: int = 0
    skip: int = 0
    cached: bool = True

    def block(self, index: int) -> EncodedBlock:
        def build() -> EncodedBlock:
            return self.population.encode_block(index, self.properties, masked=self.masked)

        if not self.cached:
            return build()
        return self.cache.get_or_build((self.properties, self.masked, index), build)

    def windows(self) -> list[tuple[int, int, int]]:
        """Each block the export reads, with the first and the stop line of its rows that
        belong to the export: ``(index, first, stop)``."""
        size, start, end = self.population.block_rows, self.first_user, self.first_user + self.rows
        ranges = [(start, end)]
        if self.skip and start < self.skip_from < end:
            ranges = [(start, self.skip_from), (self.skip_from + self.skip, end + self.skip)]
        elif self.skip and self.skip_from <= start:
            ranges = [(start + self.skip, end + self.skip)]
        return [
            (index, max(first - index * size, 0), min(stop - index * size, size))
            for first, stop in ranges
            if stop > first
            for index in range(first // size, self.population.block_count(stop))
        ]

    def text(self) -> bytes:
        """All the export's lines at once (for a page, never for a whole stream)."""
        return b"".join(
            self.block(index).lines(first, stop) for index, first, stop in self.windows()
        )

    async def blocks(self) -> AsyncGenerator[tuple[EncodedBlock, int, int]]:
        """Each block with the first and the stop line of its rows that belong to the export.

        The next :data:`PREFETCH_BLOCKS` blocks are encoded in worker threads while the
        caller sends this one (numpy releases the GIL for most of the work).
        """
        loop = asyncio.get_running_loop()
        windows = self.windows()
        pending: deque[asyncio.Future[EncodedBlock]] = deque()
        for position, (_, first, stop) in enumerate(windows):
            while len(pending) < PREFETCH_BLOCKS and position + len(pending) < len(windows):
                ahead = windows[position + len(pending)][0]
                pending.append(loop.run_in_executor(None, self.block, ahead))
            block = await pending.popleft()
            yield block, first, stop


async def _stream_pieces(
    source: ExportSource, fault: f.Fault | None, disconnected: asyncio.Event
) -> AsyncIterator[memoryview]:
    """The body, piece by piece, with a ``cut_*``/``end_after_rows``/``malformed_line``/
    ``stall_after_rows`` fault applied.

    A cut or end fault ends the iteration early; for a cut the response then drops the
    connection, for an end it finishes the body as if it were complete. A stall pauses after
    its rows (or at the end of a shorter body) until its seconds have passed or
    ``disconnected`` is set, then goes on.
    """
    kind = None if fault is None else fault.kind
    at = -1 if fault is None or kind == f.TRICKLE else int(fault.args["rows"])
    pause = float(fault.args["seconds"]) if fault is not None and kind == f.STALL_AFTER_ROWS else 0
    sent = 0
    async for block, first, stop in source.blocks():
        rows = stop - first
        start = first
        if sent <= at < sent + rows:
            local = first + at - sent
            yield block.lines(first, local)
            if kind in (f.CUT_AFTER_ROWS, f.END_AFTER_ROWS):
                return
            if kind == f.CUT_INSIDE_LINE:
                line = block.lines(local, local + 1)
                yield line[: (len(line) - 1) // 2]
                return
            if kind == f.STALL_AFTER_ROWS:
                await hold(pause, disconnected.wait())
            else:
                yield MALFORMED_LINE
            start = local
        yield block.lines(start, stop)
        sent += rows
    if at >= sent and kind == f.MALFORMED_LINE:
        yield MALFORMED_LINE
    elif at >= sent and kind == f.STALL_AFTER_ROWS:
        await hold(pause, disconnected.wait())


class ExportResponse(Response):
    """A chunked NDJSON response that can also be cut, corrupted or slowed by a fault, and
    cut by the cohort's proxy.

    :param connections: used to drop the connection for the ``cut_*`` faults and the cut.
    :param proxy_cut: the proxy in front of the stream, if any.
    """

    def __init__(
        self,
        source: ExportSource,
        fault: f.Fault | None,
        connections: ConnectionRegistry,
        proxy_cut: ProxyCut | None = None,
    ) -> None:
        self.source = source
        self.fault = fault
        self.connections = connections
        self.proxy_cut = proxy_cut
        self.status_code = 200
        self.background = None
        self.init_headers({"Cache-Control": "no-store", "Content-Type": MEDIA_TYPE})

    def _cuts(self) -> bool:
        return self.fault is not None and self.fault.kind in (f.CUT_AFTER_ROWS, f.CUT_INSIDE_LINE)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.monotonic()
        cut = self.proxy_cut
        if cut is not None and cut.ending == GATEWAY_TIMEOUT:
            if await times_out(cut, self.source.rows, self.source.blocks, started):
                await gateway_timeout()(scope, receive, send)
                return
            cut = None
        cutter = None if cut is None else StreamCutter(cut, started)
        disconnected = asyncio.Event()

        async def watch() -> None:
            await wait_disconnect(receive)
            disconnected.set()

        watcher = asyncio.create_task(watch())
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": self.status_code,
                    "headers": self.raw_headers,
                }
            )
            pieces = self._paced(_stream_pieces(self.source, self.fault, disconnected))
            if cutter is not None:
                pieces = cutter.apply(pieces)
            async for piece in pieces:
                if disconnected.is_set():
                    return
                await send({"type": "http.response.body", "body": piece, "more_body": True})
            if self._cuts() or (cutter is not None and cutter.cut):
                self.connections.drop(scope, flush=True)
                await hold(_DISCONNECT_GRACE, disconnected.wait())
                return
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            watcher.cancel()

    async def _paced(self, pieces: AsyncIterator[memoryview]) -> AsyncIterator[memoryview]:
        """The pieces unchanged, or sliced and spread out for a ``trickle`` fault."""
        if self.fault is None or self.fault.kind != f.TRICKLE:
            async for piece in pieces:
                if piece:
                    yield piece
            return
        rate = int(self.fault.args["bytes_per_second"])
        slice_bytes = max(1, int(rate * _TRICKLE_TICK))
        started = time.monotonic()
        sent = 0
        async for piece in pieces:
            for offset in range(0, len(piece), slice_bytes):
                chunk = piece[offset : offset + slice_bytes]
                sent += len(chunk)
                yield chunk
                delay = started + sent / rate - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)


class DroppedConnectionResponse(Response):
    """Closes the request's connection without sending a byte (the ``reset`` fault)."""

    def __init__(self, connections: ConnectionRegistry) -> None:
        self.connections = connections
        self.status_code = 444
        self.background = None
        self.raw_headers = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.connections.drop(scope, flush=False)
        await hold(_DISCONNECT_GRACE, wait_disconnect(receive))
