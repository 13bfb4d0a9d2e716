"""Fixtures shared by the integration tests: a PostgreSQL cluster for the SQL catalog."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.postgres_cluster import postgres_cluster, server_programs

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture(scope="session")
def postgres_uri() -> Iterator[str]:
    """A database on a PostgreSQL cluster of its own, where PostgreSQL is installed (each test
    names a catalog of its own in it)."""
    programs = server_programs()
    if programs is None:
        pytest.skip("PostgreSQL's server programs (initdb, pg_ctl) are not installed")
    with postgres_cluster(programs) as uri:
        yield uri
