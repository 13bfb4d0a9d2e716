"""What importing every operator and sensor module costs beyond ``import airflow.sdk``.

A DAG processor imports these modules each time it parses a DAG file that uses them, so the
cost is paid per parse. Each run is a fresh interpreter (``python -X importtime``) that imports
``airflow.sdk`` and then the provider's operator and sensor modules; the figure of a run is the
sum of the self times ``-X importtime`` reports for every module first loaded after
``airflow.sdk`` (what the provider added). The median of ``--runs`` runs is printed with the
modules that cost most in the median run, and whether it meets ``--target`` seconds.

Usage: python benchmarks/import_time.py [--runs 7] [--target 0.1] [--top 12]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

from airflow_provider_analytics import get_provider_info

PARSE_TIME_MODULES = [
    module
    for kind in ("operators", "sensors")
    for entry in get_provider_info()[kind]
    for module in entry["python-modules"]
]
"""The modules a DAG file imports to use the provider's operators and sensor, as the provider
declares them to Airflow."""

MARKER = "import-time-benchmark-marker"


def one_run() -> tuple[float, dict[str, float]]:
    """Seconds the provider's modules added in a fresh interpreter, and each module's share."""
    code = f"import sys, airflow.sdk\nsys.stderr.write('{MARKER}\\n')\n" + "".join(
        f"import {module}\n" for module in PARSE_TIME_MODULES
    )
    finished = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        capture_output=True,
        text=True,
        check=True,
    )
    after = finished.stderr.split(f"{MARKER}\n", 1)[1]
    costs: dict[str, float] = {}
    for line in after.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        self_us, _, name = line.removeprefix("import time:").split("|", 2)
        if self_us.strip().isdigit():
            costs[name.strip()] = int(self_us) / 1e6
    return sum(costs.values()), costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--target", type=float, default=0.1)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    runs = sorted((one_run() for _ in range(args.runs)), key=lambda run: run[0])
    median_seconds, median_costs = runs[len(runs) // 2]
    seconds = [run[0] for run in runs]
    print(
        f"operator and sensor modules beyond `import airflow.sdk`: median {median_seconds:.3f} s "
        f"over {args.runs} runs (min {min(seconds):.3f}, max {max(seconds):.3f}, "
        f"stdev {statistics.pstdev(seconds):.3f}); {len(median_costs)} modules loaded"
    )
    print(f"target <= {args.target:.2f} s: {'met' if median_seconds <= args.target else 'MISSED'}")
    print("costliest modules of the median run (self time):")
    for name, cost in sorted(median_costs.items(), key=lambda item: -item[1])[: args.top]:
        print(f"  {cost * 1000:8.1f} ms  {name}")


if __name__ == "__main__":
    main()
