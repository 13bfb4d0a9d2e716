"""How an emulator authenticates, what it serves and where it listens."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from analytics_emulator import catalog
from analytics_emulator.export import DEFAULT_CACHE_BYTES


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1 or ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class EmulatorConfig:
    """How an emulator authenticates, what it serves and where it listens.

    Secrets are left out of the ``repr``, so a logged or printed config never shows them.

    :param admin_token: enables the ``/_emulator/`` admin API, guarded by this token.
    :param seed: seed of every synthetic value.
    :param cohorts: cohort code -> number of users.
    :param utm_prefixes: first path segments the ad tracking routes are served under.
    :param port: 0 picks a free port when the server starts.
    :param export_cache_bytes: cap of the cache of encoded export blocks.
    :param log_level: uvicorn's log level.
    :param access_log: log every request line (never headers).
    """

    token: str = field(default="emulator-token", repr=False)
    app_key: str = "emulator-app-key"
    xtoken: str = field(default="emulator-xtoken", repr=False)
    admin_token: str | None = field(default=None, repr=False)
    seed: int = 7
    cohorts: dict[str, int] = field(default_factory=lambda: dict(catalog.COHORTS))
    utm_prefixes: tuple[str, ...] = ("/svc", "/ark")
    host: str = "127.0.0.1"
    port: int = 0
    export_cache_bytes: int = DEFAULT_CACHE_BYTES
    log_level: str = "warning"
    access_log: bool = False

    def __post_init__(self) -> None:
        if not is_loopback(self.host):
            raise ValueError(f"the emulator only listens on loopback, not on {self.host!r}")
        for prefix in self.utm_prefixes:
            if not prefix.startswith("/") or prefix.endswith("/") or len(prefix) < 2:
                raise ValueError(f"a path prefix looks like '/svc', not {prefix!r}")
        for code, size in self.cohorts.items():
            if isinstance(size, bool) or not isinstance(size, int) or size < 0:
                raise ValueError(f"cohort {code!r} needs a non-negative size, not {size!r}")
