"""Bounds at decode, against a server on 127.0.0.1: an answer too deep, too long or with a
fault in every element is refused by the sync and the async client alike, with an
``AnalyticsProtocolError`` naming the operation and the limit, before validation could exhaust
the stack or the memory."""

from __future__ import annotations

import asyncio
import re
import zlib

import pytest

from airflow_provider_analytics.client import AnalyticsClient, AnalyticsProtocolError
from airflow_provider_analytics.client.async_api import AsyncAnalyticsClient
from airflow_provider_analytics.client.data_ready import DataReadyCheck
from airflow_provider_analytics.core import strict_json
from tests.integration.client.test_hostile_answers import AnsweringServer, config, serving
from tests.integration.client.test_transport_parity import (
    LIST,
    TRANSPORTS,
    Answer,
    ScriptedServer,
    config_for,
)

pytestmark = pytest.mark.integration

CHECK = DataReadyCheck("2024-01-14", "2024-01-15")


def refusals(body: bytes) -> tuple[str, str]:
    """What the sync and the async client raise for ``body``."""

    async def via_async(server: AnsweringServer) -> str:
        async with AsyncAnalyticsClient(config(server)) as client:
            with pytest.raises(AnalyticsProtocolError) as caught:
                await client.request_json(CHECK.call())
        return str(caught.value)

    with serving(lambda path, request: body) as server:
        client = AnalyticsClient(config(server))
        with client, pytest.raises(AnalyticsProtocolError) as got:
            client.request_json(CHECK.call())
        return str(got.value), asyncio.run(via_async(server))


def test_an_answer_nested_100000_deep_names_the_operation_and_the_limit() -> None:
    """It raised a bare ``RecursionError`` in both clients, naming no operation."""
    sync, asynchronous = refusals(b"[" * 100_000 + b"]" * 100_000)
    assert sync == asynchronous
    assert sync.startswith("analyze_events: ")
    assert f"nested deeper than {strict_json.MAX_DEPTH} levels" in sync


def test_an_answer_longer_than_the_limit_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(strict_json, "MAX_BYTES", 1000)
    sync, asynchronous = refusals(b"[" + b"0," * 1000 + b"0]")
    assert sync == asynchronous
    assert sync.startswith("analyze_events: ")
    assert "2003 bytes long, more than the 1000 bytes" in sync


def test_an_answer_faulty_in_every_element_is_refused_at_its_first_fault() -> None:
    """A 0.5 MB array of zeros collected one error per element (60 MB to 459 MB; 50 MB of
    zeros tried to allocate 2.28 GB): validation now stops at an array's first fault."""
    body = b"[" + b"0," * 250_000 + b"0]"
    with (
        serving(lambda path, request: body) as server,
        AnalyticsClient(config(server)) as client,
        pytest.raises(AnalyticsProtocolError) as caught,
    ):
        client.list_user_properties()
    refusal = str(caught.value)
    assert refusal.startswith("list_user_properties: [0] must be a JSON object, got 0; check")
    assert "more)" not in refusal


@pytest.mark.parametrize("status", [200, 500])
def test_a_compressed_answer_is_inflated_no_further_than_the_limit(
    monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    """A 0.5 MB gzip body inflating to 512 MiB was inflated whole before the length was
    checked (1 GiB at its peak, a bare MemoryError under a memory limit)."""
    monkeypatch.setattr(strict_json, "MAX_BYTES", 1 << 20)
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip, 256 MiB in 0.25 MB
    bomb = b"".join([squeeze.compress(b" " * (1 << 20)) for _ in range(256)] + [squeeze.flush()])
    script = [Answer(status, bomb, {"Content-Encoding": "gzip"})]
    for transport, call in TRANSPORTS.items():
        with ScriptedServer(script) as server:
            outcome = call(config_for(server.base_url), LIST)
        assert outcome.error is AnalyticsProtocolError, transport
        assert len(server.received) == 1  # not asked again
        read = re.fullmatch(
            rf"list_events: the answer \(HTTP {status}, application/json\) is at least (\d+) "
            r"bytes long, more than the 1048576 bytes a document may be; check .*",
            outcome.message or "",
        )
        assert read is not None, outcome.message
        assert int(read[1]) < 80 << 20, transport  # stopped after the limit (httpx inflates
        # each 64 KiB it receives at once: up to 64 MiB here), not at 256 MiB
