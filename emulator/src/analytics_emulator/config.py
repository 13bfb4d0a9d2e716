"""How an emulator authenticates, what it serves and where it listens."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Final

from analytics_emulator import catalog
from analytics_emulator.cohort_settings import MembershipChange, ProxyCut
from analytics_emulator.export import DEFAULT_CACHE_BYTES, DEFAULT_CACHE_ROWS

MAX_PAGE_SIZE: Final = 10_000
"""The paged listing's largest ``pageSize``: the platform's documentation meant it for about
10,000 rows per call at most."""


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
    :param proxy_cuts: cohort code -> the proxy cut in front of its stream; None (the
        default) puts the documented cut in front of the catalog's large cohorts
        (:data:`.catalog.LARGE_COHORTS`) that are served, and no cut elsewhere.
    :param membership_changes: cohort code -> how its membership changes between calls.
    :param max_page_size: the paged listing's largest ``pageSize``.
    :param utm_prefixes: first path segments the ad tracking routes are served under.
    :param port: 0 picks a free port when the server starts.
    :param export_cache_bytes: cap of the cache of encoded export blocks.
    :param export_cache_rows: only the blocks of cohorts of at most this many users are
        cached, so a larger cohort streams in flat memory.
    :param log_level: uvicorn's log level.
    :param access_log: log every request line (never headers).
    """

    token: str = field(default="emulator-token", repr=False)
    app_key: str = field(default="emulator-app-key", repr=False)
    xtoken: str = field(default="emulator-xtoken", repr=False)
    admin_token: str | None = field(default=None, repr=False)
    seed: int = 7
    cohorts: dict[str, int] = field(default_factory=lambda: dict(catalog.COHORTS))
    proxy_cuts: dict[str, ProxyCut] | None = None
    membership_changes: dict[str, MembershipChange] = field(default_factory=dict)
    max_page_size: int = MAX_PAGE_SIZE
    utm_prefixes: tuple[str, ...] = ("/svc", "/ark")
    host: str = "127.0.0.1"
    port: int = 0
    export_cache_bytes: int = DEFAULT_CACHE_BYTES
    export_cache_rows: int = DEFAULT_CACHE_ROWS
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
        if self.proxy_cuts is None:
            documented = {c: ProxyCut() for c in catalog.LARGE_COHORTS if c in self.cohorts}
            object.__setattr__(self, "proxy_cuts", documented)
        for name, settings, kind in (
            ("proxy_cuts", self.proxy_cuts, ProxyCut),
            ("membership_changes", self.membership_changes, MembershipChange),
        ):
            for code, setting in (settings or {}).items():
                if code not in self.cohorts:
                    raise ValueError(f"{name}: {code!r} is not a served cohort")
                if not isinstance(setting, kind):
                    raise ValueError(f"{name}[{code!r}] must be a {kind.__name__}")
        if isinstance(self.max_page_size, bool) or not (
            isinstance(self.max_page_size, int) and self.max_page_size >= 1
        ):
            raise ValueError(
                f"max_page_size must be a positive integer, not {self.max_page_size!r}"
            )

    @property
    def cut_cohorts(self) -> dict[str, ProxyCut]:
        """The proxy cuts, resolved (never None once the config is built)."""
        return dict(self.proxy_cuts or {})
