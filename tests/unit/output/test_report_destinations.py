"""Where report tables go: one object (or Iceberg table) per grain, and the catalog connection."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from airflow_provider_analytics.client import (
    AnalyticsConfigurationError,
    AnalyticsError,
    AnalyticsValidationError,
)
from airflow_provider_analytics.core.identity import Identity
from airflow_provider_analytics.export.arrow_pool import arrow_memory_pool
from airflow_provider_analytics.hooks.iceberg import IcebergCatalogHook
from airflow_provider_analytics.operators.output import iceberg_asset
from airflow_provider_analytics.operators.reports import FunnelReportOperator
from airflow_provider_analytics.output.iceberg import (
    IcebergDayWriter,
    IcebergSchemaError,
    catalog_properties,
    catalog_secrets,
)
from airflow_provider_analytics.output.iceberg_destination import IcebergDestination
from airflow_provider_analytics.output.parquet_destination import table_paths
from airflow_provider_analytics.reports.frames import (
    EVENT_GRAINS,
    EVENT_SCHEMA,
    FUNNEL_GRAINS,
    FUNNEL_SCHEMA,
)

DOC = (Path(__file__).resolve().parents[3] / "docs" / "report_tables.md").read_text()
FUNNEL_NAMES = [grain.name for grain in FUNNEL_GRAINS]


def test_a_prefix_gives_each_table_a_directory_of_its_own() -> None:
    paths = table_paths("file:///lake/checkout/", FUNNEL_NAMES, {"dt": "2024-01-05"})
    assert {name: str(path) for name, path in paths.items()} == {
        name: f"file:///lake/checkout/{name}/dt=2024-01-05/{name}.parquet" for name in FUNNEL_NAMES
    }


def test_an_object_uri_is_the_main_table_and_the_others_are_its_siblings() -> None:
    paths = table_paths("file:///lake/dt=2024-01-05/checkout.parquet", FUNNEL_NAMES, {})
    assert [str(path) for path in paths.values()] == [
        "file:///lake/dt=2024-01-05/checkout.parquet",
        "file:///lake/dt=2024-01-05/checkout_totals.parquet",
        "file:///lake/dt=2024-01-05/checkout_by_value.parquet",
        "file:///lake/dt=2024-01-05/checkout_by_value_totals.parquet",
    ]


def test_iceberg_tables_take_the_same_suffixes() -> None:
    tables = IcebergDestination(None, "lake", "lake.checkout", Identity("report_key", "k"))  # type: ignore[arg-type]
    assert [tables.identifier_for(FUNNEL_NAMES, name) for name in FUNNEL_NAMES] == [
        "lake.checkout",
        "lake.checkout_totals",
        "lake.checkout_by_value",
        "lake.checkout_by_value_totals",
    ]


@pytest.mark.parametrize(
    ("grains", "flattened"), [(FUNNEL_GRAINS, FUNNEL_SCHEMA), (EVENT_GRAINS, EVENT_SCHEMA)]
)
def test_no_table_keeps_a_flag_that_mixes_grains_and_each_grain_is_documented(
    grains, flattened
) -> None:
    for grain in grains:
        names = grain.schema(flattened).names
        assert not {"is_overall", "is_all_dates", "is_total"} & set(names), grain.name
        assert f"| `{grain.name}` | {grain.grain} |" in DOC, grain.name


def test_sql_catalog_properties_carry_the_password_in_the_database_url() -> None:
    properties = catalog_properties(
        login="iceberg",
        password="pw-7c1e9a",
        extra={"uri": "postgresql+psycopg2://db.internal:5432/catalog", "warehouse": "s3://lake/"},
    )
    assert properties == {
        "type": "sql",
        "uri": "postgresql+psycopg2://iceberg:pw-7c1e9a@db.internal:5432/catalog",
        "warehouse": "s3://lake/",
    }
    sqlite = catalog_properties(extra={"uri": "sqlite:////data/catalog.db"})
    assert sqlite == {"type": "sql", "uri": "sqlite:////data/catalog.db"}


def test_rest_catalog_properties_from_host_and_token() -> None:
    assert catalog_properties(
        host="catalog.internal", port=8181, schema="https", password="t0k"
    ) == {
        "uri": "https://catalog.internal:8181",
        "type": "rest",
        "token": "t0k",
    }
    with pytest.raises(AnalyticsConfigurationError, match="uri"):
        catalog_properties(extra={"warehouse": "s3://lake/"})


@pytest.mark.parametrize(
    ("fields", "rule"),
    [
        ({"extra": {"uri": "postgresql://u:pw-3e8b1d@db:notaport/catalog"}}, "its port a number"),
        ({"password": "pw-3e8b1d", "extra": {"uri": "sqlite-not-a-url pw-3e8b1d"}}, "a URL"),
        ({"host": "catalog.internal", "port": "8x", "password": "pw-3e8b1d"}, "its port"),
        ({"extra": {"uri": "https://catalog.internal/", "type": "nonesuch"}}, "type must be"),
        ({"extra": ["uri", "pw-3e8b1d"]}, "extra must be a JSON object"),
    ],
)
def test_unusable_catalog_properties_are_refused_by_name(fields: dict, rule: str) -> None:
    """A bad port or catalog type let a bare ValueError out (at times when the catalog
    opened), an extra that is no object an AttributeError; the refusal never shows the URL,
    which may carry the password."""
    with pytest.raises(AnalyticsConfigurationError, match=rule) as caught:
        catalog_properties(**fields)
    assert "pw-3e8b1d" not in str(caught.value)
    assert caught.value.__cause__ is None


def test_glue_catalog_properties_need_no_host() -> None:
    """Glue is found by region and credentials: no uri, no dummy host; the standard AWS chain
    applies when the connection gives no keys."""
    extra = {"type": "glue", "warehouse": "s3://lake/wh"}
    assert catalog_properties(extra=extra) == extra
    assert catalog_properties(
        host="127.0.0.1",
        port=5000,
        schema="http",
        login="AKIDEXAMPLE",
        password="secret-7d2f",
        extra={**extra, "region_name": "eu-west-1", "s3.endpoint": "http://127.0.0.1:5000"},
    ) == {
        **extra,
        "glue.endpoint": "http://127.0.0.1:5000",
        "s3.endpoint": "http://127.0.0.1:5000",
        "client.access-key-id": "AKIDEXAMPLE",
        "client.secret-access-key": "secret-7d2f",
        "client.region": "eu-west-1",
    }
    assert catalog_properties(host="glue.example", extra=extra)["glue.endpoint"] == (
        "https://glue.example"
    )
    with pytest.raises(AnalyticsConfigurationError, match="access key id as login"):
        catalog_properties(password="secret-7d2f", extra=extra)


def test_a_catalog_type_in_capitals_routes_the_credentials_as_in_lower_case() -> None:
    """pyiceberg reads "SQL" and "GLUE" as their lower case; the password went into an unused
    ``token`` and the Glue keys were not given."""
    uri = "postgresql+psycopg2://iceberg@db:5432/catalog"
    sql = catalog_properties(password="pw-7c1e9a", extra={"uri": uri, "type": "SQL"})
    assert sql == {"uri": uri.replace("iceberg@", "iceberg:pw-7c1e9a@"), "type": "sql"}
    glue = catalog_properties(login="AKID", password="s-7d2f", extra={"type": "Glue"})
    assert glue["client.secret-access-key"] == "s-7d2f" and glue["type"] == "glue"


def test_a_nested_setting_stays_an_object_and_its_credentials_are_found() -> None:
    """A REST catalog reads ``auth`` and ``ssl`` as objects (they were turned into Python's
    text of a dict, which pyiceberg failed on with a bare AttributeError)."""
    auth = {"type": "basic", "basic": {"username": "u", "password": "pw-9a1b2c"}}
    properties = catalog_properties(
        extra={"uri": "https://catalog.internal", "auth": auth, "ssl": {"cabundle": "/ca.pem"}}
    )
    assert properties["auth"] == auth and properties["ssl"] == {"cabundle": "/ca.pem"}
    assert catalog_secrets(properties) == ["pw-9a1b2c"]
    # an object's values keep their JSON types: pyiceberg hands them to its classes as they are
    oauth = {"type": "oauth2", "oauth2": {"expires_in": 3600, "scopes": ["a", "b"]}}
    typed = catalog_properties(
        extra={"uri": "https://c", "auth": oauth, "ssl": {"cabundle": False}, "n": 3}
    )
    assert typed["auth"] == oauth and typed["ssl"] == {"cabundle": False} and typed["n"] == "3"


@pytest.mark.parametrize(
    ("fields", "rule"),
    [
        ({"extra": {"uri": "https://c", "token": "tk-3e8b1d\n"}}, "token must not hold a control"),
        ({"password": "pw-3e8b1d\n", "extra": {"uri": "https://c"}}, "password must not hold a"),
        ({"extra": {"uri": "https://c", "auth": {"token": "\tpw-3e8b1d"}}}, "auth.token must not"),
        ({"extra": {"uri": "https://c", "warehouse": ["pw-3e8b1d"]}}, "'warehouse' must be text"),
    ],
)
def test_a_value_pyiceberg_cannot_send_is_refused_without_showing_it(
    fields: dict, rule: str
) -> None:
    """A credential with a line end reached the HTTP library, whose error showed it escaped
    (``\\n``), which no masker matches; a list was sent as Python's text of it."""
    with pytest.raises(AnalyticsConfigurationError, match=rule) as caught:
        catalog_properties(**fields)
    assert "3e8b1d" not in str(caught.value)


