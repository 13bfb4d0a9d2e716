"""How a cohort export writes and retries: a plain dataclass, cheap to import.

The operator builds one when a DAG file is parsed, so this module imports nothing heavy
(no Arrow, no HTTP stack).
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_provider_analytics.core.ndjson import MAX_LINE_BYTES


@dataclass(frozen=True)
class ExportSettings:
    """How to write: all optional, the defaults suit cohorts up to millions of users.

    :param compression: Parquet codec (zstd, snappy, gzip, none).
    :param row_group_rows: rows per Parquet row group at most (at least 1); with
        ``row_group_bytes`` it bounds memory.
    :param row_group_bytes: flush a row group once its Arrow data reaches this size. 3 MiB
        (~13,500 users of 19 properties) took a 1M-user first export with Airflow imported to
        250-254 MiB peak RSS against 253-257 with 4 MiB (the heap trimmed in both), for a file
        3% larger (4 MiB took it from 253 to 246 against 8 MiB, for 1.2%).
    :param block_bytes: NDJSON bytes decoded at once.
    :param max_line_bytes: the longest record line accepted; a longer one fails the export
        naming its row, so memory stays bounded whatever the server sends.
    :param chunk_bytes: bytes read from the socket at once at most (a read returns what one
        receive brought). A read reserves this much before the receive and gives back the
        rest: 256 KiB reads took a 1M-user export ~3 MiB lower than 1 MiB reads, for ~0.1 CPU s
        more in reading (more reads, each through urllib3).
    :param attempts: whole-export attempts for cut streams, transport faults and short counts.
    :param retry_delay: base seconds between attempts (doubled each time, with jitter).
    :param progress_interval: seconds between progress log lines (a number above 0);
        ``None``: the client's ``progress_interval`` (the connection extra), 10 s by default.
    :param parse_threads: blocks parsed at once (Arrow's parser releases the GIL). On 2 shared
        cores, 2 took a 1M-user export from 8.0 s to 5.8 s (medians of 3 alternating runs) for
        ~7 MiB more memory; 1 keeps a worker's other tasks a core.
    :param memory_pool: Arrow allocator during the export: ``system`` (default; returns freed
        memory to the OS promptly; a 1M-user export added ~50 MiB, ~95 with mimalloc) or
        ``default`` to leave Arrow's choice alone. It is pyarrow's allocator; what Arrow's C++
        code allocates for itself (the Parquet writer) comes from the allocator chosen when
        pyarrow loaded, which the provider makes the system one too
        (``ARROW_DEFAULT_MEMORY_POOL``, see the README).
    :param schema_contract: ``evolve`` (default), ``freeze`` or ``discard_new``: what a day may
        change in the destination's columns (:func:`~airflow_provider_analytics.export.schema.
        contracted`).

    Memory is dominated by ``row_group_bytes`` (two row groups are in flight: one filling, one
    being encoded). Larger row groups compress and scan a little better and cost that much
    more memory.
    """

    compression: str = "zstd"
    row_group_rows: int = 262_144
    row_group_bytes: int = 3 << 20
    block_bytes: int = 1 << 20
    max_line_bytes: int = MAX_LINE_BYTES
    chunk_bytes: int = 1 << 20
    attempts: int = 3
    retry_delay: float = 2.0
    progress_interval: float | None = None
    memory_pool: str = "system"
    parse_threads: int = 2
    schema_contract: str = "evolve"
