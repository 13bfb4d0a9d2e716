"""Rendered destinations and partition values: nothing climbs out of its prefix, and a
destination is judged by where ObjectStoragePath and fsspec will really write it."""

from __future__ import annotations

import os
import posixpath
import stat
import tempfile
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

import pytest
from airflow.sdk import ObjectStoragePath
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_provider_analytics.client import AnalyticsConfigurationError, AnalyticsValidationError
from airflow_provider_analytics.core.errors import ShardStagingError
from airflow_provider_analytics.core.identity import (
    REPORT_COLUMN,
    Identity,
    cohort_identity,
    hive_escape,
)
from airflow_provider_analytics.output.parquet_destination import ParquetDestination, output_path
from airflow_provider_analytics.output.roots import (
    PRIVATE_FOLDER,
    allowed_roots,
    checked_destination,
    deployment_roots,
    local_path,
    open_own,
    private_folder,
    staging_folder,
)

if TYPE_CHECKING:
    from pathlib import Path

    from airflow_provider_analytics.output.roots import RootList

PREFIX = "file:///data/analytics/users/"
ROOTS_TEXT = "file:///data/, s3://analytics-bucket/"
ROOTS: list[RootList] = [("the test's roots", allowed_roots(ROOTS_TEXT, "the test's roots"))]


@pytest.mark.parametrize(
    "destination",
    [
        "file:///etc/",
        "file:///etc/cron.d/job",
        "/usr/lib/x/",
        "local:///proc/self/",
        "file:///data/../etc/",
        "file:///data/./x/",
        "s3://aws@bucket/a/../../b/",
        "file:///data/a\\..\\b/",
        "file:///data/\x00/",
        "",
        # the forms that used to pass: ObjectStoragePath writes them into /etc/cron.d
        "//etc/cron.d/",
        "file:/etc/cron.d/",
        "file:etc/cron.d/",
        "FILE:/etc/cron.d/",
        "file:////etc/cron.d/",
        "local:/etc/cron.d/",
        "///etc/cron.d/",
        # names a host that fsspec reads as a folder of the working directory
        "file://localhost/etc/cron.d/",
        "local://etc/cron.d/",
        # percent-escapes that climb once decoded
        "file:///data/%2e%2e/etc/",
        "file:///data/%2E%2e/%2E%2E/etc/",
        "file:///data/x%2F..%2F..%2Fetc/",
        "s3://aws@bucket/a/%2e%2e/b/",
        "~/.ssh/",
        "file:///data/x?.parquet",
        "s3:bucket/x/",
    ],
)
def test_destinations_that_escape_or_point_into_the_system_are_refused(destination: str) -> None:
    with pytest.raises(AnalyticsValidationError) as caught:
        ParquetDestination(destination, cohort_identity("vip"))
    assert caught.value.field == "destination"


@pytest.mark.parametrize(
    "destination",
    ["file:///data/out/", "/srv/etc/", "s3://aws@bucket/etc/", "file:///data/out/x..y.parquet"],
)
def test_ordinary_destinations_are_accepted(destination: str) -> None:
    path = ParquetDestination(destination, cohort_identity("vip")).paths("2024-01-15", ())
    assert str(path["users"]).endswith(("users.parquet", "x..y.parquet"))


@pytest.mark.parametrize("value", ["..", "a/b", "a\\b", "a=b", " a", "a\n", "", "x..y"])
def test_partition_values_that_would_add_or_climb_a_level_are_refused(value: str) -> None:
    with pytest.raises(AnalyticsValidationError) as caught:
        output_path(PREFIX, {"cohort": value, "dt": "2024-01-15"}, "users.parquet")
    assert caught.value.field == "cohort"


@settings(max_examples=100)
@given(st.text(min_size=1, max_size=30))
def test_whatever_a_partition_value_is_the_object_stays_one_level_below(value: str) -> None:
    """Property, judged by posixpath independently: accepted values never leave the prefix
    (the value escaped as Hive escapes it, so that readers read it back as itself)."""
    try:
        path = output_path(PREFIX, {"cohort": value}, "users.parquet")
    except AnalyticsValidationError as error:
        assert error.field == "cohort"
        return
    local = str(path).removeprefix("file://")
    assert posixpath.dirname(posixpath.normpath(local)) == posixpath.normpath(
        f"/data/analytics/users/cohort={hive_escape(value)}"
    )
    assert posixpath.normpath(local).startswith("/data/analytics/users/cohort=")


def test_a_relative_destination_is_judged_under_the_working_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """fsspec writes a relative path (and ``local:x``, ``file://x/``) under the worker's
    working directory, which is ``/`` in many images."""
    monkeypatch.chdir("/")
    for destination in ("etc/cron.d/", "usr/lib/x/"):
        with pytest.raises(AnalyticsValidationError, match="system directory"):
            checked_destination(destination)
    assert checked_destination("srv/out/") == "srv/out/"


