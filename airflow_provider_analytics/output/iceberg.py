"""Apache Iceberg tables as a destination: one run's (identity, day) replaced in one atomic commit.

Needs the ``[iceberg]`` extra (pyiceberg; only its public API is used). Every table written
here holds each row's identity (``cohort_code`` or ``report_key``:
:mod:`~airflow_provider_analytics.core.identity`) and a ``dt`` date column, and is partitioned
by both, so a run replaces exactly its own identity's day, also when another identity's run
commits at the same moment. A table of an earlier version (partitioned by ``dt`` alone) is
refused by name, with the migration to run
(:mod:`~airflow_provider_analytics.hooks.iceberg_migration`), never overwritten.

A run streams its rows into data files of its own under the table's location (the package's
one Parquet writer; the columns carry the table's field ids), one batch in memory however large
the day; then one transaction deletes the identity's current files of the day and adds the new
ones, so readers see the old day or the new one (:meth:`IcebergDayWriter.commit`). The table's
columns evolve before anything is written (:meth:`IcebergDayWriter.open`). Files of a run that
died before its commit are removed by
:class:`~airflow_provider_analytics.operators.iceberg_maintenance.IcebergMaintenanceOperator`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import re
import time
import uuid
import warnings
from dataclasses import KW_ONLY, dataclass
from dataclasses import field as attribute
from typing import TYPE_CHECKING, Any, Final

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.catalog import CatalogType, load_catalog
from pyiceberg.exceptions import (
    CommitFailedException,
    NoSuchTableError,
    TableAlreadyExistsError,
    ValidationError,
    ValidationException,
)
from pyiceberg.expressions import And, BooleanExpression, EqualTo, IsNull
from pyiceberg.schema import index_by_id
from pyiceberg.table import TableProperties
from pyiceberg.table.snapshots import ancestors_of
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import DateType, DoubleType, ListType, MapType, StringType, StructType

from airflow_provider_analytics.client.config import CONTROL_CHARACTERS, url_secrets
from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.column_names import column_id, warehouse_name
from airflow_provider_analytics.core.errors import (
    AnalyticsConfigurationError,
    AnalyticsUsageError,
    IcebergCommitError,
    IcebergLayoutError,
    IcebergSchemaError,
)
from airflow_provider_analytics.core.identity import DAY_COLUMN, refuse_partition_columns
from airflow_provider_analytics.core.retry import RetryPolicy
from airflow_provider_analytics.output.parquet import (
    ParquetStream,
    cast_to,
    parquet_compression,
    parquet_writer,
    read_row_groups,
    same_types,
)
from airflow_provider_analytics.output.roots import checked_destination

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

    from pyiceberg.catalog import Catalog
    from pyiceberg.io import OutputStream
    from pyiceberg.table import Table
    from pyiceberg.types import IcebergType, NestedField
    from tenacity import Retrying

    from airflow_provider_analytics.core.identity import Identity
    from airflow_provider_analytics.output.roots import RootList

log = logging.getLogger(__name__)

_EMPTY_DELETE: Final = "Delete operation did not match any records"
_THIS_MODULE: Final = re.escape(__name__) + r"\Z"
_EMPTY_DELETE_FILTER: Final = (
    "ignore",
    re.compile(_EMPTY_DELETE, re.I),
    Warning,
    re.compile(_THIS_MODULE),
    0,
)  # the entry as warnings.filterwarnings puts it in the list


def _quiet_empty_delete() -> None:
    """Leave out pyiceberg's warning that a delete matched nothing (a day's first run), for
    this module's calls only (pyiceberg attributes it to its caller): the filter is put first
    in the process's list unless it stands there already, so that a filter added later
    (``simplefilter("error")``) cannot make the warning an error. ``warnings.catch_warnings``
    around each call is not thread-safe (concurrent commits leaked the warning, and threads
    restored each other's filters), and a filter set once at import is lost when the import
    happens under someone's ``catch_warnings`` (a test runner's collection)."""
    if warnings.filters[:1] != [_EMPTY_DELETE_FILTER]:
        warnings.filterwarnings("ignore", _EMPTY_DELETE, module=_THIS_MODULE)


IDENTITY_PROPERTY: Final = "analytics.identity"
"""Snapshot summary property naming the identity a commit replaced (``cohort_code=vip``)."""

DAY_PROPERTY: Final = "analytics.dt"
"""Snapshot summary property naming the day a commit replaced."""

COMMIT_PROPERTY: Final = "analytics.commit"
"""Snapshot summary property holding the writer's commit id (the snapshots of one commit share
it: the DELETE of the day's old files and the APPEND of the new ones)."""

FIELD_ID_KEY: Final = b"PARQUET:field_id"
"""Where a Parquet column carries its Iceberg field id (read by every Iceberg reader)."""


def column_equals(column: str, value: str) -> BooleanExpression:
    """The row filter ``column = value`` (built, not parsed: any value is taken as it is)."""
    # pyiceberg's own constructor takes (term, literal); pydantic's mypy plugin sees the fields
    return EqualTo(column, value)  # type: ignore[call-arg, arg-type]


def column_is_null(column: str) -> BooleanExpression:
    """The row filter ``column IS NULL``."""
    return IsNull(column)  # type: ignore[call-arg, arg-type]


