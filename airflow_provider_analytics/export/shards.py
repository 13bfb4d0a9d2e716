"""A cohort of any size, read in shards of the paged endpoint (spec 4.12) and published as one
output: each shard's pages decoded by the stream's decoder into a Parquet part of its own in a
staging folder, retried on its own, recorded with its part's SHA-256 under the plan (the run's
fingerprint, ``plan.json``), and checked before the one publication. The promise, resume and
the ``consistency`` choice are explained in ``docs/operators/cohort_shards.md``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import math
import zlib
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from airflow_provider_analytics.core import rules, strict_json
from airflow_provider_analytics.core.errors import (
    AnalyticsValidationError,
    CohortChangedError,
    ExportDataError,
    ShardStagingError,
)
from airflow_provider_analytics.core.heap import trim_heap
from airflow_provider_analytics.core.identity import request_digest
from airflow_provider_analytics.core.ndjson import iter_counted_blocks
from airflow_provider_analytics.core.retry import RetryPolicy
from airflow_provider_analytics.export.arrow_pool import arrow_memory_pool
from airflow_provider_analytics.export.decoder import BlockDecoder
from airflow_provider_analytics.export.number_rule import (
    first_inexact,
    inexact_in_double,
    value_slots,
)
from airflow_provider_analytics.export.shard_hold import HOLD_FILE, SharedHold, read_record
from airflow_provider_analytics.export.value_rule import DECODER
from airflow_provider_analytics.output.parquet import parquet_stream
from airflow_provider_analytics.output.roots import open_own
from airflow_provider_analytics.output.storage import remove_quietly, write_bytes_atomically

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from airflow_provider_analytics.client import AnalyticsClient
    from airflow_provider_analytics.client.validation import CohortQuery
    from airflow_provider_analytics.export.schema import ExportSchema
    from airflow_provider_analytics.export.settings import ExportSettings
    from airflow_provider_analytics.export.stream import PreparedExport
    from airflow_provider_analytics.output.storage import StoragePath

log = logging.getLogger(__name__)

PAGE_SIZE_MAX: Final = 10_000
"""The most users one call of the paged endpoint is meant for (``API_NOTES.md``)."""
PAGE_SIZE: Final = 5_000
"""A page is held whole while it is decoded: a million users peaked at ~290 MiB with pages of
10,000, ~245 with pages of 2,000, for about the same time."""
STREAM_ROWS_MAX: Final = 1_000_000
"""Above this ``mode="auto"`` reads pages: the proxy's cut falls around two million rows."""
SHARD_ROWS: Final = 200_000
MODES: Final = ("auto", "stream", "pages")
ID_PROPERTY: Final = "distinct_id"
CONSISTENCY: Final = ("first_pages", "strict")
"""What publication reads again: the first page of every shard, or every page."""
PLAN_FILE: Final = "plan.json"
SHARDS_MAX: Final = 100_000
"""The most shards a plan holds (20 billion users in the default shards): a larger plan comes
from a count no cohort has, and its list of shards alone would not fit in memory."""

_RECORD = ConfigDict(strict=True, extra="forbid", frozen=True)


@dataclass(frozen=True)
class Shard:
    """Pages ``first_page``..``last_page`` of a plan; ``rows`` users expected."""

    index: int
    first_page: int
    last_page: int
    rows: int


class _ShardRecord(BaseModel):
    """The declared shape of ``part-NNNNN.json``: a finished shard, its part's SHA-256."""

    model_config = _RECORD

    plan: str
    index: int = Field(ge=0)
    rows: int = Field(ge=0)
    sha256: str


class PlanColumn(BaseModel):
    """A column as the plan records it: its id, written name, Arrow type and number rule."""

    model_config = _RECORD

    id: str
    name: str
    type: str
    widens: bool = False
    starts_double: bool = False