@pytest.mark.parametrize(
    "destination",
    [
        "file:///data/analytics/",
        "/data/analytics/x.parquet",
        "//data/analytics/",
        "file:/data/x/",
        "local:///data/x/",
        "s3://analytics-bucket/",
        "s3://aws_default@analytics-bucket/users/",
        "S3://analytics-bucket//x/",
        "file:///data/",  # the root itself, as a prefix
    ],
)
def test_destinations_under_an_allowed_root_are_accepted(destination: str) -> None:
    assert checked_destination(destination, ROOTS) == destination


@pytest.mark.parametrize(
    "destination",
    [
        "file:///srv/data/",
        "file:///database/",
        "/data2/x/",
        "s3://analytics-bucket-2/x/",
        "s3://other/analytics-bucket/",
        "gs://analytics-bucket/x/",
        "relative/x/",
        "file:///data/../srv/",
        "file:///data",  # the root's own name: a report's other tables land beside it
        "file:data/x/",  # read from / by Airflow, from the working directory by pyiceberg
        "s3://a[b@analytics-bucket/x/",  # urlsplit's bare ValueError, where it was written
        "s3://a\uff03b@analytics-bucket/x/",
    ],
)
def test_destinations_outside_the_allowed_roots_are_refused_by_name(destination: str) -> None:
    with pytest.raises(AnalyticsValidationError) as caught:
        checked_destination(destination, ROOTS)
    assert caught.value.field == "destination"


def test_the_refusal_names_the_roots_and_where_the_destination_leads() -> None:
    with pytest.raises(AnalyticsValidationError) as caught:
        checked_destination("//srv/x/", ROOTS)
    assert str(caught.value) == (
        "destination: must lie under a root allowed by the test's roots (file:///data/, "
        "s3://analytics-bucket/); it leads to file:///srv/x/ (got '//srv/x/')"
    )


def test_a_root_naming_a_connection_holds_only_that_connection() -> None:
    roots = [("roots", allowed_roots(["s3://aws_lake@lake/"], "roots"))]
    assert checked_destination("s3://aws_lake@lake/x/", roots)
    for other in ("s3://lake/x/", "s3://aws_other@lake/x/"):
        with pytest.raises(AnalyticsValidationError):
            checked_destination(other, roots)


def test_roots_named_twice_are_each_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Airflow option and the connection extra: a destination must lie under both, so
    neither widens the other."""
    monkeypatch.setenv("AIRFLOW__ANALYTICS__ALLOWED_DESTINATIONS", "file:///data/, s3://lake/")
    lists = deployment_roots("file:///data/team/")
    assert [origin for origin, _ in lists] == [
        "[analytics] allowed_destinations",
        "the connection extra allowed_destinations",
    ]
    assert checked_destination("file:///data/team/x/", lists)
    for outside in ("file:///data/other/", "s3://lake/x/"):
        with pytest.raises(AnalyticsValidationError):
            checked_destination(outside, lists)
    monkeypatch.delenv("AIRFLOW__ANALYTICS__ALLOWED_DESTINATIONS")
    assert deployment_roots(None) == []
    assert deployment_roots(["s3://lake/"])  # a JSON list in the extra


@pytest.mark.parametrize("roots", ["data/", "file:///data/../etc/", "s3:lake/", 5])
def test_an_unusable_root_is_a_configuration_error(roots: object) -> None:
    with pytest.raises(AnalyticsConfigurationError, match="the extra"):
        allowed_roots(roots, "the extra")


# Hostile destinations, checked against an independent reading --------------------------------

FRAGMENTS = [
    "/",
    "//",
    "///",
    ".",
    "..",
    "%2e",
    "%2E%2e",
    "%2f",
    "%2F..%2F",
    "%5c",
    "\\",
    "~",
    "%7e",
    "@",
    ":",
    "file:",
    "file:/",
    "file://",
    "local:",
    "local://",
    "s3://",
    "s3://aws@",
    "data",
    "data2",
    "etc",
    "cron.d",
    "localhost",
    "analytics-bucket",
    "analytics-bucket.evil",
    "x",
]
STARTS = [
    "",
    "/",
    "//",
    "file:///data/",
    "file:/data/",
    "file:data/",
    "/data/",
    "//data/",
    "local:///data/",
    "s3://analytics-bucket/",
    "s3://aws@analytics-bucket/",
    "S3://analytics-bucket",
]


def _inside_data(path: str) -> bool:
    """Whether a local path fsspec opens lies under /data, read as it is and decoded, with
    any run of slashes taken as one and ``..`` resolved."""
    for variant in (path, unquote(path)):
        absolute = os.path.abspath(os.path.expanduser(variant))
        normal = posixpath.normpath("/" + absolute.lstrip("/"))
        if not (normal + "/").startswith("/data/"):
            return False
    return True


def _where_it_lands(destination: str) -> bool:
    """The independent judgement: a local destination by what ObjectStoragePath and fsspec
    open, an object URI by urllib's reading of it."""
    parts = urlsplit(destination)
    scheme = parts.scheme.lower()
    if scheme in ("", "file", "local"):
        path = ObjectStoragePath(destination)
        opened = path.fs._strip_protocol(str(path))
        return _inside_data(path.path) and _inside_data(opened)
    key = unquote(parts.path)
    return (
        scheme == "s3"
        and parts.netloc.rpartition("@")[2] == "analytics-bucket"
        and ".." not in key.split("/")
        and "\\" not in key
    )


