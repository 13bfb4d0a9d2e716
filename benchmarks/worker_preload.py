"""What a task's first export pays before its own work, and what a worker can pay once instead.

Airflow 3.3 runs each task in a process forked from a worker process (the task SDK's
supervisor forks; the ``LocalExecutor``'s workers are themselves started by ``multiprocessing``).
With ``[core] mp_start_method = forkserver`` and ``[core] mp_forkserver_preload = <modules>``,
the modules are imported once, in the fork server, and every worker and task forked from it
inherits them. This script starts workers the way the ``LocalExecutor`` does (a
``multiprocessing`` context of the configured method, the fork server preloading the listed
modules), forks a task from each worker as the supervisor does, and times in the task:

- the provider's imports (the export job, the hook);
- Airflow's filesystem discovery (``has_fs``: the installed providers' filesystems registered);
- the hook lineage collector that a first object storage write builds (plugins loaded).

Rows: ``fork`` (the default on Linux before Python 3.14: the worker inherits only what the
parent had imported); ``forkserver`` with ``mp_forkserver_preload`` naming Airflow's SDK and
the provider's export modules; and the same plus ``preload_filesystems`` (a module whose import
registers the filesystems, so the discovery too is paid once, in the fork server). The hook
lineage collector holds a task's assets, so it stays each task's own.

Usage: python benchmarks/worker_preload.py [--tasks 3]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time

PRELOAD = [
    "airflow.sdk",
    "airflow_provider_analytics.hooks.analytics",
    "airflow_provider_analytics.export.stream",
]
"""What ``[core] mp_forkserver_preload`` names in the preloaded case."""


def _cpu() -> float:
    return time.process_time()


def _task(write: int) -> None:
    """A task's first steps, timed (CPU seconds of this process)."""
    figures = {}
    started = _cpu()
    import airflow.sdk  # noqa: F401

    figures["airflow import"] = _cpu() - started
    started = _cpu()

    figures["provider imports"] = _cpu() - started
    started = _cpu()
    from airflow.sdk.io.fs import has_fs
    from airflow.sdk.lineage import get_hook_lineage_collector

    has_fs("file")
    figures["filesystem discovery"] = _cpu() - started
    started = _cpu()
    get_hook_lineage_collector()
    figures["lineage collector"] = _cpu() - started
    os.write(write, json.dumps(figures).encode())


def _worker(tasks: int, queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    """A worker: forks one task after another, as the supervisor does, and reports them."""
    for _ in range(tasks):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            _task(write)
            os._exit(0)
        os.close(write)
        os.waitpid(pid, 0)
        with os.fdopen(read, "rb") as answer:
            queue.put(json.loads(answer.read()))


def measure(method: str, preload: list[str], tasks: int) -> dict[str, float]:
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        context.set_forkserver_preload(preload)
    queue = context.Queue()
    worker = context.Process(target=_worker, args=(tasks, queue))
    worker.start()
    runs = [queue.get() for _ in range(tasks)]
    worker.join()
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


CASES = {
    "fork (no preload)": ("fork", []),
    "forkserver, preload": ("forkserver", PRELOAD),
    "+ preload_filesystems": ("forkserver", [*PRELOAD, "preload_filesystems"]),
}
"""Each runs in an interpreter of its own (one fork server per interpreter)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tasks", type=int, default=3)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    if args.case:
        print(json.dumps(measure(*CASES[args.case], args.tasks)))
        return
    print(f"CPU seconds in each task (median of {args.tasks} tasks)")
    print(
        f"{'':<24}{'airflow import':>16}{'provider imports':>18}{'fs discovery':>14}"
        f"{'lineage collector':>19}"
    )
    for name in CASES:
        command = [sys.executable, __file__, "--tasks", str(args.tasks), "--case", name]
        # the fork server finds preload_filesystems on PYTHONPATH (it is not given sys.path)
        here = os.path.dirname(os.path.abspath(__file__))
        env = os.environ | {
            "PYTHONPATH": os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))
        }
        done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"{name:<24}{figures['airflow import']:>16.3f}{figures['provider imports']:>18.3f}"
            f"{figures['filesystem discovery']:>14.3f}{figures['lineage collector']:>19.3f}",
            flush=True,
        )
    print(f"preloaded: {', '.join(PRELOAD)}")


if __name__ == "__main__":
    sys.exit(main())
