"""What a table holds: the identity of each run's rows, so many writers can share one table.

A cohort table's rows carry ``cohort_code``, a report table's ``report_key``; a run replaces
exactly its own (identity, day). This is the one rule of what an identity may be, checked when
an :class:`Identity` is made, so every path refuses the same values with the same words before
any request. Folder names are escaped as Hive and Spark escape a partition value (``%76ip`` ->
``cohort_code=%2576ip``), which every Hive reader undoes: a cohort's code is the platform's, so
refusing ``%`` would make such a cohort impossible to export. A report key is the user's stable
name, or a digest of the request as sent without its dates (same key every day and look-back).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.errors import AnalyticsUsageError

if TYPE_CHECKING:
    from collections.abc import Iterable

COHORT_COLUMN: Final = "cohort_code"
REPORT_COLUMN: Final = "report_key"
DAY_COLUMN: Final = "dt"  # every table is partitioned by the run's day after the identity
PARTITION_COLUMNS: Final = frozenset({DAY_COLUMN, COHORT_COLUMN, REPORT_COLUMN})
"""Columns the destinations add (the day, the identity): no data column takes their names."""
REPORT_MARK_COLUMNS: Final = ("report_updated_at", "report_updated_at_text")
"""Columns every report table has: how a table written before identities existed tells which
kind of rows it holds."""
IDENTITY_METADATA_KEY: Final = "analytics.identity"  # Parquet metadata: <column>=<value>
COHORT_FILE: Final = "users"  # a cohort export's table (users.parquet)
DATE_KEYS: Final = frozenset({"fromDate", "toDate"})  # change every run: not in the digest
FOLDER_MAX_BYTES: Final = 255  # NAME_MAX of common file systems, in bytes of UTF-8

COHORT_CODE_RULE: Final = (
    "must not contain '/', '\\', '..', '=' or surrounding whitespace (it names a storage partition)"
)
REPORT_KEY_RULE: Final = (
    "must be 1 to 64 characters of ASCII letters, digits, '_', '-' and '.', starting with a "
    "letter or a digit (it names the report's rows in a shared table)"
)
_REPORT_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_HIVE_ESCAPED = re.compile(r"[\x00-\x1f\x7f\"#%'*/:=?\\{\[\]^]")


def hive_escape(value: str) -> str:
    """``value`` as Hive and Spark write it in a folder name (``%`` -> ``%25``, ``:`` ->
    ``%3A``, ...), which DuckDB, pyarrow, Spark and Hive read back as ``value``."""
    return _HIVE_ESCAPED.sub(lambda found: f"%{ord(found.group()):02X}", value)


def folder_name(column: str, value: str) -> str:
    """The Hive folder ``<column>=<escaped value>`` of a partition."""
    return f"{column}={hive_escape(value)}"


def cohort_code(value: Any, field: str = COHORT_COLUMN) -> str:
    """A cohort code: 1 to 100 characters, fit to be sent, and a partition value whose folder
    name fits :data:`FOLDER_MAX_BYTES` (refused by name, not by "File name too long" later)."""
    code = rules.non_empty_string(value, field, max_length=rules.ID_MAX_LENGTH)
    if "/" in code or "\\" in code or ".." in code or "=" in code or code != code.strip():
        rules.fail(field, COHORT_CODE_RULE, value)
    size = len(folder_name(COHORT_COLUMN, code).encode("utf-8", "surrogatepass"))
    if size > FOLDER_MAX_BYTES:
        rules.fail(
            field,
            f"must make a folder name ({COHORT_COLUMN}=<value>, UTF-8, '%'-escaped as Hive does) "
            f"of at most {FOLDER_MAX_BYTES} bytes, the longest file name file systems take; this "
            f"one has {size} bytes",
            value,
        )
    return code


def report_key(value: Any, field: str = REPORT_COLUMN) -> str:
    """A report key by :data:`REPORT_KEY_RULE` (ASCII, so its folder name always fits)."""
    if not isinstance(value, str) or not _REPORT_KEY.fullmatch(value):
        rules.fail(field, REPORT_KEY_RULE, value)
    return value


_VALUE_RULES: Final = {COHORT_COLUMN: cohort_code, REPORT_COLUMN: report_key}


@dataclass(frozen=True)
class Identity:
    """The rows a run writes: ``column`` (``cohort_code`` or ``report_key``) holds ``value`` in
    each; checked when made by its column's rule, so no path holds one the rule refuses."""

    column: str
    value: str

    def __post_init__(self) -> None:
        check = _VALUE_RULES.get(self.column)
        if check is None:
            rules.fail("identity", f"must be {COHORT_COLUMN}=<code> or {REPORT_COLUMN}=<key>")
        check(self.value, self.column)

    def __str__(self) -> str:
        return f"{self.column}={self.value}"

    @property
    def folder(self) -> str:
        """The Hive folder of its rows, escaped (:func:`hive_escape`)."""
        return folder_name(self.column, self.value)

    @classmethod
    def parse(cls, text: str) -> Identity | None:
        """An identity as :meth:`__str__` writes it; ``None`` when ``text`` names no identity
        column."""
        column, equals, value = text.partition("=")
        if not equals or column not in _VALUE_RULES or not value:
            return None
        return cls(column, value)


def cohort_identity(cohort_code: str) -> Identity:
    """The identity of a cohort export's rows."""
    return Identity(COHORT_COLUMN, cohort_code)


def report_identity(report_name: str, request: rules.Declared, key: Any = None) -> Identity:
    """The identity of a report's rows: ``key`` if given, else ``<report_name>_<digest>`` of
    the checked request as sent (never a dict as written: a dict and the equal typed request
    get one key)."""
    if key is not None:
        return Identity(REPORT_COLUMN, key)
    if not isinstance(request, rules.Declared):
        raise AnalyticsUsageError(
            "report_identity needs the checked request (its declared model), not "
            f"{type(request).__name__}: the digest covers the request as sent"
        )
    return Identity(REPORT_COLUMN, f"{report_name}_{request_digest(request.to_body())}")


def request_digest(body: Mapping[str, Any]) -> str:
    """Twelve hex digits of SHA-256 over a JSON body without its dates, keys sorted."""
    kept = {key: value for key, value in body.items() if key not in DATE_KEYS}
    text = json.dumps(kept, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def refuse_partition_columns(names: Iterable[str], field: str, where: str) -> None:
    """Refuse a data column named like a partition column (case-insensitively, as DuckDB,
    Spark and Hive compare): a folder-based reader would replace its values with the folder's,
    and an Iceberg table would hold two columns of one name. ``where`` says what holds them."""
    for name in names:
        if name.casefold() in PARTITION_COLUMNS:
            rules.fail(
                field,
                f"{where} include {name!r}, a partition column the destinations add "
                f"({', '.join(sorted(PARTITION_COLUMNS))}); folder-based readers would replace "
                "its values with the partition's. Leave it out, or use "
                "column_names='warehouse', which names it with a trailing '_'",
                name,
            )


def table_holds(column_names: Iterable[str]) -> str:
    """Which identity column a table's rows hold: the one it has, else ``report_key`` when it
    has every :data:`REPORT_MARK_COLUMNS` column (as every report table has), else
    ``cohort_code``."""
    names = set(column_names)
    marked = REPORT_COLUMN if names.issuperset(REPORT_MARK_COLUMNS) else COHORT_COLUMN
    return next((c for c in (COHORT_COLUMN, REPORT_COLUMN) if c in names), marked)
