"""Free loopback ports for servers the tests and the stack start."""

from __future__ import annotations

import random
import socket
from collections.abc import Sequence
from pathlib import Path

_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_SPAN = 16_384
_ATTEMPTS = 200


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing uses now, drawn below the ephemeral range.

    The port is probed now and bound later, sometimes minutes later (an api-server starts
    after the database is migrated). Ports handed out by ``bind(port 0)`` come from the
    kernel's ephemeral range, and so do those of every other server on the machine that asks
    for any port, and of outgoing connections: probing inside that range races with all of
    them. Below it only other callers of this function compete, each drawing at random among
    some 16,000 ports.
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
    raise RuntimeError(f"no free port among {_ATTEMPTS} drawn from {candidates}")


def _candidates() -> Sequence[int]:
    low = _ephemeral_low()
    return range(max(1_024, low - _SPAN), low)


def _ephemeral_low() -> int:
    """The low end of the kernel's ephemeral port range (Linux's default when unreadable)."""
    try:
        return int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768
