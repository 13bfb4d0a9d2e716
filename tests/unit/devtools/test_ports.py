"""Ports for servers started later are drawn where "any port" requests do not land."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from devtools.ports import free_port


def ephemeral_range() -> tuple[int, int]:
    low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
    return int(low), int(high)


def test_a_free_port_is_outside_the_ephemeral_range_and_bindable() -> None:
    low, high = ephemeral_range()
    for _ in range(20):
        port = free_port()
        assert 1_024 <= port < 65_536
        assert not low <= port <= high
        with socket.socket() as server:
            server.bind(("127.0.0.1", port))


def test_a_port_in_use_is_never_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    spare = free_port()  # outside the ephemeral range: no connection will take it meanwhile
    with socket.create_server(("127.0.0.1", 0)) as busy:
        taken = busy.getsockname()[1]
        monkeypatch.setattr("devtools.ports._candidates", lambda: [taken, spare])
        ports = {free_port() for _ in range(20)}
    assert ports == {spare}


def test_no_free_candidate_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.create_server(("127.0.0.1", 0)) as busy:
        taken = busy.getsockname()[1]
        monkeypatch.setattr("devtools.ports._candidates", lambda: [taken])
        with pytest.raises(RuntimeError, match="no free port among 200 drawn outside"):
            free_port()


@pytest.mark.parametrize(
    ("ephemeral", "expected"),
    [
        ((32_768, 60_999), (16_384, 65_535)),
        ((1_024, 60_999), (61_000, 65_535)),  # a range from 1024: only the ports above it
    ],
)
def test_the_candidates_skip_the_ephemeral_range_and_well_known_ports(
    monkeypatch: pytest.MonkeyPatch,
    ephemeral: tuple[int, int],
    expected: tuple[int, int],
) -> None:
    from devtools import ports

    monkeypatch.setattr(ports, "_ephemeral_range", lambda: ephemeral)
    candidates = ports._candidates()
    assert (candidates[0], candidates[-1]) == expected
    assert all(not ephemeral[0] <= port <= ephemeral[1] for port in candidates)
    assert not {5432, 6379, 8080, 8793} & set(candidates)


def test_a_range_leaving_too_few_ports_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from devtools import ports

    monkeypatch.setattr(ports, "_ephemeral_range", lambda: (1_024, 65_000))
    with pytest.raises(RuntimeError, match=r"range 1024-65000 leaves only 535 ports"):
        ports._candidates()
