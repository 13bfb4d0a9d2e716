"""A throwaway PostgreSQL cluster on loopback, for the tests that need a real database.

Used only where PostgreSQL's server programs (``initdb``, ``pg_ctl``) are installed; the tests
that need it are skipped, saying why, elsewhere. The cluster lives in a temporary folder, listens
on 127.0.0.1 on a free port with trust authentication, and is stopped afterwards. PostgreSQL
refuses to run as root, so as root it runs as the ``postgres`` system user.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
from typing import TYPE_CHECKING

from devtools.ports import free_port

if TYPE_CHECKING:
    from collections.abc import Iterator


def server_programs() -> str | None:
    """The folder holding ``initdb`` and ``pg_ctl``, or None when PostgreSQL is not installed."""
    found = shutil.which("initdb")
    if found:
        return os.path.dirname(found)
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return os.path.dirname(candidates[-1]) if candidates else None


@contextlib.contextmanager
def postgres_cluster(programs: str) -> Iterator[str]:
    """Start a cluster; yield a SQLAlchemy URL of its ``postgres`` database."""
    as_root = os.geteuid() == 0
    prefix = ["runuser", "-u", "postgres", "--"] if as_root else []
    with tempfile.TemporaryDirectory(prefix="pg-") as directory:
        data = os.path.join(directory, "data")
        if as_root:
            shutil.chown(directory, "postgres")
        run = {"check": True, "capture_output": True, "timeout": 120}
        subprocess.run(
            [*prefix, f"{programs}/initdb", "-D", data, "-A", "trust", "-U", "postgres"], **run
        )
        port = free_port()
        options = f"-h 127.0.0.1 -p {port} -k {directory}"
        log = os.path.join(directory, "server.log")
        subprocess.run(
            [*prefix, f"{programs}/pg_ctl", "-D", data, "-o", options, "-l", log, "-w", "start"],
            **run,
        )
        try:
            yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/postgres"
        finally:
            subprocess.run(
                [*prefix, f"{programs}/pg_ctl", "-D", data, "-m", "fast", "-w", "stop"],
                check=False,
                capture_output=True,
                timeout=120,
            )
