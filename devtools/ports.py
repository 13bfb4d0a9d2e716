"""Free loopback ports for servers the tests and the stack start."""

from __future__ import annotations

import random
import socket
from collections.abc import Sequence
from pathlib import Path

_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_SPAN = 16_384
_ATTEMPTS = 200
_MIN_CANDIDATES = 1_000
# servers that may run beside the tests: PostgreSQL, Redis, Airflow's api-server, log servers
# and Celery's Flower
_WELL_KNOWN = frozenset({5432, 5555, 6379, 8080, 8793, 8794})


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing uses now, drawn outside the ephemeral range.

    The port is probed now and bound later, sometimes minutes later (an api-server starts
    after the database is migrated). Ports handed out by ``bind(port 0)`` come from the
    kernel's ephemeral range, and so do those of every other server on the machine that asks
    for any port, and of outgoing connections: probing inside that range races with all of
    them. Outside it only other callers of this function compete, each drawing at random among
    some 20,000 ports (with Linux's default range).
    """
    candidates = _candidates()
    draw = random.SystemRandom()
    for _ in range(_ATTEMPTS):
        port = draw.choice(candidates)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:  # in use, or a recent connection's TIME_WAIT
                continue
            return port
    raise RuntimeError(f"no free port among {_ATTEMPTS} drawn outside the ephemeral range")


def _candidates() -> Sequence[int]:
    """Ports outside the ephemeral range (mostly just below it), without well-known ones."""
    low, high = _ephemeral_range()
    outside = [*range(max(1_024, low - _SPAN), low), *range(high + 1, 65_536)]
    candidates = [port for port in outside if port not in _WELL_KNOWN]
    if len(candidates) < _MIN_CANDIDATES:
        raise RuntimeError(
            f"the ephemeral port range {low}-{high} leaves only {len(candidates)} ports outside "
            f"it (at least {_MIN_CANDIDATES} wanted); narrow net.ipv4.ip_local_port_range"
        )
    return candidates


def _ephemeral_range() -> tuple[int, int]:
    """The kernel's ephemeral port range (Linux's default when unreadable)."""
    try:
        low, high = (int(word) for word in _EPHEMERAL_RANGE.read_text().split())
    except (OSError, ValueError):
        return 32_768, 60_999
    return low, high
