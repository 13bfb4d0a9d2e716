"""A million-row export end to end: every line arrives, ids stay exact, and a second
export of the same properties is served from the block cache."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
import requests

from tests.emulator_helpers import EmulatorAdmin, project_headers

if TYPE_CHECKING:
    from analytics_emulator.server import EmulatorServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _export(server: EmulatorServer) -> tuple[int, set[int], bytes]:
    response = requests.post(
        server.base_url + "/uba/api/cohort/users/export",
        json={"cohortCode": "cohort_large", "properties": ["distinct_id", "age"]},
        headers=project_headers(server),
        stream=True,
        timeout=600,
    )
    assert response.status_code == 200
    count, ids, last = 0, set(), b""
    for line in response.iter_lines(chunk_size=1 << 20):
        count += 1
        ids.add(json.loads(line)["distinct_id"])
        last = line
    return count, ids, last


def test_million_row_export_twice(fresh_emulator: EmulatorServer) -> None:
    admin = EmulatorAdmin(fresh_emulator)
    count, ids, last = _export(fresh_emulator)
    assert count == len(ids) == 1_000_000
    assert all(abs(i) > 2**53 for i in ids)
    cold = admin.stats()["export_cache"]
    again, _, last_again = _export(fresh_emulator)
    warm = admin.stats()["export_cache"]
    assert again == count and last_again == last
    assert warm["hits"] - cold["hits"] == 123 and warm["misses"] == cold["misses"]
    admin.close()