@settings(max_examples=400)
@given(
    st.sampled_from(STARTS),
    st.lists(st.sampled_from(FRAGMENTS), max_size=8).map("".join),
)
def test_no_hostile_destination_leads_outside_an_allowed_root(start: str, tail: str) -> None:
    destination = start + tail
    try:
        checked_destination(destination, ROOTS)
    except AnalyticsValidationError as error:
        assert error.field == "destination"
        return
    assert _where_it_lands(destination), destination


def test_the_private_folder_is_the_workers_own_and_stays_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Made 0700 and owned by the worker; the same place at each call (a retry finds it)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    folder = private_folder()
    assert folder == private_folder() and folder.parent == tmp_path
    info = folder.lstat()
    assert stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.geteuid()


@pytest.mark.parametrize("planted", ["link", "open", "file"])
def test_a_private_folder_someone_else_could_enter_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, planted: str
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    place = tmp_path / PRIVATE_FOLDER.format(uid=os.geteuid())
    if planted == "link":
        (tmp_path / "elsewhere").mkdir()
        place.symlink_to(tmp_path / "elsewhere")
    elif planted == "open":
        place.mkdir(mode=0o755)
        place.chmod(0o755)
    else:
        place.write_text("")
    with pytest.raises(ShardStagingError, match=PRIVATE_FOLDER.format(uid=os.geteuid())):
        private_folder()


def test_a_staging_folder_is_a_real_folder_at_every_level_the_package_makes(
    tmp_path: Path,
) -> None:
    top = tmp_path / "out.staging"
    folder = f"{top.as_uri()}/cohort_code=vip/dt=2024-01-15/"
    made = staging_folder(folder, (), own_from=f"{top.as_uri()}/")
    assert made.path.rstrip("/") == str(top / "cohort_code=vip/dt=2024-01-15")
    assert (top / "cohort_code=vip/dt=2024-01-15").is_dir()
    (tmp_path / "elsewhere").mkdir()
    (top / "cohort_code=vip/dt=2024-01-15").rmdir()
    (top / "cohort_code=vip/dt=2024-01-15").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ShardStagingError, match="dt=2024-01-15: is a symbolic link"):
        staging_folder(folder, (), own_from=f"{top.as_uri()}/")


def test_a_staging_folder_outside_the_roots_is_refused_naming_the_staging() -> None:
    with pytest.raises(AnalyticsValidationError) as refused:
        staging_folder("file:///srv/x/", ROOTS, own_from="file:///srv/x/")
    assert refused.value.field == "staging"


@pytest.mark.parametrize("kind", ["pipe", "link", "folder"])
def test_the_packages_own_files_are_read_only_as_plain_files(tmp_path: Path, kind: str) -> None:
    """A pipe (or a link to one) is refused at once, never waited on; a link to a plain file
    is refused too: the package does not read through links in its own folders."""
    target = tmp_path / "target"
    own = tmp_path / "hold.json"
    if kind == "pipe":
        os.mkfifo(own)
    elif kind == "link":
        target.write_text("{}")
        own.symlink_to(target)
    else:
        own.mkdir()
    with pytest.raises(ShardStagingError, match=r"hold\.json"):
        open_own(ObjectStoragePath(own.as_uri()))
    with pytest.raises(FileNotFoundError):
        open_own(ObjectStoragePath((tmp_path / "missing").as_uri()))
    plain = tmp_path / "plain"
    plain.write_bytes(b"x")
    with open_own(ObjectStoragePath(plain.as_uri())) as handle:
        assert handle.read() == b"x"


@pytest.mark.parametrize(
    "destination",
    ["s3://AKIAKEY:s3cr3t-pw@bucket/data/", "file://u:s3cr3t-pw@/data/x", "s3://u:s3cr3t-pw@b/x?y"],
)
def test_a_password_in_a_destination_is_refused_without_being_shown(destination: str) -> None:
    with pytest.raises(AnalyticsValidationError, match="must not carry a password") as caught:
        checked_destination(destination, ROOTS)
    assert "s3cr3t-pw" not in str(caught.value)
    with pytest.raises(AnalyticsValidationError, match="must not carry a password"):
        ParquetDestination(destination, cohort_identity("vip"))
    with pytest.raises(AnalyticsConfigurationError, match="must not carry a password") as bad:
        allowed_roots(f"s3://lake/, {destination}", "the extra")
    assert "s3cr3t-pw" not in str(bad.value)


