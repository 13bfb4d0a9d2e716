"""Ports for servers started later are drawn where "any port" requests do not land."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from devtools.ports import free_port


def test_a_free_port_is_below_the_ephemeral_range_and_bindable() -> None:
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for _ in range(20):
        port = free_port()
        assert 1_024 <= port < low
        with socket.socket() as server:
            server.bind(("127.0.0.1", port))


def test_a_port_in_use_is_never_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.create_server(("127.0.0.1", 0)) as busy:
        with socket.create_server(("127.0.0.1", 0)) as released:
            spare = released.getsockname()[1]
        taken = busy.getsockname()[1]
        monkeypatch.setattr("devtools.ports._candidates", lambda: [taken, spare])
        ports = {free_port() for _ in range(20)}
    assert ports == {spare}


def test_no_free_candidate_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.create_server(("127.0.0.1", 0)) as busy:
        taken = busy.getsockname()[1]
        monkeypatch.setattr("devtools.ports._candidates", lambda: [taken])
        with pytest.raises(RuntimeError, match=f"no free port among 200 drawn from \\[{taken}\\]"):
            free_port()
