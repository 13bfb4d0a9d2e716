"""How a cohort export writes and retries: a plain dataclass that imports nothing heavy (the
operator builds one when a DAG file is parsed)."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_provider_analytics.core.ndjson import MAX_LINE_BYTES


@dataclass(frozen=True)
class ExportSettings:
    """How to write: all optional, the defaults suit cohorts up to millions of users (their
    measurements: ``docs/export_profile.md``). Memory is dominated by ``row_group_bytes``: two
    row groups are in flight, one filling, one being encoded.

    :param compression: Parquet codec (zstd, snappy, gzip, none).
    :param row_group_rows: rows per Parquet row group at most (at least 1).
    :param row_group_bytes: flush a row group once its Arrow data reaches this size. 3 MiB
        (~13,500 users of 19 properties) took a 1M-user first export with Airflow imported to
        250-254 MiB peak RSS against 253-257 with 4 MiB (the heap trimmed in both), for a file
        3% larger.
    :param block_bytes: NDJSON bytes decoded at once. 1.25 MiB took a 1M-user first export
        ~3% less CPU than 1 MiB (fewer hand-offs between threads) for ~2 MiB more peak RSS;
        1.5 MiB ~5% less, for 6-8 MiB more (over 256 MiB with Airflow imported).
    :param max_line_bytes: the longest record line accepted; a longer one fails the export.
    :param chunk_bytes: bytes read from the socket at once at most. 512 KiB held ~3 MiB less
        than 1 MiB at the peak, at the same wall time.
    :param attempts: whole-export attempts for cut streams, transport faults and short counts.
    :param retry_delay: base seconds between attempts (doubled each time, with jitter), at
        most a day.
    :param progress_interval: seconds between progress log lines; ``None``: the client's.
    :param parse_threads: blocks parsed at once, 1 to 64 (1 keeps a worker's other tasks a
        core).
    :param memory_pool: Arrow allocator during the export: ``system``, ``default`` or
        ``mimalloc`` (:mod:`~airflow_provider_analytics.export.arrow_pool`).
    :param schema_contract: ``evolve``, ``freeze`` or ``discard_new``: what a day may change
        in the destination's columns (``docs/output_tables.md``).
    """

    compression: str = "zstd"
    row_group_rows: int = 262_144
    row_group_bytes: int = 3 << 20
    block_bytes: int = 5 << 18
    max_line_bytes: int = MAX_LINE_BYTES
    chunk_bytes: int = 1 << 19
    attempts: int = 3
    retry_delay: float = 2.0
    progress_interval: float | None = None
    memory_pool: str = "system"
    parse_threads: int = 2
    schema_contract: str = "evolve"