@pytest.mark.parametrize("destination", [" s3://analytics-bucket/x/", "/data/x/ ", "\u3000/data/x"])
def test_a_destination_with_surrounding_whitespace_is_refused(destination: str) -> None:
    """A stray space before ``s3://`` made a relative path: the rows went to the worker's
    working directory (without roots, silently)."""
    for roots in (ROOTS, []):
        with pytest.raises(AnalyticsValidationError, match="whitespace"):
            checked_destination(destination, roots)


def test_a_link_under_a_root_that_leads_out_of_it_is_refused(tmp_path: Path) -> None:
    """The roots were checked on the path as written: a link planted under a root led the
    write (and the clearing of stale temporaries beside it) anywhere."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "link").symlink_to(outside)
    roots: list[RootList] = [("roots", allowed_roots(root.as_uri() + "/", "roots"))]
    for destination in (f"{root}/link/users.parquet", f"{root.as_uri()}/link/x/"):
        with pytest.raises(AnalyticsValidationError, match="must lie under a root") as caught:
            checked_destination(destination, roots)
        assert str(outside) in str(caught.value)
    assert checked_destination(f"{root}/real/users.parquet", roots)
    (tmp_path / "etc").symlink_to("/etc")  # without roots, no link into a system directory
    with pytest.raises(AnalyticsValidationError, match="system directory /etc"):
        checked_destination(f"{tmp_path}/etc/cron.d/", ())


def test_a_root_named_through_a_link_holds_where_the_link_leads(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "named").symlink_to(tmp_path / "real")
    roots: list[RootList] = [("roots", allowed_roots(f"{tmp_path}/named/", "roots"))]
    assert checked_destination(f"{tmp_path}/named/users/", roots)
    assert checked_destination(f"{tmp_path}/real/users/", roots)


def test_the_staging_of_a_buckets_root_stays_in_that_bucket() -> None:
    """``<bucket>.staging`` beside a bucket's root prefix was another bucket (bucket names are
    global): without roots the parts went to whoever owns it."""
    roots: list[RootList] = [("roots", allowed_roots("memory://lake/", "roots"))]
    destination = ParquetDestination("memory://lake/", cohort_identity("vip"), allowed_roots=roots)
    staging = str(destination.staging("2024-01-15"))
    assert staging.startswith("memory://lake/.staging/cohort_code=vip/dt=2024-01-15")
    beside = ParquetDestination("memory://lake/users/", cohort_identity("vip"))
    assert str(beside.staging("2024-01-15")).startswith("memory://lake/users.staging/")


@pytest.mark.parametrize("root", ["file:", "file://", "local:", "local://", " file: "])
def test_a_local_root_that_names_no_folder_is_refused(root: str) -> None:
    """It was read as ``/``, the whole disk (looser than no roots, which keep the system
    directories out)."""
    with pytest.raises(AnalyticsConfigurationError, match="must name a folder"):
        allowed_roots([root], "roots")


@pytest.mark.parametrize(
    "destination", [" s3://user:S3CRET-41@lake/x", "\xa0file://u:S3CRET-41@/x"]
)
def test_a_password_behind_white_space_is_not_shown(destination: str) -> None:
    with pytest.raises(AnalyticsValidationError, match="must not carry a password") as caught:
        checked_destination(destination)
    assert "S3CRET-41" not in str(caught.value)


def test_local_path_reads_a_bare_double_slash_as_the_gate_does(tmp_path: Path) -> None:
    """``//tmp/x`` is ``/tmp/x`` to the gate and to Airflow; it was read below the working
    directory, where the staging guard then looked (not where the files went)."""
    assert os.path.realpath(local_path(f"/{tmp_path}/x") or "") == str(tmp_path / "x")


def test_a_link_among_the_folders_below_a_prefix_is_refused_before_a_write(
    tmp_path: Path,
) -> None:
    """The gate read the prefix only: a table's folder below it that is a link wrote the
    report's files out of the roots."""
    root = tmp_path / "root"
    (root / "out").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (root / "out" / "funnel").symlink_to(tmp_path / "outside")
    roots = [("roots", allowed_roots([root.as_uri() + "/"], "roots"))]
    destination = ParquetDestination(
        f"{root.as_uri()}/out/", Identity(REPORT_COLUMN, "k"), allowed_roots=roots
    )
    with pytest.raises(AnalyticsValidationError, match="must lie under a root"):
        destination.paths("2024-01-15", ("funnel", "funnel_totals"))
    assert list((tmp_path / "outside").iterdir()) == []