def full_metrics(column: str) -> dict[str, str]:
    """Table properties keeping ``column``'s bounds whole in the file metrics.

    Iceberg truncates string bounds to 16 characters by default; a longer identity (a report
    key's digest) would then not prove that a file holds that identity alone, and a rerun's
    delete would read and rewrite the file instead of dropping it.
    """
    return {f"write.metadata.metrics.column.{column}": "full"}


def lost_race(identifier: str, what: str, attempts: int, error: Exception) -> IcebergCommitError:
    """The error of a commit (``what``) that lost to another writer, retried until its
    ``attempts`` have all lost: the last one is raised, so its message counts them all."""
    lost = IcebergCommitError(
        f"{identifier}: the {what} lost to other writers {attempts} times: {error}"
    )
    lost.reason = f"{what} lost a race ({error})"
    return lost


def catalog_properties(
    *,
    host: str | None = None,
    port: int | None = None,
    schema: str | None = None,
    login: str | None = None,
    password: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """pyiceberg catalog properties from the fields of an Airflow connection (which field is
    what: :class:`~airflow_provider_analytics.hooks.iceberg.IcebergCatalogHook`).

    The extra holds the properties as pyiceberg names them; ``type`` defaults to ``sql`` for a
    database URL (``sqlite:``, ``postgresql``) and ``rest`` otherwise. A SQL catalog's password
    goes into its ``uri``; a REST catalog's ``uri`` may come from host, port and schema, and its
    password is the bearer ``token``. AWS Glue (``"type": "glue"``) takes no ``uri``: host and
    port are its endpoint (``glue.endpoint``), login and password the AWS access key id and
    secret, the extra's ``region_name`` its region; without them boto3 and pyarrow find them the
    standard AWS way.

    A property is text (numbers and booleans are written as text), or an object for the
    settings pyiceberg reads nested (a REST catalog's ``ssl`` and ``auth``); ``type`` is read in
    lower case.

    :raises AnalyticsConfigurationError: naming the field when a catalog that needs a ``uri``
        has neither ``uri`` nor ``host``, a Glue password comes without an access key id, or a
        value is a list or holds a control character (not shown: it may be a credential).
    """
    if not isinstance(extra or {}, dict):
        raise AnalyticsConfigurationError(
            f"iceberg connection: the extra must be a JSON object (got {type(extra).__name__})"
        )
    properties = _properties(extra or {}, "")
    properties.pop("catalog_name", None)
    if password is not None:
        _property_text("password", password)
    if isinstance(properties.get("type"), str):
        properties["type"] = properties["type"].lower()
    address = f"{host}" + (f":{port}" if port else "")
    if properties.get("type") == "glue":
        if host:
            properties.setdefault("glue.endpoint", f"{schema or 'https'}://{address}")
        if password and not login and "client.access-key-id" not in properties:
            raise AnalyticsConfigurationError(
                "iceberg connection: a Glue catalog's password is the AWS secret access key; "
                "give the access key id as login"
            )
        given = {
            "client.access-key-id": login,
            "client.secret-access-key": password,
            "client.region": properties.pop("region_name", None),
        }
        return {key: value for key, value in given.items() if value} | properties
    if "uri" not in properties:
        if not host:
            raise AnalyticsConfigurationError(
                "iceberg connection: give the catalog's uri in the extra (e.g. "
                "sqlite:///catalog.db, postgresql+psycopg2://host/db), a REST host, or "
                '"type": "glue"'
            )
        properties["uri"] = f"{schema or 'http'}://{address}"
    uri = properties["uri"]
    if not isinstance(uri, str):
        raise AnalyticsConfigurationError("iceberg connection: uri must be text, not an object")
    is_database = uri.startswith(("sqlite:", "postgresql"))
    kind = properties.setdefault("type", "sql" if is_database else "rest")
    kinds = [known.value for known in CatalogType]
    if not isinstance(kind, str) or kind not in kinds:
        raise AnalyticsConfigurationError(
            f"iceberg connection: type must be one of {', '.join(kinds)} (got {str(kind)[:40]!r})"
        )
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:  # the value is not shown: a URL may carry a password
        url = make_url(uri)
    except (ArgumentError, ValueError) as error:
        raise AnalyticsConfigurationError(
            f"iceberg connection: uri must be a URL (scheme://host:port/...), its port a "
            f"number ({type(error).__name__})"
        ) from None
    if password and kind == "sql":  # the database URL carries login and password
        url = url.set(username=url.username or login, password=password)
        properties["uri"] = url.render_as_string(hide_password=False)
    elif password:
        properties.setdefault("token", password)
    return properties


def _properties(extra: Mapping[str, Any], within: str) -> dict[str, Any]:
    """The extra's properties as pyiceberg reads them: text at the top (numbers and booleans
    written as text), and an object's values as JSON gave them (a REST catalog hands ``auth``
    and ``ssl`` to its classes as they are: ``expires_in`` a number, ``cabundle`` false,
    ``scopes`` a list); every text checked for control characters."""
    properties: dict[str, Any] = {}
    for key, value in extra.items():
        name = f"{within}{key}"
        if isinstance(value, dict):
            properties[key] = _properties(value, f"{name}.")
        elif isinstance(value, list) and within:
            properties[key] = [_property_text(name, v) if isinstance(v, str) else v for v in value]
        elif isinstance(value, list):
            raise AnalyticsConfigurationError(
                f"iceberg connection: extra property {name!r} must be text, a number, a "
                "boolean or an object, not a list"
            )
        elif within and not isinstance(value, str):
            properties[key] = value  # a number, a boolean or null, as the class takes it
        elif value is not None:
            properties[key] = _property_text(name, str(value))
    return properties


def _property_text(name: str, value: str) -> str:
    if CONTROL_CHARACTERS.search(value):  # sent in a header or a URL, shown escaped by repr
        raise AnalyticsConfigurationError(
            f"iceberg connection: {name} must not hold a control character (a line end, a tab, ...)"
        )
    return value


_SECRET_KEY: Final = re.compile(
    r"token|credential|secret|passw|account-key|connection-string|private|authorization|"
    r"api-?key|cookie",
    re.IGNORECASE,
)
"""Catalog and FileIO property names whose values are credentials (``token``, ``credential``,
``s3.secret-access-key``, ``adls.account-key``, ``adls.connection-string``,
``header.Authorization``, ...)."""


def catalog_secrets(properties: Mapping[str, Any]) -> list[str]:
    """The credentials among catalog ``properties``, nested ones too: the values of properties
    named as credentials, and the password of any URL, as a URL reader finds it
    (:func:`~airflow_provider_analytics.client.config.url_secrets`) and as SQLAlchemy does (a
    SQL catalog's ``uri``, whose password may hold a ``/``)."""
    from sqlalchemy.engine import make_url

    secrets: list[str] = []
    for key, value in properties.items():
        if isinstance(value, dict):
            secrets += catalog_secrets(value)
            continue
        if not isinstance(value, str):  # a nested number, flag or list
            continue
        if _SECRET_KEY.search(key):
            secrets.append(value)
        if "://" in value:
            secrets += url_secrets(value)
            with contextlib.suppress(Exception):  # not a database URL
                secrets.append(make_url(value).password or "")
    return [secret for secret in dict.fromkeys(secrets) if secret]


def open_catalog(name: str, properties: Mapping[str, Any]) -> Catalog:
    """The pyiceberg catalog these properties describe.

    A SQL catalog creates its own tables when they are missing. Tasks that open a new catalog at
    the same moment (the first run of a DAG whose writers run in parallel) race on that DDL,
    and PostgreSQL fails the losers' ``CREATE TABLE`` on its own catalog's keys; the tables
    exist by then, so opening again succeeds. A failure that is not such a race fails again
    the same way."""
    from sqlalchemy.exc import DBAPIError

    retrying = RetryPolicy.doubling(3, 0.1).retrying(
        f"opening catalog {name}", retries=lambda error: isinstance(error, DBAPIError), logger=log
    )
    return retrying(load_catalog, name, **properties)


def identity_partitions(table: Table) -> set[str | None]:
    """The columns ``table`` is partitioned by with identity transforms."""
    schema = table.schema()
    return {
        schema.find_column_name(field.source_id)
        for field in table.spec().fields
        if isinstance(field.transform, IdentityTransform)
    }


def load_table(catalog: Catalog, identifier: str) -> Table:
    """The table, its metadata and current manifest list read whole.

    :raises NoSuchTableError: when the catalog holds no such table.
    :raises IcebergSchemaError: naming the table, when its metadata file cannot be parsed or a
        file it names is missing (a bare ValidationError, a bare FileNotFoundError after the
        download).
    """
    try:
        table = catalog.load_table(identifier)
        if (snapshot := table.current_snapshot()) is not None:
            snapshot.manifests(table.io)
    except (ValidationError, ValueError, FileNotFoundError) as error:
        raise IcebergSchemaError(
            f"{identifier}: the table's metadata cannot be read ({type(error).__name__}: "
            f"{str(error)[:300]}). Nothing was written. Restore it (its catalog's previous "
            "metadata file), or write to a new table"
        ) from error
    return table


def refuse_nested_namespace(catalog: Catalog, identifier: str) -> None:
    """Refuse ``a.b.c`` before anything is asked or made, in a catalog whose namespaces do not
    nest (every pyiceberg catalog but REST's): the SQL catalog made the namespaces, then
    refused the table with a bare ValueError after the download."""
    if identifier.count(".") <= 1:
        return
    from pyiceberg.catalog.rest import RestCatalog

    if not isinstance(catalog, RestCatalog):
        rules.fail(
            "iceberg_table",
            f"must be namespace.table: the {type(catalog).__name__} has no nested namespaces",
            identifier,
        )


def refuse_layout(table: Table, identifier: str, identity: Identity) -> None:
    """Refuse by name, before anything is asked or written, a table a run cannot replace its
    (``identity``, day) of:

    - not partitioned by identity transforms of the identity column and ``dt`` (an earlier
      version's table, or another tool's: the message names the migration);
    - those columns of other types than string and date (the day's delete cannot compare);
    - partitioned by anything else as well (a run's files cannot be given those partitions);
    - with a required column but those two, nested ones too (a run's columns may be null, and
      the schema update would quietly make it optional in another tool's table);
    - metrics properties keeping no whole bounds of those two (each data file's partition is
      read from them: its files would belong to no day, a rerun would duplicate the day and a
      reader's filter on ``dt`` find nothing).
    """
    if not {identity.column, DAY_COLUMN} <= identity_partitions(table):
        raise IcebergLayoutError(
            f"{identifier} is not partitioned by identity({identity.column}) and "
            f"identity({DAY_COLUMN}) (a table created by an earlier version, or by "
            f"another tool): a run would replace every row of its day, whoever wrote it. "
            f"Nothing was written. Migrate it once, naming what its rows hold: `python -m "
            f"airflow_provider_analytics.hooks.iceberg_migration --conn-id <iceberg connection> "
            f"{identifier} {identity.column}=<value of its rows>`, or write to a new table"
        )
    schema = table.schema()
    for column, kind in ((identity.column, StringType()), (DAY_COLUMN, DateType())):
        if (held := schema.find_type(column)) != kind:
            raise IcebergLayoutError(
                f"{identifier}: column {column!r} is {held} in the table, and a run writes it "
                f"as {kind}. Nothing was written. Write to a new table"
            )
    others = [
        f"{field.transform}({schema.find_column_name(field.source_id)})"
        for field in table.spec().fields
        if not isinstance(field.transform, IdentityTransform)
        or schema.find_column_name(field.source_id) not in (identity.column, DAY_COLUMN)
    ]
    if others:
        raise IcebergLayoutError(
            f"{identifier} is partitioned by {', '.join(others)} besides "
            f"identity({identity.column}) and identity({DAY_COLUMN}): a run's data files "
            "cannot be given those partitions. Nothing was written. Remove those partition "
            "fields from the table, or write to a new table"
        )
    fields = index_by_id(schema).values()
    keys = {field.field_type.key_id for field in fields if isinstance(field.field_type, MapType)}
    required = [
        name
        for field in fields
        if field.required and field.field_id not in keys
        if (name := schema.find_column_name(field.field_id)) not in (identity.column, DAY_COLUMN)
    ]
    if required:
        raise IcebergLayoutError(
            f"{identifier}: columns {required} are required in the table, and a run's columns "
            "may be null or missing: it would have to make them optional. Nothing was "
            "written. Make them optional in the table, or write to a new table"
        )
    properties = table.properties
    for column, longest in ((identity.column, len(identity.value)), (DAY_COLUMN, 1)):
        key = f"{TableProperties.METRICS_MODE_COLUMN_CONF_PREFIX}.{column}"
        if not properties.get(key):
            key = TableProperties.DEFAULT_WRITE_METRICS_MODE
        mode = properties.get(key, TableProperties.DEFAULT_WRITE_METRICS_MODE_DEFAULT)
        kept = re.fullmatch(r"full|truncate\(([0-9]{1,9})\)", mode.strip().lower())
        if kept is None or (kept[1] is not None and int(kept[1]) < longest):
            raise IcebergLayoutError(
                f"{identifier}: table property {key}={mode[:40]!r} keeps no whole bounds of "
                f"column {column!r}, from which each data file's partition is read. Nothing "
                f"was written. Set {TableProperties.METRICS_MODE_COLUMN_CONF_PREFIX}.{column}"
                "=full on the table, or write to a new table"
            )


@dataclass(eq=False, repr=False)
class IcebergDayWriter:
    """Replace one day's partition of one Iceberg table: open, write batches, commit (or abort).

    :param catalog: the pyiceberg catalog.
    :param identifier: ``namespace.table``; namespace and table are created when missing.
    :param day: the day whose partition the commit replaces.
    :param identity: the rows' identity (``cohort_code=vip``): the commit replaces only the
        day's rows of this identity, and every row written carries it.
    :param attempts: transactions tried when other writers keep committing first (pyiceberg
        itself retries each one ``commit.retry.num-retries`` times, a table property).
    :param retry_delay: base seconds between attempts (doubled each time, with jitter).
    :param sleep: waits between attempts (injectable for tests).
    :param target_file_bytes: start a new data file once this much Arrow data went into the
        current one; by default the table's ``write.target-file-size-bytes`` (pyiceberg's
        512 MiB of Arrow data; files are several times smaller once compressed).
    :param allowed_roots: the roots the deployment allows the package to write under; every
        data file's location is checked against them before it is created
        (:func:`~airflow_provider_analytics.output.roots.checked_destination`).
    """

    catalog: Catalog
    identifier: str
    day: dt.date
    _: KW_ONLY
    identity: Identity
    attempts: int = 10
    retry_delay: float = 0.05
    sleep: Callable[[float], None] = time.sleep
    target_file_bytes: int | None = None
    allowed_roots: Sequence[RootList] = ()
    commit_uuid: uuid.UUID = attribute(default_factory=uuid.uuid4, init=False)
    paths: list[str] = attribute(default_factory=list, init=False)
    """Every data file written so far (the last one may still be open)."""
    rows: int = attribute(default=0, init=False)
    bytes_written: int = attribute(default=0, init=False)
    """Bytes in the closed data files."""
    summary: dict[str, Any] | None = attribute(default=None, init=False)
    """What the last commit did (:meth:`commit`'s return)."""
    _table: Table | None = attribute(default=None, init=False)
    _file_schema: pa.Schema | None = attribute(default=None, init=False)
    _stream: OutputStream | None = attribute(default=None, init=False)
    _parquet: pq.ParquetWriter | None = attribute(default=None, init=False)
    _file_room: int = attribute(default=0, init=False)  # Arrow bytes until the next file
    _outcome_unknown: bool = attribute(default=False, init=False)
    _data_schema: pa.Schema | None = attribute(default=None, init=False)
    _added: set[str] = attribute(default_factory=set, init=False)
    """Columns this writer added to the table (their type may still widen)."""
    _added_at: int | None = attribute(default=None, init=False)
    _files_opened: int = attribute(default=0, init=False)
    _narrow: int = attribute(default=0, init=False)
    """How many of :attr:`paths` hold an earlier, narrower schema (rewritten at commit)."""
    _widen: Callable[[pa.Table, pa.Schema, int], pa.Table] | None = attribute(
        default=None, init=False
    )

    def __post_init__(self) -> None:
        rules.table_identifier(self.identifier, "iceberg_table")
        rules.positive_int(self.attempts, "attempts")
        if self.target_file_bytes is not None:
            rules.positive_int(self.target_file_bytes, "target_file_bytes")

    @property
    def table(self) -> Table:
        if self._table is None:
            raise AnalyticsUsageError("IcebergDayWriter.open() must be called first")
        return self._table

    def open(self, schema: pa.Schema) -> None:
        """Create the table if missing, or add the columns ``schema`` has and it lacks.

        :param schema: the data's columns (without the identity column and ``dt``, which are
            added).
        :raises AnalyticsValidationError: a data column named like a partition column (the one
            rule of :func:`~airflow_provider_analytics.core.identity.refuse_partition_columns`).
        :raises IcebergSchemaError: naming the column, when a column's type cannot evolve to
            the data's; nothing is written then.
        :raises IcebergLayoutError: when the table is not partitioned by the identity column
            and ``dt`` (an earlier version's table), naming the migration.
        """
        refuse_partition_columns(schema.names, "columns", f"{self.identifier}: the data's columns")
        # the table as the schema update left it (pyiceberg refreshes it in place on commit)
        self._table, existing = self._load_or_create(schema, self._with_partition_columns(schema))
        self._use_schema(schema)
        if set(schema.names) - existing:
            self._added |= set(schema.names) - existing
            self._added_at = self._table.metadata.current_snapshot_id

    def _widen_to(self, schema: pa.Schema) -> None:
        """Write the coming batches in ``schema``: the data's own with ``number`` columns turned
        from int64 to double.

        Iceberg cannot promote a long to a double, so only a column this writer added may turn,
        while nothing else was committed since (no other file can hold it as a long); its type
        is changed in the table at once. The files written so far are rewritten at
        :meth:`commit`, each row group converted by the stream's ``widen``, as a Parquet
        object's earlier segments are.

        :raises IcebergSchemaError: naming a column the table held before, or one another
            writer may have written since.
        """
        old = self._data_schema
        assert old is not None
        turned = [new for was, new in zip(old, schema, strict=True) if was.type != new.type]
        for field in turned:
            if field.name not in self._added or not pa.types.is_float64(field.type):
                raise IcebergSchemaError(
                    f"{self.identifier}: column {field.name!r} is held as "
                    f"{old.field(field.name).type} and the data turned to {field.type}; set "
                    f"schema_overrides={{{field.name!r}: 'double'}} to write it as double"
                )
        self._close_file()
        self._narrow = len(self.paths)

        def turn_to_double() -> Table:
            table = self.catalog.load_table(self.identifier)
            if table.metadata.current_snapshot_id != self._added_at:
                raise IcebergSchemaError(
                    f"{self.identifier}: columns {[field.name for field in turned]} turned to "
                    "double after another writer committed to the table; export again, or set "
                    "schema_overrides to double for them"
                )
            try:
                with table.update_schema(allow_incompatible_changes=True) as update:
                    for field in turned:
                        update.update_column(field.name, DoubleType())
            except CommitFailedException as error:
                raise lost_race(self.identifier, "schema update", self.attempts, error) from error
            return table

        self._table = self._retrying()(turn_to_double)
        self._use_schema(schema)

    def _with_partition_columns(self, schema: pa.Schema) -> pa.Schema:
        full = schema.append(pa.field(self.identity.column, pa.string(), nullable=False))
        return full.append(pa.field(DAY_COLUMN, pa.date32(), nullable=False))

    def _rewrite_narrow(self) -> None:
        """The data files written before the schema widened, again in the current one, the old
        ones deleted."""
        narrow, self._narrow = self.paths[: self._narrow], 0
        if not narrow:
            return
        rows, data, io = self.rows, self._data_schema, self.table.io
        assert data is not None
        opens = [lambda path=path: io.new_input(path).open() for path in narrow]
        for group in read_row_groups(opens, data, self._widen or cast_to, columns=data.names):
            self.write(group)
        # only now out of paths: until the rewrite is whole, an abort deletes them with the rest
        self.paths = self.paths[len(narrow) :]
        for path in narrow:
            io.delete(path)
        self.rows = rows  # the rewritten rows were counted once already

    def _refuse_renamed_columns(self, existing: Collection[str], schema: pa.Schema) -> None:
        """Refuse data whose column holds a platform id (field metadata ``analytics.id``) that
        the table holds under the other naming (``$city`` against ``city``): evolving would add
        a second column for the same property and leave the first null from this day on."""
        for field in schema:
            held_id = column_id(field)
            if held_id is None or field.name in existing:
                continue
            for other in {held_id, warehouse_name(held_id)} - {field.name}:
                if other in existing:
                    raise IcebergSchemaError(
                        f"{self.identifier}: the table holds {held_id!r} as column "
                        f"{other!r} and this run names it {field.name!r}; write with the "
                        "column_names the table was created with, or to a new table"
                    )

    def _load_or_create(self, schema: pa.Schema, full: pa.Schema) -> tuple[Table, set[str]]:
        """Load the table, or create it, check it and add the columns it lacks (``full``: the
        data's ``schema`` with the partition columns); the table as it is then, and the columns
        it held before.

        Writers of a new table (the cohorts of one ``.expand``) may all find it missing and
        create it at once. The catalogs refuse every creation but the first, either when it is
        staged (``TableAlreadyExistsError``) or when it is committed (``CommitFailedException``
        on its "table must not exist" requirement); the loser's next attempt, through the one
        retry engine, loads the table as the winner created it. A schema update that loses to
        another writer is tried again the same way, against the table as it is then.
        """
        refuse_nested_namespace(self.catalog, self.identifier)
        namespace = self.identifier.rpartition(".")[0]
        try:
            self.catalog.create_namespace_if_not_exists(namespace)
        except Exception:
            # created by a concurrent writer of another table: a SQL catalog's insert of the
            # namespace fails on its key instead of saying it exists
            if not self.catalog.namespace_exists(namespace):
                raise

        def attempt() -> tuple[Table, set[str]]:
            try:
                table = load_table(self.catalog, self.identifier)
                existing = {field.name for field in table.schema().fields}
            except NoSuchTableError:
                table, existing = self._create(full), set()
            refuse_layout(table, self.identifier, self.identity)
            self._refuse_renamed_columns(existing, schema)
            try:
                with table.update_schema() as update:
                    update.union_by_name(full)
            except (ValidationError, ValueError, TypeError) as error:
                raise IcebergSchemaError(
                    f"{self.identifier}: the data cannot be written as the table is: {error}"
                ) from error
            except CommitFailedException as error:
                raise lost_race(self.identifier, "schema update", self.attempts, error) from error
            return table, existing

        return self._retrying()(attempt)

    def _create(self, schema: pa.Schema) -> Table:
        try:
            with (
                self.catalog.create_table_transaction(
                    self.identifier, schema=schema, properties=full_metrics(self.identity.column)
                ) as create,
                create.update_spec() as spec,
            ):
                spec.add_identity(self.identity.column)
                spec.add_identity(DAY_COLUMN)
        except (TableAlreadyExistsError, CommitFailedException) as error:
            raise lost_race(self.identifier, "creation", self.attempts, error) from error
        log.info(
            "created Iceberg table %s partitioned by %s, %s",
            self.identifier,
            self.identity.column,
            DAY_COLUMN,
        )
        return self.catalog.load_table(self.identifier)

    def _use_schema(self, schema: pa.Schema) -> None:
        """Write the coming batches in ``schema`` and the partition columns, each column (nested
        ones too) carrying the table's field id for it, so that readers match the files'
        columns by id, as Iceberg's own writers do."""
        full = self._with_partition_columns(schema)
        columns = self.table.schema().as_struct()
        with_ids = self._type_with_ids(pa.struct(list(full)), columns, "")
        self._file_schema = pa.schema(list(with_ids), metadata=full.metadata)
        self._data_schema = schema

    def _field_with_id(self, field: pa.Field, column: NestedField, path: str) -> pa.Field:
        metadata = {**(field.metadata or {}), FIELD_ID_KEY: str(column.field_id).encode()}
        arrow_type = self._type_with_ids(field.type, column.field_type, path)
        return pa.field(field.name, arrow_type, field.nullable, metadata)

    def _type_with_ids(self, arrow_type: pa.DataType, iceberg: IcebergType, path: str) -> Any:
        if pa.types.is_struct(arrow_type) and isinstance(iceberg, StructType):
            children = []
            for child in arrow_type:
                child_path = f"{path}.{child.name}" if path else child.name
                column = iceberg.field_by_name(child.name)
                if column is None:
                    raise IcebergSchemaError(
                        f"{self.identifier}: the table has no column {child_path!r}"
                    )
                children.append(self._field_with_id(child, column, child_path))
            return pa.struct(children)
        if pa.types.is_map(arrow_type) and isinstance(iceberg, MapType):
            return pa.map_(
                self._field_with_id(arrow_type.key_field, iceberg.key_field, f"{path}.key"),
                self._field_with_id(arrow_type.item_field, iceberg.value_field, f"{path}.value"),
            )
        if isinstance(arrow_type, pa.ListType | pa.LargeListType) and isinstance(iceberg, ListType):
            element = self._field_with_id(arrow_type.value_field, iceberg.element_field, path)
            return (pa.list_ if pa.types.is_list(arrow_type) else pa.large_list)(element)
        if pa.types.is_nested(arrow_type) or not iceberg.is_primitive:
            raise IcebergSchemaError(
                f"{self.identifier}: column {path!r} is {iceberg} in the table and "
                f"{arrow_type} in the data"
            )
        return arrow_type

    def write(self, batch: pa.Table | pa.RecordBatch) -> None:
        """Write ``batch`` into the day's data files: the columns given to :meth:`open`, or
        the first batch's own, opening the table for them; a batch whose ``number`` columns
        turned from int64 to double widens the table first (:meth:`_widen_to`).

        Each batch becomes one row group; a new file is started once the current one holds
        the target's worth of Arrow data. Only the batch is held in memory.
        """
        if self._data_schema is None:
            self.open(batch.schema)
        elif not same_types(batch.schema, self._data_schema):
            self._widen_to(batch.schema)
        if batch.num_rows == 0:
            return
        identity = pa.repeat(pa.scalar(self.identity.value, pa.string()), batch.num_rows)
        day = pa.repeat(pa.scalar(self.day, pa.date32()), batch.num_rows)
        data = pa.Table.from_arrays([*batch.columns, identity, day], schema=self._file_schema)
        parquet = self._parquet or self._new_file()
        parquet.write_table(data, row_group_size=max(data.num_rows, 1))
        self.rows += batch.num_rows
        self._file_room -= data.nbytes
        if self._file_room <= 0:
            self._close_file()

    def _target_bytes(self) -> int:
        if self.target_file_bytes is not None:
            return self.target_file_bytes
        key = TableProperties.WRITE_TARGET_FILE_SIZE_BYTES
        value = self._int_property(key, 1, 2**63 - 1, blank=True)
        return TableProperties.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT if value is None else value

    def _int_property(self, key: str, least: int, most: int, *, blank: bool) -> int | None:
        """An integer table property (``None`` when unset, or blank where ``blank``), in ASCII
        digits and bounds (a ``²`` or 5,000 digits escaped as a bare ValueError)."""
        value = self.table.properties.get(key)
        if value is None or (blank and not value):
            return None
        if not re.fullmatch(r"-?[0-9]{1,19}", value) or not least <= int(value) <= most:
            raise AnalyticsConfigurationError(
                f"{self.identifier}: table property {key} must be an integer from {least} to "
                f"{most}, not {value[:40]!r}"
            )
        return int(value)

    def _new_file(self) -> pq.ParquetWriter:
        """Open the next data file under the table's data location (the day's folder)."""
        table = self.table
        assert self._file_schema is not None
        folder = f"{self.identity.folder}/{DAY_COLUMN}={self.day.isoformat()}"
        name = f"{folder}/{self.commit_uuid}-{self._files_opened:05d}.parquet"
        self._files_opened += 1
        path = table.location_provider().new_data_location(name)
        checked_destination(path, self.allowed_roots, "iceberg data file")
        properties = table.properties
        codec = properties.get(
            TableProperties.PARQUET_COMPRESSION, TableProperties.PARQUET_COMPRESSION_DEFAULT
        )
        if codec != "uncompressed":
            table_property = (
                f"{self.identifier}: table property {TableProperties.PARQUET_COMPRESSION}"
            )
            parquet_compression(codec, table_property)
        level = self._int_property(
            TableProperties.PARQUET_COMPRESSION_LEVEL, -(2**31), 2**31 - 1, blank=False
        )
        self.paths.append(path)
        stream = table.io.new_output(path).create(overwrite=False)
        try:
            self._parquet = parquet_writer(
                stream,
                self._file_schema,
                compression="none" if codec == "uncompressed" else codec,
                compression_level=level,
                # the table reads a file's partition, and every column's null count and
                # bounds (its default metrics), from them: without them pyiceberg dropped the
                # texts' null counts and logged a warning per text column and row group
                statistics_also=self._file_schema.names,
            )
        except BaseException:
            stream.close()
            raise
        self._stream = stream
        self._file_room = self._target_bytes()  # read once a file, not once a batch
        return self._parquet

    def close_files(self) -> None:
        """Finish the data files (the files stay uncommitted)."""
        self._close_file()
        self._rewrite_narrow()
        self._close_file()

    def _close_file(self) -> None:
        parquet, stream = self._parquet, self._stream
        self._parquet = self._stream = None
        try:
            if parquet is not None:
                parquet.close()
                assert stream is not None
                self.bytes_written += stream.tell()
        finally:
            if stream is not None:
                stream.close()

    def commit(self) -> dict[str, Any]:
        """Delete the identity's old files of the day and add the written ones: a DELETE and an
        APPEND snapshot in one catalog commit, retried (with the same files) against the current
        table when other writers committed first.

        :raises IcebergCommitError: when every attempt lost to another writer.
        :raises IcebergSchemaError: when the catalog refuses the files' columns.
        """
        self.close_files()
        day, ours = self.day.isoformat(), str(self.commit_uuid)
        properties = {
            DAY_PROPERTY: day,
            IDENTITY_PROPERTY: str(self.identity),
            COMMIT_PROPERTY: ours,
        }
        replaced = And(
            column_equals(self.identity.column, self.identity.value),
            column_equals(DAY_COLUMN, day),
        )
        attempts = self._retrying()
        committed = attempts(self._commit_once, replaced, properties)
        replaced_files = 0  # counted over this commit's snapshots: the current one, its parents
        for snapshot in ancestors_of(committed.current_snapshot(), committed.metadata):
            if snapshot.summary is None or snapshot.summary.get(COMMIT_PROPERTY) != ours:
                break
            replaced_files += int(snapshot.summary.get("deleted-data-files") or 0)
        self.summary = {
            "uri": self.identifier,
            "rows": self.rows,
            "data_files": len(self.paths),
            "replaced_files": replaced_files,
            "snapshot_id": committed.metadata.current_snapshot_id,
            "commit_attempts": attempts.statistics["attempt_number"],
        }
        return self.summary

    def _retrying(self) -> Retrying:
        policy = RetryPolicy.doubling(self.attempts, self.retry_delay)
        return policy.retrying(self.identifier, sleep=self.sleep, logger=log)

    def _commit_once(self, replaced: BooleanExpression, properties: dict[str, str]) -> Table:
        """One transaction of :meth:`commit` against the table as it is now."""
        table = load_table(self.catalog, self.identifier)
        refuse_layout(table, self.identifier, self.identity)  # as changed since the open
        what, attempts = f"commit for {properties[DAY_PROPERTY]}", self.attempts
        return self.swap_in(table, self.identifier, replaced, [self], properties, what, attempts)

    @staticmethod
    def swap_in(
        table: Table,
        identifier: str,
        replaced: BooleanExpression,
        writers: Sequence[IcebergDayWriter],
        properties: dict[str, str],
        what: str,
        attempts: int,
    ) -> Table:
        """One transaction: the rows ``replaced`` matches out, the ``writers``' closed files in.

        A commit that lost to another writer landed nothing: it raises :func:`lost_race`'s
        error, and the files may go (a next attempt plans them again against the table as it
        is then). Any other failure may have landed (a lost answer): each writer keeps its
        files, which its :meth:`abort` then leaves.
        """
        transaction = table.transaction()
        _quiet_empty_delete()
        transaction.delete(replaced, snapshot_properties=properties)
        if paths := [path for writer in writers for path in writer.paths]:
            try:
                transaction.add_files(
                    paths, snapshot_properties=properties, check_duplicate_files=False
                )
            except ValueError as error:
                raise IcebergSchemaError(
                    f"{identifier}: the data cannot be written as the table is: {error}"
                ) from error
        try:
            return transaction.commit_transaction()
        except (CommitFailedException, ValidationException) as error:
            raise lost_race(identifier, what, attempts, error) from error
        except BaseException:
            for writer in writers:
                writer._outcome_unknown = True
            raise

    def replace(
        self, schema: pa.Schema, batches: Iterable[pa.Table | pa.RecordBatch]
    ) -> dict[str, Any]:
        """Open for ``schema``, write ``batches``, commit: the day replaced in one call, its
        data files removed when anything fails (:meth:`abort`)."""
        self.open(schema)
        try:
            for batch in batches:
                self.write(batch)
            return self.commit()
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        """Delete the data files written so far (nothing was committed).

        Kept when a commit failed in a way that leaves its outcome unknown (the files may be
        the day's now); the maintenance operator removes them if they were not.
        """
        with contextlib.suppress(Exception):
            self._close_file()
        if self._table is None or self._outcome_unknown:
            return
        for path in self.paths:
            with contextlib.suppress(Exception):
                self._table.io.delete(path)
        self.paths, self._narrow = [], 0
        self.rows = self.bytes_written = 0
        self.commit_uuid = uuid.uuid4()  # a next attempt's files are named anew

    def stream(
        self,
        schema: pa.Schema,
        *,
        widen: Callable[[pa.Table, pa.Schema, int], pa.Table] = cast_to,
        compression: str | None = None,
        subject: str | None = None,
        **options: Any,
    ) -> contextlib.AbstractContextManager[ParquetStream]:
        """A :class:`~airflow_provider_analytics.output.parquet.ParquetStream` whose row groups
        become this day's data files, encoded once; the day is committed when the block
        succeeds, and the files are deleted when it raises (as
        :func:`~airflow_provider_analytics.output.parquet.parquet_stream` publishes an object).

        The table is opened (created or evolved) with the first row group's columns, so that a
        ``number`` column that met a decimal in it is added as double; one that turns later is
        handled by :meth:`_widen_to`.

        :param schema: the stream's columns (written when no row group comes).
        :param widen: converts a row group written earlier to a wider schema.
        :param compression: unused: the table's ``write.parquet.compression-codec`` decides.
        :param subject: unused (errors name the table).
        :param options: :class:`~airflow_provider_analytics.output.parquet.ParquetStream`'s.
        """
        self._widen = widen
        return ParquetStream(self, schema, widen=widen, **options)

    def close(self, schema: pa.Schema) -> None:
        """Commit what a stream wrote (``schema``: the table's columns when no row group
        came); the files are deleted when the commit fails."""
        try:
            if self._data_schema is None:
                self.open(schema)
            self.commit()
        except BaseException:
            self.abort()
            raise

    abandon = abort  # a stream's stop after a failure