def test_a_database_password_holding_a_slash_is_found_as_sqlalchemy_reads_it() -> None:
    """A URL reader ends the authority at the ``/``; SQLAlchemy, which connects, does not."""
    for password in ("pa/pw-5f6e7d", "pa?pw-5f6e7d", "pa#pw-5f6e7d"):
        uri = f"postgresql+psycopg2://u:{password}@db:5432/catalog"
        assert password in catalog_secrets(catalog_properties(extra={"uri": uri}))


def test_iceberg_errors_are_analytics_errors() -> None:
    """A user's ``except AnalyticsError`` catches them (they stay ``ValueError`` as before)."""
    assert issubclass(IcebergSchemaError, AnalyticsError)
    assert issubclass(IcebergSchemaError, ValueError)
    with pytest.raises(AnalyticsValidationError) as caught:
        IcebergDayWriter(
            None,  # type: ignore[arg-type]
            "no_namespace",
            dt.date(2024, 1, 1),
            identity=Identity("report_key", "k"),
        )
    assert caught.value.field == "iceberg_table"
    with pytest.raises(AnalyticsValidationError) as caught, arrow_memory_pool("jemalloc"):
        pass
    assert caught.value.field == "memory_pool"


def test_the_hook_names_the_catalog_and_masks_the_password(monkeypatch) -> None:
    masked: list[str] = []
    monkeypatch.setattr("airflow_provider_analytics.hooks.iceberg.mask_secret", masked.append)
    extra = {"uri": "sqlite:///:memory:", "catalog_name": "lake"}
    connection = {"conn_type": "iceberg", "password": "pw-7c1e9a", "extra": extra}
    monkeypatch.setenv("AIRFLOW_CONN_ICEBERG_DEFAULT", json.dumps(connection))
    hook = IcebergCatalogHook()
    catalog = hook.get_conn()
    assert hook.catalog_name == catalog.name == "lake"
    assert "pw-7c1e9a" in masked
    assert iceberg_asset("iceberg_default", "analytics.funnel").uri == (
        "iceberg://iceberg_default/analytics/funnel"
    )
    assert iceberg_asset("iceberg_default", "{{ params.table }}") is None


