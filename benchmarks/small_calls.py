"""Load benchmark: many small API calls from many threads through one client.

The emulator runs in its own process (127.0.0.1). One ``AnalyticsClient`` (pool of
``--threads`` connections) is shared by ``--threads`` threads making ``--calls`` small calls
between them: tracking plan listings, a cohort page, an event analysis and a plan update. The
figures: errors (target 0), requests the emulator saw (each call exactly once: no retry was
needed), and TCP connections the emulator accepted (``/_emulator/stats``; target: no more than
the threads, i.e. connections are reused), with latency percentiles and calls per second.
The client lets ``--max-concurrent-calls`` of them be in flight at once (its default, 4, unless
told otherwise); the other threads wait their turn.

Usage: python benchmarks/small_calls.py [--calls 500] [--threads 16] [--max-concurrent-calls 4]
       [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import requests
from analytics_emulator.process import EmulatorProcess

from airflow_provider_analytics.client import AnalyticsClient, ClientConfig
from airflow_provider_analytics.client.throttle import DEFAULT_MAX_CONCURRENT_CALLS

if TYPE_CHECKING:
    from collections.abc import Callable

TOKEN, APP_KEY, XTOKEN, ADMIN = "calls-token", "calls-app-key", "calls-xtoken", "calls-admin"
ADMIN_HEADER = "X-Emulator-Admin"
EVENTS_REQUEST = {
    "measures": [{"expression": "event.$Anything", "aggregator": "TOTAL_COUNT"}],
    "crowds": ["$ALL"],
    "fromDate": "2024-01-15",
    "toDate": "2024-01-15",
    "unit": "DAY",
}


def calls(client: AnalyticsClient) -> list[Callable[[], Any]]:
    """The small calls, taken in turn."""
    return [
        lambda: client.list_events(plan=1),
        lambda: client.list_user_properties(),
        lambda: client.list_event_properties("purchase"),
        lambda: client.get_cohort_users("cohort_tiny", properties=["distinct_id", "age"]),
        lambda: client.analyze_events(EVENTS_REQUEST),
        lambda: client.update_event("purchase", remark="paid orders"),
    ]


def admin(base_url: str, method: str, path: str) -> Any:
    """One admin call on a connection of its own (so it is counted, exactly once)."""
    with requests.Session() as session:
        response = session.request(
            method, f"{base_url}/_emulator/{path}", headers={ADMIN_HEADER: ADMIN}, timeout=30
        )
    response.raise_for_status()
    return response.json()


def run(total: int, threads: int, in_flight: int = DEFAULT_MAX_CONCURRENT_CALLS) -> dict[str, Any]:
    """Start the emulator, make the calls, return the figures."""
    emulator = EmulatorProcess(
        credentials={"token": TOKEN, "app_key": APP_KEY, "xtoken": XTOKEN, "admin_token": ADMIN}
    ).start()
    try:
        config = ClientConfig(
            emulator.base_url,
            token=TOKEN,
            app_key=APP_KEY,
            pool_maxsize=threads,
            max_concurrent_calls=in_flight,
        )
        with AnalyticsClient(config) as client:
            client.analyze_events(EVENTS_REQUEST)  # builds the emulator's event log first
            admin(emulator.base_url, "POST", "reset")
            work = calls(client)
            latencies: list[float] = []
            errors: list[str] = []
            lock = threading.Lock()

            def one(index: int) -> None:
                started = time.perf_counter()
                try:
                    work[index % len(work)]()
                except Exception as error:  # counted and reported, the run goes on
                    with lock:
                        errors.append(f"{type(error).__name__}: {error}")
                with lock:
                    latencies.append(time.perf_counter() - started)

            started = time.perf_counter()
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(one, range(total)))
            wall = time.perf_counter() - started
        stats = admin(emulator.base_url, "GET", "stats")
    finally:
        emulator.stop()
    quantiles = statistics.quantiles(latencies, n=100)
    return {
        "calls": total,
        "threads": threads,
        "max_concurrent_calls": in_flight,
        "errors": len(errors),
        "error_samples": errors[:5],
        "requests_seen": sum(stats["requests"].values()),
        "connections_opened": stats["connections"] - 1,  # the stats call's own connection
        "wall_seconds": round(wall, 3),
        "calls_per_second": round(total / wall, 1),
        "latency_ms": {
            "p50": round(quantiles[49] * 1000, 1),
            "p95": round(quantiles[94] * 1000, 1),
            "max": round(max(latencies) * 1000, 1),
        },
    }


def report(figures: dict[str, Any]) -> None:
    latency = figures["latency_ms"]
    print(
        f"{figures['calls']} calls over {figures['threads']} threads, one client, at most "
        f"{figures['max_concurrent_calls']} in flight: "
        f"{figures['wall_seconds']:.2f} s, {figures['calls_per_second']:.0f} calls/s, "
        f"latency p50 {latency['p50']} ms, p95 {latency['p95']} ms, max {latency['max']} ms"
    )
    print(f"errors: {figures['errors']}  (target 0)")
    print(f"requests the emulator saw: {figures['requests_seen']}  (one per call: no retries)")
    print(
        f"TCP connections opened: {figures['connections_opened']}  "
        f"(target <= {figures['threads']}: connections are reused)"
    )
    for sample in figures["error_samples"]:
        print(f"  error: {sample}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument(
        "--max-concurrent-calls", type=int, default=DEFAULT_MAX_CONCURRENT_CALLS, dest="in_flight"
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    figures = run(args.calls, args.threads, args.in_flight)
    report(figures)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    ok = figures["errors"] == 0 and figures["connections_opened"] <= figures["threads"]
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
