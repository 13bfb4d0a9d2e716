"""Serve the emulator until SIGINT or SIGTERM: ``python -m analytics_emulator``.

Once it accepts requests it prints its base URL and the credentials a connection needs
(``emulator listening on http://127.0.0.1:PORT``, then the token, appKey and xtoken); with
``--port-file`` it also writes the port there (for scripts that ask for ``--port 0``).
The emulator is a local stand-in with well-known default credentials, so printing them is the
point, not a leak.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from analytics_emulator import catalog
from analytics_emulator.cohort_settings import (
    MembershipChange,
    ProxyCut,
    SettingError,
    key_values,
    membership_change_from,
    proxy_cut_from,
)
from analytics_emulator.config import EmulatorConfig, is_loopback
from analytics_emulator.server import EmulatorServer

if TYPE_CHECKING:
    from collections.abc import Sequence


def _cohort(text: str) -> tuple[str, int]:
    code, sep, size = text.partition("=")
    if not sep or not code or not size.isdigit():
        raise argparse.ArgumentTypeError(f"expected CODE=SIZE, got {text!r}")
    return code, int(size)


def _proxy_cut(text: str) -> tuple[str, ProxyCut | None]:
    code, sep, settings = text.partition(":")
    if not sep or not code:
        raise argparse.ArgumentTypeError(f"expected CODE:rows=N,seconds=T,ending=E, got {text!r}")
    if settings == "off":
        return code, None
    try:
        return code, proxy_cut_from(key_values(settings, "proxy_cut"))
    except SettingError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _membership_change(text: str) -> tuple[str, MembershipChange]:
    code, sep, settings = text.partition(":")
    if not sep or not code:
        raise argparse.ArgumentTypeError(
            "expected CODE:after_calls=K,kind=shift|grow|shrink|exchange,users=N,times=M,at=P, "
            f"got {text!r}"
        )
    try:
        return code, membership_change_from(key_values(settings, "membership_change"))
    except SettingError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _loopback(text: str) -> str:
    if not is_loopback(text):
        raise argparse.ArgumentTypeError(f"the emulator only listens on loopback, not {text!r}")
    return text


def _write_atomically(path: Path, text: str) -> None:
    """Readers polling for the file never see it half written."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    os.replace(partial, path)


def connection_summary(config: EmulatorConfig) -> str:
    """The credentials and timezone a connection to this emulator needs, one per line."""
    return "\n".join(
        [
            f"  token (connection password): {config.token}",
            f"  app_api_key (extra):         {config.app_key}",
            f"  xtoken (extra):              {config.xtoken}",
            f"  timezone (extra):            {catalog.PROJECT_TIMEZONE}",
        ]
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    defaults = EmulatorConfig()
    parser = argparse.ArgumentParser(
        prog="python -m analytics_emulator",
        description="Serve the analytics platform emulator on loopback. Once it accepts "
        "requests it prints its base URL and the credentials to put in an `analytics` "
        "connection (host, password = token, extras app_api_key and xtoken).",
        epilog=f"Default connection: host http://{defaults.host}:PORT, password "
        f"{defaults.token!r}, extra {{'app_api_key': {defaults.app_key!r}, "
        f"'xtoken': {defaults.xtoken!r}, 'timezone': {catalog.PROJECT_TIMEZONE!r}}}.",
    )
    parser.add_argument("--port", type=int, required=True, help="port, 0 for any free one")
    parser.add_argument(
        "--host",
        type=_loopback,
        default=defaults.host,
        help="loopback address (default %(default)s)",
    )
    parser.add_argument(
        "--token",
        default=defaults.token,
        help="project token, header `token` (default %(default)s)",
    )
    parser.add_argument(
        "--app-key", default=defaults.app_key, help="project appKey (default %(default)s)"
    )
    parser.add_argument(
        "--xtoken",
        default=defaults.xtoken,
        help="platform xtoken for account operations (default %(default)s)",
    )
    parser.add_argument("--admin-token", default=None, help="enable the /_emulator/ admin API")
    parser.add_argument(
        "--seed", type=int, default=defaults.seed, help="seed of the synthetic data (%(default)s)"
    )
    parser.add_argument(
        "--cohort",
        type=_cohort,
        action="append",
        default=[],
        metavar="CODE=SIZE",
        help="add or resize a cohort (repeatable)",
    )
    parser.add_argument(
        "--proxy-cut",
        type=_proxy_cut,
        action="append",
        default=[],
        metavar="CODE:SETTINGS",
        help="a proxy in front of a cohort's stream (repeatable): rows=N and/or seconds=T, "
        "ending=504|mid_line|drop, e.g. cohort_medium:rows=5000,ending=mid_line; "
        "CODE:off removes the documented cut from a large cohort "
        f"({', '.join(catalog.LARGE_COHORTS)})",
    )
    parser.add_argument(
        "--membership-change",
        type=_membership_change,
        action="append",
        default=[],
        metavar="CODE:SETTINGS",
        help="the cohort is recomputed between calls (repeatable): after_calls=K, "
        "kind=shift|grow|shrink|exchange, users=N, times=M, at=P (where exchange's users "
        "leave), e.g. cohort_medium:after_calls=2,users=100",
    )
    parser.add_argument(
        "--max-page-size",
        type=int,
        default=defaults.max_page_size,
        help="largest pageSize of the paged listing (default %(default)s)",
    )
    parser.add_argument("--port-file", type=Path, help="write the bound port to this file")
    parser.add_argument("--log-level", default="warning")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    cohorts = {**catalog.COHORTS, **dict(args.cohort)}
    cuts = {code: ProxyCut() for code in catalog.LARGE_COHORTS if code in cohorts}
    cuts.update(args.proxy_cut)
    try:
        config = EmulatorConfig(
            token=args.token,
            app_key=args.app_key,
            xtoken=args.xtoken,
            admin_token=args.admin_token,
            seed=args.seed,
            cohorts=cohorts,
            proxy_cuts={code: cut for code, cut in cuts.items() if cut is not None},
            membership_changes=dict(args.membership_change),
            max_page_size=args.max_page_size,
            host=args.host,
            port=args.port,
            log_level=args.log_level,
        )
    except ValueError as exc:
        print(f"python -m analytics_emulator: error: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    server = EmulatorServer(config).start()
    try:
        if args.port_file is not None:
            _write_atomically(args.port_file, f"{server.port}\n")
        print(f"emulator listening on {server.base_url}", flush=True)
        print(connection_summary(config), flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