def test_the_hook_masks_the_catalogs_credentials_given_in_the_extra(monkeypatch) -> None:
    # they were masked only when they held the connection's password
    masked: list[str] = []
    monkeypatch.setattr("airflow_provider_analytics.hooks.iceberg.mask_secret", masked.append)
    opened: list[dict[str, str]] = []
    monkeypatch.setattr(
        "airflow_provider_analytics.output.iceberg.open_catalog",
        lambda name, properties: opened.append(properties),
    )
    secrets = {
        "credential": "client:cred-5678",
        "s3.secret-access-key": "s3-secret-9",
        "header.Authorization": "Bearer hdr-tok-1",
        "adls.account-key": "adls-key-2",
        "adls.connection-string": "AccountName=a;AccountKey=adls-conn-3",
    }
    extra = {"uri": "postgresql+psycopg2://u:db-pw%401234@h/db", **secrets}
    monkeypatch.setenv(
        "AIRFLOW_CONN_ICEBERG_DEFAULT", json.dumps({"conn_type": "iceberg", "extra": extra})
    )
    IcebergCatalogHook().get_conn()
    assert opened and set(masked) == {"db-pw%401234", "db-pw@1234", *secrets.values()}
    assert "db-pw@1234" not in str(AnalyticsError("password db-pw@1234"))


def test_an_operator_needs_exactly_one_destination() -> None:
    request = {"steps": [], "crowds": ["$ALL"]}
    with pytest.raises(ValueError, match="exactly one of destination and iceberg_table"):
        FunnelReportOperator(task_id="f", request=request)
    with pytest.raises(ValueError, match="exactly one of destination and iceberg_table"):
        FunnelReportOperator(
            task_id="f", request=request, destination="file:///x/", iceberg_table="a.b"
        )


@pytest.mark.parametrize(
    "identifier",
    [
        *["a..b", ".a.b", "ns.t/x", "ns/../x.t", "ns.t\\x", "ns. t", "ns.\x00t", "ns." + "t" * 256],
        *["ns.t#1", "ns.t?x", "n#s.t"],
    ],
)
def test_a_table_identifier_that_is_no_warehouse_folder_is_refused_before_the_catalog(
    identifier: str,
) -> None:
    """An empty name failed in pyiceberg, a long one with a bare OSError, a NUL one after the
    table was made; ``ns.t/x`` put its files inside ns.t's folder, where ns.t's orphan-file
    removal deletes them. ``lake.t#1`` was made with its metadata at a path cut at the ``#``
    (``lake/t``), refused after the download, and broke ``lake.t``."""

    def no_catalog() -> None:
        raise AssertionError("the catalog was opened")

    with pytest.raises(AnalyticsValidationError, match="each names a folder") as caught:
        IcebergDestination(no_catalog, "lake", identifier, Identity("cohort_code", "vip"))
    assert caught.value.field == "iceberg_table"