class ShardPlan(BaseModel):
    """How a cohort is read (also the declared shape of ``plan.json``): every field is part of
    the run's fingerprint (:attr:`digest`), so two tries resume each other only when all of
    them agree, and every step of a run refuses a plan its own request does not make.
    ``count`` is the cohort's size when planned; ``columns`` follow ``properties``.
    """

    model_config = _RECORD

    cohort_code: str
    day: str
    properties: tuple[str, ...]
    limit: int | None = Field(default=None, ge=1)
    count: int = Field(ge=0)
    page_size: int = Field(ge=1, le=PAGE_SIZE_MAX)
    shard_pages: int = Field(ge=1)
    timezone: str
    columns: tuple[PlanColumn, ...]
    id_property: str = ID_PROPERTY

    @model_validator(mode="after")
    def _readable(self) -> ShardPlan:
        """The plan can be read: its pages can be asked for (a page number is a Java int), its
        shards listed, and it names a column for each property and the id among them."""
        pages = self.pages
        if pages > rules.COUNT_MAX or -(-pages // self.shard_pages) > SHARDS_MAX:
            raise AnalyticsValidationError(
                "shard_rows",
                f"{self.rows} users in pages of {self.page_size} make more than {SHARDS_MAX} "
                f"shards of {self.shard_pages} pages or {rules.COUNT_MAX} pages; raise "
                "shard_rows or page_size, or check the cohort's count",
            )
        if len(self.columns) != len(self.properties) or self.id_property not in self.properties:
            raise AnalyticsValidationError(
                "columns", "must be one a property, id_property among them"
            )
        return self

    @property
    def rows(self) -> int:
        """The users the export holds."""
        return self.count if self.limit is None else min(self.limit, self.count)

    @property
    def pages(self) -> int:
        """The pages the export's users fill."""
        return -(-self.rows // self.page_size)

    def page_rows(self, first: int, last: int) -> int:
        """The users pages ``first``..``last`` hold."""
        return min(last * self.page_size, self.rows) - (first - 1) * self.page_size

    @property
    def shards(self) -> list[Shard]:
        pages = max(1, self.pages)  # an empty cohort: one shard, which writes its schema
        found = []
        for index, first in enumerate(range(1, pages + 1, self.shard_pages)):
            last = min(first + self.shard_pages - 1, pages)
            found.append(Shard(index, first, last, self.page_rows(first, last)))
        return found

    def query(self, properties: Sequence[str] | None = None) -> CohortQuery:
        """The request of the plan's pages (of ``properties`` instead, when given): the limit
        bounds them to the exported rows, as the stream's limit does."""
        from airflow_provider_analytics.client.validation import cohort_query

        limit = max(self.rows, 1) if self.limit is not None else None  # a limit is 1 or more
        asked = list(self.properties if properties is None else properties)
        return cohort_query(self.cohort_code, limit=limit, properties=asked)

    @property
    def id_column(self) -> PlanColumn:
        return self.columns[self.properties.index(self.id_property)]

    @property
    def digest(self) -> str:
        """Names this plan: the run's fingerprint, every field."""
        return request_digest(self.model_dump(mode="json"))

    def differences(self, other: ShardPlan) -> str:
        """What differs, for the log: ``timezone 'UTC' -> 'Asia/Shanghai'``, ``column '$city'
        name '$city' -> 'city'``."""
        said = []
        for name in type(self).model_fields:
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine == theirs:
                continue
            if name != "columns":
                said.append(f"{name} {mine!r} -> {theirs!r}")
            elif [column.id for column in mine] != [column.id for column in theirs]:
                said.append(f"columns {[c.id for c in mine]} -> {[c.id for c in theirs]}")
            else:
                said += [
                    f"column {one.id!r} {key} {value!r} -> {getattr(two, key)!r}"
                    for one, two in zip(mine, theirs, strict=True)
                    for key, value in one
                    if value != getattr(two, key)
                ]
        return "; ".join(said)


def shard_pages(page_size: Any, shard_rows: Any) -> int:
    """The pages per shard, from the checked settings."""
    size = rules.integer(page_size, "page_size", minimum=1, maximum=PAGE_SIZE_MAX)
    rows = rules.integer(shard_rows, "shard_rows", minimum=1)
    return max(1, rows // size)


def check_id_property(
    id_property: Any, properties: Sequence[str] | None, schema: ExportSchema | None = None
) -> str:
    """The id property, checked: a property id (spec 2.5, ``$`` for a preset), one of
    ``properties`` when they are known, and with the export's ``schema`` (its columns follow
    ``properties``) a column whose ids publication can compare: text, a number or a boolean.

    :raises AnalyticsValidationError: naming ``id_property``.
    """
    name = rules.id_ref(id_property, "id_property")
    if properties is not None and name not in properties:
        rules.fail(
            "id_property",
            f"{name!r} is not among the properties {list(properties)}: reading a cohort in "
            "pages needs the property that tells users apart (no user may appear in two "
            "shards); add it, or name another unique property",
            name,
        )
    kind = None if schema is None else schema.columns[list(properties or ()).index(name)].arrow_type
    usable = (pa.string(), pa.large_string(), pa.bool_())
    if kind is not None and not (
        kind in usable or pa.types.is_integer(kind) or pa.types.is_floating(kind)
    ):
        rules.fail(
            "id_property",
            f"must be a string or number property: {name!r} is written as {kind}, whose ids "
            "publication cannot compare with the pages read again (no user twice, the same "
            "users); name another unique property",
            name,
        )
    return name


def plan_of(
    prepared: PreparedExport,
    *,
    day: str,
    count: int,
    page_size: int,
    shard_pages: int,
    id_property: str = ID_PROPERTY,
) -> ShardPlan:
    """The plan a prepared export makes for ``day``'s cohort of ``count`` users; its pages are no
    larger than a limited export's rows (a page may not exceed the request's limit)."""
    query, schema = prepared.query, prepared.schema
    if query.limit is not None:
        page_size = min(page_size, max(min(query.limit, count), 1))
    try:
        return ShardPlan(
            cohort_code=query.cohort_code,
            day=day,
            properties=tuple(query.properties or ()),
            limit=query.limit,
            count=count,
            page_size=page_size,
            shard_pages=shard_pages,
            timezone=schema.timezone,
            columns=tuple(
                PlanColumn(
                    id=column.name,
                    name=column.written_name,
                    type=str(column.arrow_type),
                    widens=column.widens,
                    starts_double=column.starts_double,
                )
                for column in schema.columns
            ),
            id_property=check_id_property(id_property, query.properties or (), schema),
        )
    except ValidationError as error:  # a count too large to read in pages
        raise rules.refusal(error) from None


def part_of(staging: StoragePath, shard: Shard, suffix: str = "parquet") -> StoragePath:
    """The Parquet part of ``shard`` in the staging folder (``suffix="json"``: its record)."""
    path: StoragePath = staging / f"part-{shard.index:05d}.{suffix}"
    return path


@dataclass(eq=False)
class ShardReader:
    """Reads shards of one plan into Parquet parts in ``staging``, the same ``schema`` for
    every shard. A ``Retry-After`` one of its calls gets holds off every reader of the plan, in
    any process on any worker (:mod:`~airflow_provider_analytics.export.shard_hold`)."""

    client: AnalyticsClient
    plan: ShardPlan
    schema: ExportSchema
    staging: StoragePath
    settings: ExportSettings

    def __post_init__(self) -> None:
        max_wait = self.client.config.retry_after_max
        self.hold = SharedHold(self.staging / HOLD_FILE, retry_after_max=max_wait)

    def read(self, shard: Shard) -> int:
        """Read the shard's pages into its part (atomically), then record it; retried on its
        own up to ``settings.attempts`` times, while this process' throttle (looked up at each
        read: a forked child has its own) shares its hold-off. Returns the rows written."""
        from airflow_provider_analytics.client.throttle import throttle_for

        policy = RetryPolicy.doubling(self.settings.attempts, self.settings.retry_delay)
        subject = f"cohort {self.plan.cohort_code} shard {shard.index}"
        with throttle_for(self.client.config.base_url).sharing(self.hold, f"shard {shard.index}"):
            rows = policy.retrying(subject, logger=log)(self._attempt, shard)
        # the part is hashed once written: its writer (output/parquet.py) may rewrite row groups
        digest = _sha256(part_of(self.staging, shard))
        record = _ShardRecord(plan=self.plan.digest, index=shard.index, rows=rows, sha256=digest)
        write_bytes_atomically(
            part_of(self.staging, shard, "json"), record.model_dump_json().encode()
        )
        return rows

    def _attempt(self, shard: Shard) -> int:
        plan, settings = self.plan, self.settings
        decoder = BlockDecoder(self.schema)
        query = plan.query()
        subject = f"cohort {plan.cohort_code!r} shard {shard.index}"
        progress = self.client.progress(
            f"cohort {plan.cohort_code} shard {shard.index}",
            total=shard.rows,
            interval=settings.progress_interval,
            bar=False,
        )
        with parquet_stream(
            part_of(self.staging, shard),
            self.schema.arrow_schema,
            compression=settings.compression,
            row_group_rows=settings.row_group_rows,
            row_group_bytes=settings.row_group_bytes,
            prepare=decoder.complete,
            widen=decoder.widen,
            subject=subject,
        ) as parquet:
            for page in range(shard.first_page, shard.last_page + 1):
                answer = self.client.get_cohort_user_lines(
                    query, page=page, page_size=plan.page_size
                )
                count, expected = answer.envelope["count"], plan.page_rows(page, page)
                if (count, answer.rows) != (plan.count, expected):
                    raise CohortChangedError(
                        f"cohort {plan.cohort_code!r} changed while it was read: page {page} "
                        f"(shard {shard.index}) gives count {count} and holds {answer.rows} "
                        f"users, the plan {plan.count} and {expected}; nothing was published"
                    )
                # the page's users as they were sent, one block (the page is held whole
                # anyway), by the stream's rule; a line too long is refused as the stream's
                if len(answer.lines) <= settings.max_line_bytes:
                    lines = answer.lines
                    parquet.add(decoder.finish(lines, decoder.parse(lines, answer.rows)))
                else:
                    for block, _ in iter_counted_blocks(
                        [answer.lines], settings.block_bytes, max_line_bytes=settings.max_line_bytes
                    ):
                        parquet.add(decoder.finish(block, decoder.parse(block)))
                progress.update(decoder.rows)
            parquet.flush()
        progress.finish(decoder.rows)
        if decoder.rows != shard.rows:
            raise CohortChangedError(f"{subject}: {decoder.rows} rows read, {shard.rows} planned")
        return decoder.rows


def _sha256(part: StoragePath) -> str:
    with open_own(part) as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()  # type: ignore[arg-type]


def finished(staging: StoragePath, plan: ShardPlan, shard: Shard) -> bool:
    """The one test of a finished shard (reading, resuming, publishing): its record names this
    plan and the shard's rows, and the part's bytes have the digest recorded (a part emptied,
    cut or replaced since is read again)."""
    part = part_of(staging, shard)
    try:
        record = read_record(part_of(staging, shard, "json"), _ShardRecord, "shard record")
    except ShardStagingError as refused:
        log.warning("%s; the shard is read again", refused)
        return False
    if record is None or (record.plan, record.rows) != (plan.digest, shard.rows):
        return False
    try:
        digest = _sha256(part)
    except FileNotFoundError:
        return False
    if digest != record.sha256:
        log.warning("%s is not the part its record names (digest differs); read again", part)
    return digest == record.sha256


def load_or_start_plan(staging: StoragePath, plan: ShardPlan) -> bool:
    """Keep the staging folder when it holds this very plan (a resumed try), else empty it and
    record ``plan``, logging what differs. Returns whether finished shards may be reused."""
    try:
        earlier: ShardPlan | None = read_record(staging / PLAN_FILE, ShardPlan, "shard plan")
        why = "" if earlier is None else earlier.differences(plan)
    except ShardStagingError as refused:
        earlier, why = None, str(refused)
    if earlier == plan:
        return True
    if why:
        log.warning(
            "staging %s holds the plan of another run (%s); starting over: its parts are "
            "removed and every shard is read again",
            staging,
            why,
        )
    clear_staging(staging)
    write_bytes_atomically(staging / PLAN_FILE, plan.model_dump_json().encode())
    return False


def clear_staging(staging: StoragePath) -> None:
    """Remove the staging folder's files (parts, records, the plan)."""
    for entry in list(staging.iterdir()) if staging.exists() else []:
        remove_quietly(entry)


def read_plan(staging: StoragePath) -> ShardPlan:
    """The plan recorded in ``staging``.

    :raises ShardStagingError: there is none, or ``plan.json`` is not a shard plan.
    """
    plan = read_record(staging / PLAN_FILE, ShardPlan, "shard plan")
    if plan is None:
        raise ShardStagingError(f"{staging}: no shard plan recorded ({PLAN_FILE})")
    return plan


def read_shards(
    reader: ShardReader, shards: Sequence[Shard], *, parallel: int = 1
) -> dict[int, int]:
    """Read the shards not finished yet, ``parallel`` at a time (each its own connection);
    returns rows per shard index. The first failure stops the others and is raised."""
    todo = [shard for shard in shards if not finished(reader.staging, reader.plan, shard)]
    done = {shard.index: shard.rows for shard in shards if shard not in todo}
    code = reader.plan.cohort_code
    if done:
        log.info("cohort %s: %d shards already read, %d to read", code, len(done), len(todo))
    rows = sum(shard.rows for shard in shards)
    interval = reader.settings.progress_interval
    with (
        closing(
            reader.client.progress(f"cohort {code}, all shards", total=rows, interval=interval)
        ) as total,
        arrow_memory_pool(reader.settings.memory_pool),
        ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="shard") as pool,
    ):
        serial = parallel == 1 or len(todo) <= 1
        for shard, read in zip(todo, (map if serial else pool.map)(reader.read, todo), strict=True):
            done[shard.index] = read
            trim_heap()  # what a shard freed, back before the next one
            total.update(sum(done.values()))
        total.finish(sum(done.values()))
    return done


def cohort_count(client: AnalyticsClient, query: CohortQuery) -> int:
    """The cohort's user count, from a one-row page (the paged endpoint's ``count``)."""
    count: int = client.get_cohort_users(query.sizing(), page=1, page_size=1)["count"]
    return count


def check_consistency(
    client: AnalyticsClient,
    plan: ShardPlan,
    parts: Sequence[StoragePath],
    consistency: str = "first_pages",
) -> None:
    """The promise, checked before publishing: rows equal the plan's, the cohort's count is
    the same now, no user is in two shards, and the pages ``consistency`` names, read again
    (ids only), hold the users the parts hold (an exchange keeps the count, not the pages).

    :raises CohortChangedError: saying what changed.
    """
    strict = rules.one_of(consistency, "consistency", CONSISTENCY) == "strict"
    rows = 0
    for part in parts:
        with open_own(part) as handle:
            rows += pq.ParquetFile(handle).metadata.num_rows
    if rows != plan.rows:
        raise CohortChangedError(
            f"cohort {plan.cohort_code!r}: the shards hold {rows} rows, the plan {plan.rows}; "
            "nothing was published"
        )
    _refuse_inexact_doubles(plan, parts)
    now = cohort_count(client, plan.query())
    if now != plan.count:
        raise CohortChangedError(
            f"cohort {plan.cohort_code!r} changed while it was read: count {plan.count} when "
            f"planned, {now} now; nothing was published"
        )
    _refuse_duplicate_ids(plan, parts)
    ids_only = plan.query([plan.id_property])
    key, column = plan.id_column.id, plan.id_column.name
    as_text = plan.id_column.type in ("string", "large_string")  # ids as the parts hold them
    for shard, part in zip(plan.shards, parts, strict=True):
        held_ids = itertools.chain.from_iterable(ids.to_pylist() for ids in _iter_ids(part, column))
        for page in range(shard.first_page, (shard.last_page if strict else shard.first_page) + 1):
            held = list(itertools.islice(held_ids, plan.page_size))
            answer = client.get_cohort_user_lines(ids_only, page=page, page_size=plan.page_size)
            # read by the rule that wrote the parts: a text id's number keeps its JSON text
            # one user a line: a JSON string may hold U+2028 or U+0085 unescaped, which
            # str.splitlines would also cut at; each user read by the strict rules
            lines = [line for line in answer.lines.split(b"\n") if line]
            users = [
                strict_json.loads(line, using=DECODER) if as_text else strict_json.loads(line)
                for line in lines
            ]
            now_ids = [_json_text(user.get(key)) if as_text else user.get(key) for user in users]
            if now_ids != held:
                differ = sum(1 for one, other in zip(now_ids, held, strict=False) if one != other)
                raise CohortChangedError(
                    f"cohort {plan.cohort_code!r} changed while it was read: page {page} "
                    f"(shard {shard.index}) now holds other users than when it was read "
                    f"({differ + abs(len(now_ids) - len(held))} of {len(held)} differ), its "
                    "count unchanged; nothing was published"
                )


def _refuse_inexact_doubles(plan: ShardPlan, parts: Sequence[StoragePath]) -> None:
    """A ``number`` column one part holds as int64 and another as double is double in the day
    (:func:`~airflow_provider_analytics.output.parquet.unified_schema`): its integers are
    checked by the stream's number rule first, so one no double holds exactly is refused by
    name, as the stream refuses it, not by Arrow's cast in the merge.

    :raises ExportDataError: naming the column, its row and the setting that accepts it.
    """
    schemas = []
    for part in parts:
        with open_own(part) as handle:
            schemas.append(pq.read_schema(handle))
    wide = {
        field.name for schema in schemas for field in schema if pa.types.is_floating(field.type)
    }
    ids = {column.name: column.id for column in plan.columns}
    row = 0
    for part, schema in zip(parts, schemas, strict=True):
        names = [f.name for f in schema if f.name in wide and pa.types.is_integer(f.type)]
        with open_own(part) as handle:
            parquet = pq.ParquetFile(handle)
            for group in range(parquet.num_row_groups if names else 0):
                table = parquet.read_row_group(group, columns=names, use_threads=False)
                for name, values in zip(names, table.columns, strict=True):
                    found = first_inexact(values)
                    if found is not None:
                        value = values[found].as_py()
                        refusal = inexact_in_double(ids.get(name, name), value, None)
                        raise ExportDataError(
                            f"column {name!r} (row {row + found + 1} of the export): {value} "
                            f"is {refusal.why}; nothing was published. {refusal.setting}"
                        )
                row += table.num_rows
            row += 0 if names else parquet.metadata.num_rows


def _json_text(value: Any) -> Any:
    """A page's id as a text column holds it (:mod:`~.value_rule`: a number its JSON text as
    sent, which :data:`~.value_rule.DECODER` keeps, a boolean as JSON writes it)."""
    return json.dumps(value) if isinstance(value, bool) else value


def _in_bucket(ids: pa.Array, buckets: int, bucket: int) -> np.ndarray | pa.Array:
    """The ids of ``bucket``: an integer id's bucket is its value modulo ``buckets`` (the ids
    kept as a numpy view of the buffer), any other id's its CRC-32 modulo ``buckets``."""
    if pa.types.is_integer(ids.type) and not ids.null_count:
        kind = "i" if pa.types.is_signed_integer(ids.type) else "u"
        values = value_slots(ids, np.dtype(f"{kind}{ids.type.byte_width}"))
        return values if buckets == 1 else values[np.abs(values % buckets) == bucket]
    if buckets == 1:
        return ids
    return pa.array(
        [value for value in ids.to_pylist() if zlib.crc32(str(value).encode()) % buckets == bucket],
        ids.type,
    )


def _refuse_duplicate_ids(plan: ShardPlan, parts: Sequence[StoragePath]) -> None:
    """No id twice and none empty, checked bucket by bucket so memory stays at a bucket's ids
    (about a million) whatever the cohort's size."""
    buckets = max(1, math.ceil(plan.rows / 1_000_000))
    for bucket in range(buckets):
        chunks = []
        for ids in (ids for part in parts for ids in _iter_ids(part, plan.id_column.name)):
            if ids.null_count:  # users without an id cannot be told apart
                rules.fail(
                    "id_property",
                    f"is empty for {ids.null_count} users of cohort {plan.cohort_code!r}, so "
                    "it cannot tell them apart; name a property every user has; nothing was "
                    "published",
                    plan.id_property,
                )
            chunks.append(_in_bucket(ids, buckets, bucket))
        twice = _repeated(chunks)
        if twice is not None:
            raise CohortChangedError(
                f"cohort {plan.cohort_code!r} changed while it was read: user {twice!r} "
                "appears in two shards; nothing was published"
            )


def _iter_ids(part: StoragePath, column: str) -> Iterator[pa.Array]:
    """The part's ``column``, a row group at a time (``pq.read_table`` on a file object went
    through the dataset layer and held ~2.5x more memory for the same ids)."""
    with open_own(part) as handle:
        parquet = pq.ParquetFile(handle)
        for group in range(parquet.num_row_groups):
            ids = parquet.read_row_group(group, columns=[column], use_threads=False).column(0)
            yield ids.combine_chunks()


def _repeated(chunks: Sequence[np.ndarray | pa.Array]) -> Any:
    """An id held twice among ``chunks``, or ``None``: integer ids (numpy) by sorting one copy
    in place (eight bytes an id), other ids by counting them."""
    if not chunks:
        return None
    if isinstance(chunks[0], np.ndarray):
        ids = np.concatenate(chunks)
        ids.sort()
        same = np.flatnonzero(ids[1:] == ids[:-1])
        return int(ids[same[0]]) if same.size else None
    counts = pc.value_counts(pa.chunked_array(chunks))
    twice = counts.filter(pc.greater(counts.field("counts"), 1))
    return twice.field("values")[0].as_py() if len(twice) else None
