"""A ``Retry-After`` one shard gets holds off every shard of the plan, in other processes too:
two processes read the two shards of one plan through a relay in front of the emulator, the
relay answers one page call of the first process ``429`` with ``Retry-After``, and the second
process makes no page call before the moment that answer named.

The relay records when each page call arrives (wall-clock time, which the hold record speaks
in) and orders the calls so that the outcome does not depend on speed: the second process has
read a page before the ``429`` is sent, and the page call it has in flight then is answered
only once the hold record exists and the second process' last read of it is older than the
refresh interval. Its later calls must then arrive after the hold's end (a slow machine only
widens the gaps)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest
import requests

from airflow_provider_analytics.client.validation import cohort_query
from airflow_provider_analytics.core.identity import cohort_identity
from airflow_provider_analytics.export.cohort_day import publish_shards, start_shards
from airflow_provider_analytics.export.shard_hold import HOLD_FILE, REFRESH_SECONDS
from airflow_provider_analytics.export.stream import prepare_export
from airflow_provider_analytics.output.parquet_destination import ParquetDestination
from tests.loopback import ServedOnLoopback

if TYPE_CHECKING:
    from pathlib import Path

    from analytics_emulator.server import EmulatorServer

    from airflow_provider_analytics.client import AnalyticsClient

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DAY = "2024-01-15"
PAGES_PATH = "/uba/api/cohort/users"
REFUSED_PAGE = 2
"""The first process' second page (shard 0 holds pages 1 to 5, shard 1 pages 6 to 10)."""
RETRY_AFTER = 5
TOLERANCE = 0.02
"""Seconds an arrival may precede the hold's end: clock reading noise only."""
READER = (sys.executable, "-m", "tests.shard_hold_reader")
WAIT = 120.0
"""The longest the relay waits for a step of the other process (process start included)."""


@dataclass(frozen=True)
class Arrival:
    page: int
    wall: float

    @property
    def shard(self) -> int:
        return 0 if self.page <= 5 else 1


class OrderingRelay(ServedOnLoopback):
    """Forwards every request to the emulator, recording the page calls, answering the first
    call of :data:`REFUSED_PAGE` with ``429`` once shard 1 has read a page, and answering
    shard 1's later calls only once the hold record exists in ``staging`` and
    :data:`REFRESH_SECONDS` (and a margin) have passed since."""

    def __init__(self, upstream: str, staging: Path) -> None:
        self.upstream = upstream
        self.staging = staging
        self.arrivals: list[Arrival] = []
        self.refused_at: float | None = None
        self.gate_opened_at: float | None = None
        self.hold: dict[str, Any] | None = None
        self._second_read = threading.Event()
        self._refused = threading.Event()
        self._gate = threading.Lock()
        relay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                relay._relay(self, b"")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                relay._relay(self, self.rfile.read(length))

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(ThreadingHTTPServer(("127.0.0.1", 0), Handler))

    def _relay(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        if handler.path.split("?")[0] == PAGES_PATH:
            arrival = Arrival(int(json.loads(body)["page"]), time.time())
            self.arrivals.append(arrival)
            if arrival.page == REFUSED_PAGE and not self._refused.is_set():
                self._second_read.wait(WAIT)
                self.refused_at = time.time()
                self._refused.set()
                self._send(handler, 429, b'{"code": 429, "msg": "too many requests"}')
                return
            if arrival.shard == 1:
                if not self._second_read.is_set():
                    self._second_read.set()  # shard 1's first page goes through
                else:
                    self._open_gate()
        headers = {
            name: value
            for name, value in handler.headers.items()
            if name.lower() not in {"host", "content-length", "connection"}
        }
        answer = requests.request(
            handler.command, self.upstream + handler.path, data=body, headers=headers, timeout=60
        )
        self._send(handler, answer.status_code, answer.content, answer.headers["Content-Type"])

    def _open_gate(self) -> None:
        """Hold a call of shard 1 until the hold record has been written and shard 1's last
        read of it is older than the refresh interval."""
        with self._gate:
            if self.gate_opened_at is not None:
                return
            self._refused.wait(WAIT)
            record = self.staging / HOLD_FILE
            ends = time.monotonic() + WAIT
            while not record.exists() and time.monotonic() < ends:
                time.sleep(0.02)
            if record.exists():
                self.hold = json.loads(record.read_bytes())
                time.sleep(REFRESH_SECONDS + 0.2)
            self.gate_opened_at = time.time()

    @staticmethod
    def _send(
        handler: BaseHTTPRequestHandler,
        status: int,
        content: bytes,
        content_type: str = "application/json",
    ) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(content)))
        if status == 429:
            handler.send_header("Retry-After", str(RETRY_AFTER))
        handler.end_headers()
        handler.wfile.write(content)


def test_a_retry_after_in_one_process_holds_off_the_shards_of_another(
    client: AnalyticsClient, emulator: EmulatorServer, tmp_path: Path
) -> None:
    prefix = f"{tmp_path.as_uri()}/users/"
    destination = ParquetDestination(prefix, cohort_identity("cohort_small"))
    prepared = prepare_export(client, cohort_query("cohort_small"), timezone="UTC")
    plan, _ = start_shards(client, prepared, destination, DAY, 100, 500)
    assert [(shard.first_page, shard.last_page) for shard in plan.shards] == [(1, 5), (6, 10)]
    staging = tmp_path / f"users.staging/cohort_code=cohort_small/dt={DAY}"
    assert (staging / "plan.json").exists()

    env = {
        **os.environ,
        "ANALYTICS_TOKEN": emulator.config.token,
        "ANALYTICS_APP_KEY": emulator.config.app_key,
    }
    with OrderingRelay(emulator.base_url, staging) as relay:
        readers = [
            subprocess.Popen(
                [*READER, relay.base_url, prefix, DAY, str(index)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for index in (0, 1)
        ]
        outputs = [reader.communicate(timeout=300) for reader in readers]
    for reader, (_, err) in zip(readers, outputs, strict=True):
        assert reader.returncode == 0, err.decode()[-3000:]
    assert [json.loads(out.splitlines()[-1])["rows"] for out, _ in outputs] == [500, 500]

    # the first process published the hold its 429 asked for
    assert relay.hold is not None, "no hold record was written"
    assert relay.hold["status"] == 429
    assert relay.hold["set_by"].startswith("shard 0 ")
    assert relay.refused_at is not None and relay.gate_opened_at is not None
    until = relay.hold["until"]
    assert relay.refused_at + RETRY_AFTER - 1 < until  # the record names the 429's moment
    # the other process: a page before the 429, the one in flight, then nothing until the end
    other = [arrival for arrival in relay.arrivals if arrival.shard == 1]
    assert [arrival.page for arrival in other] == [6, 7, 8, 9, 10]
    assert other[0].wall < relay.refused_at < relay.gate_opened_at < until
    later = [arrival for arrival in other if arrival.wall > relay.gate_opened_at]
    assert [arrival.page for arrival in later] == [8, 9, 10]
    early = [arrival for arrival in later if arrival.wall < until - TOLERANCE]
    assert not early, f"shard 1 called {until - early[0].wall:.3f} s before the hold's end"
    # the first process waited its own Retry-After, and the export is whole
    retried = [a for a in relay.arrivals if a.page == REFUSED_PAGE][1]
    assert retried.wall >= until - TOLERANCE
    assert publish_shards(client, plan, destination, DAY)["rows"] == 1000
