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
from analytics_emulator.disconnects import hold, wait_disconnect

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from starlette.types import Receive, Scope, Send

    from analytics_emulator.connections import ConnectionRegistry
    from analytics_emulator.population import EncodedBlock, Population

DEFAULT_CACHE_BYTES: Final = 1 << 30
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

    :param rows: users ``0..rows-1``.
    """

    population: Population
    cache: BlockCache
    properties: tuple[str, ...]
    masked: frozenset[str]
    rows: int

    def block(self, index: int) -> EncodedBlock:
        key = (self.properties, self.masked, index)
        return self.cache.get_or_build(
            key,
            lambda: self.population.encode_block(index, self.properties, masked=self.masked),
        )

    async def blocks(self) -> AsyncIterator[tuple[EncodedBlock, int]]:
        """Each block with the number of its rows that belong to the export.

        The next :data:`PREFETCH_BLOCKS` blocks are encoded in worker threads while the
        caller sends this one (numpy releases the GIL for most of the work).
        """
        loop = asyncio.get_running_loop()
        count = self.population.block_count(self.rows)
        size = self.population.block_rows
        pending: deque[asyncio.Future[EncodedBlock]] = deque()
        for index in range(count):
            while len(pending) < PREFETCH_BLOCKS and index + len(pending) < count:
                pending.append(loop.run_in_executor(None, self.block, index + len(pending)))
            block = await pending.popleft()
            yield block, min(size, self.rows - index * size)


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
    async for block, rows in source.blocks():
        start = 0
        if sent <= at < sent + rows:
            local = at - sent
            yield block.lines(0, local)
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
        yield block.lines(start, rows)
        sent += rows
    if at >= sent and kind == f.MALFORMED_LINE:
        yield MALFORMED_LINE
    elif at >= sent and kind == f.STALL_AFTER_ROWS:
        await hold(pause, disconnected.wait())


class ExportResponse(Response):
    """A chunked NDJSON response that can also be cut, corrupted or slowed by a fault.

    :param connections: used to drop the connection for the ``cut_*`` faults.
    """

    def __init__(
        self, source: ExportSource, fault: f.Fault | None, connections: ConnectionRegistry
    ) -> None:
        self.source = source
        self.fault = fault
        self.connections = connections
        self.status_code = 200
        self.background = None
        self.init_headers({"Cache-Control": "no-store", "Content-Type": MEDIA_TYPE})

    def _cuts(self) -> bool:
        return self.fault is not None and self.fault.kind in (f.CUT_AFTER_ROWS, f.CUT_INSIDE_LINE)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
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
            async for piece in self._paced(_stream_pieces(self.source, self.fault, disconnected)):
                if disconnected.is_set():
                    return
                await send({"type": "http.response.body", "body": piece, "more_body": True})
            if self._cuts():
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
