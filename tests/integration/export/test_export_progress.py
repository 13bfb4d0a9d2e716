"""Progress lines of a slow export, over real HTTP on 127.0.0.1.

The server drips the export: a few rows, then a pause longer than the progress interval, so
every pause is a line due by construction. The tests read the lines' content (rows, the
percentage, the rates, the time left), never how long anything took.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import struct
import subprocess
import sys
import termios
import time
from typing import TYPE_CHECKING

import pytest
from analytics_emulator.testing import start_emulator

from airflow_provider_analytics.client import AnalyticsClient, ClientConfig
from airflow_provider_analytics.export.settings import ExportSettings
from airflow_provider_analytics.export.stream import export_cohort_to_parquet
from tests.integration.export_servers import ExportServer

if TYPE_CHECKING:
    from pathlib import Path
    from typing import BinaryIO

pytestmark = pytest.mark.integration

PLAN = [{"id": "user_id", "dataType": "number"}, {"id": "name", "dataType": "string"}]
ROWS = 40
ROWS_PER_DRIP = 5
PAUSE = 0.12
"""Seconds between drips; longer than :data:`INTERVAL`, so each drip is worth a line."""
INTERVAL = 0.05
PROGRESS_LOGGER = "airflow_provider_analytics.core.progress"
LINE = re.compile(
    r"cohort c1: (?P<rows>\d+) of 40 rows \((?P<percent>\d+\.\d)%\), (?P<mb>\d+\.\d) MB received; "
    r"(?P<rate>\d+(\.\d+)?) rows/s, \d+\.\d MB/s(; about (?P<left>\d+ s) left)?"
)


def record(n: int) -> bytes:
    return json.dumps({"user_id": n, "name": f"user {n}"}).encode() + b"\n"


def drip(stream: BinaryIO) -> None:
    for first in range(0, ROWS, ROWS_PER_DRIP):
        stream.write(b"".join(record(n) for n in range(first, first + ROWS_PER_DRIP)))
        stream.flush()
        time.sleep(PAUSE)


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == PROGRESS_LOGGER]


def check_interim(messages: list[str]) -> list[int]:
    """Every interim line is well formed and consistent; returns the rows of each."""
    interim = [LINE.fullmatch(m) for m in messages if "done" not in m]
    assert interim and all(interim), messages
    rows = []
    for line in interim:
        assert line is not None
        count = int(line["rows"])
        rows.append(count)
        assert line["percent"] == f"{100 * count / ROWS:.1f}"
        assert float(line["rate"]) > 0
        assert (line["left"] is None) == (count == ROWS)  # a time left until the end
    assert rows == sorted(rows) and rows[0] < ROWS
    return rows


@pytest.mark.slow
def test_a_slow_export_logs_rows_percentage_and_rates_at_the_clients_interval(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The job has no interval of its own here: the client's (the connection's) applies."""
    settings = ExportSettings(attempts=1, block_bytes=64, chunk_bytes=1024)
    with ExportServer(plan=PLAN, count=ROWS, write=drip) as server:
        config = ClientConfig(
            server.base_url, token="t0k", app_key="app", progress_interval=INTERVAL
        )
        with AnalyticsClient(config) as client, caplog.at_level(logging.INFO):
            result = export_cohort_to_parquet(
                client, "c1", tmp_path / "users.parquet", settings=settings, timezone="UTC"
            )
    assert result.rows == ROWS
    check_interim(lines(caplog))
    final = next(m for m in caplog.messages if m.startswith("cohort c1: wrote 40 rows"))
    assert re.search(r"\(\d+(\.\d+)? rows/s, \d+\.\d MB/s\)$", final), final


@pytest.mark.slow
def test_the_export_settings_interval_wins_over_the_clients(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = ExportSettings(attempts=1, block_bytes=64, chunk_bytes=1024, progress_interval=3600)
    with ExportServer(plan=PLAN, count=ROWS, write=drip) as server:
        config = ClientConfig(
            server.base_url, token="t0k", app_key="app", progress_interval=INTERVAL
        )
        with AnalyticsClient(config) as client, caplog.at_level(logging.INFO):
            export_cohort_to_parquet(
                client, "c1", tmp_path / "users.parquet", settings=settings, timezone="UTC"
            )
    assert lines(caplog) == []  # an hour between lines: none in a second


@pytest.mark.slow
def test_the_clients_export_iterator_logs_progress_and_a_final_rate(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with ExportServer(plan=PLAN, count=ROWS, write=drip) as server:
        config = ClientConfig(
            server.base_url, token="t0k", app_key="app", progress_interval=INTERVAL
        )
        with (
            AnalyticsClient(config) as client,
            caplog.at_level(logging.INFO),
            client.export_cohort_users("c1", expected_rows=ROWS) as export,
        ):
            users = list(export.iter_records())
    assert len(users) == ROWS
    messages = lines(caplog)
    check_interim(messages)
    (final,) = [m for m in messages if "done" in m]
    assert re.fullmatch(
        r"cohort c1: done, 40 rows, \d+\.\d MB received in \d+\.\d s "
        r"\(\d+(\.\d+)? rows/s, \d+\.\d MB/s\)",
        final,
    ), final


SCRIPT = """
import os
from airflow_provider_analytics.client import AnalyticsClient, ClientConfig

config = ClientConfig(
    os.environ["PLATFORM"], token=os.environ["TOKEN"], app_key=os.environ["APP_KEY"]
)
with AnalyticsClient(config) as client, client.export_cohort_users("cohort_large") as export:
    rows = sum(1 for _ in export.iter_records())
print("exported", rows, "rows")
"""
"""A plain script: no logging set up, no progress argument, nothing installed beyond the
package."""


def _run_in_a_terminal(environ: dict[str, str]) -> str:
    """Run :data:`SCRIPT` with a pseudo-terminal (120 columns) as its stdin, stdout and
    stderr, as a person at a terminal runs it; returns all it wrote."""
    primary, secondary = os.openpty()
    fcntl.ioctl(primary, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-c", SCRIPT],
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        env=environ,
        close_fds=True,
    )
    os.close(secondary)
    shown = bytearray()
    try:
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # EIO: the script ended and closed the terminal
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(primary)
        process.wait(timeout=60)
    assert process.returncode == 0, shown.decode(errors="replace")[-3000:]
    return shown.decode(errors="replace")


@pytest.mark.slow
def test_a_plain_script_in_a_terminal_shows_a_bar_with_percentage_and_time_left() -> None:
    """The first-hour check: the client's export of ``cohort_large`` read through
    ``iter_records()`` from a script with no logging set up shows, on its terminal, a bar
    with the total, the percentage and the time left (the count asked with one page)."""
    with start_emulator() as emulator:
        environ = {
            **os.environ,
            "PLATFORM": emulator.base_url,
            "TOKEN": emulator.token.reveal(),
            "APP_KEY": emulator.app_key.reveal(),
        }
        shown = _run_in_a_terminal(environ)
    assert "exported 1000000 rows" in shown
    bars = re.findall(
        r"cohort cohort_large:\s+(\d+)%\|[^|]*\| \S+/1\.00M \[[\d:]+<([\d:?]+)", shown
    )
    assert bars, shown[-2000:]
    percents = [int(p) for p, _ in bars]
    assert percents == sorted(percents) and percents[-1] == 100
    assert any(0 < p < 100 for p in percents), percents  # seen on the way, not only at the end
    assert any(left != "?" for _, left in bars)  # the time left, once a rate is known
    assert "Traceback" not in shown
