"""Two Celery workers against one: the sharded export of a cohort run by the scheduler in the
production-like stack (``make stack-celery``: PostgreSQL, Redis, the emulator, api-server,
scheduler, dag-processor, triggerer and two Celery workers of concurrency 1).

The DAG is ``benchmarks/dags/bench_cohort_shards.py``, the pattern of
``example_dags/analytics_cohort_shards.py`` (plan, mapped reads in the ``analytics_platform``
pool, one publication) with the cohort and shard sizes from the run's conf. By default it
exports the emulator's ``cohort_massive`` (10,000,000 users, the documented proxy cut on, so
only shards can carry it) in pages of 5,000 and shards of 200,000 (50 mapped reads), every
visible property of the plan, as ``benchmarks/cohort_shards.py`` does in one process.

Each round runs the DAG with both workers and with one. "One worker" means the second worker is
stopped by its pid (SIGTERM, while idle) before the run and started again after it, so that only
worker-1's processes exist during the run; the rounds alternate the order (two then one, then
one then two) so that a change in the machine's load falls on both. A warm-up run comes first,
so that no measured run pays for first imports: ``cohort_medium``, or the measured cohort itself
when the emulator caches its pages (up to 4,000,000 users, so ``cohort_large`` but not
``cohort_massive``), so that no measured run is the one that builds them.

For each run it prints:

- the run's wall time (``dag_run.start_date`` to ``end_date`` in the metadata database), and
  the phases from the task instances: plan, read (the first read's start to the last read's
  end, every try included), publish, and the scheduling gaps between them;
- rows per second over the run and over the read phase; the shards each worker read;
- peak RSS per process of each worker's session, sampled from ``/proc`` every 0.5 s:
  ``VmHWM`` (the kernel's own high-water mark of the process's resident set, so only the last
  half second of a process's life can be missed). Roles: the worker's main process (``airflow
  celery worker``), its prefork pool process (which runs Airflow's supervisor for each task)
  and the task processes the supervisor forks (titled ``airflow worker -- <task instance id>``;
  each is matched to its task in the database). A forked process's RSS counts the pages it
  still shares with its parent;
- CPU seconds during the run: each worker's main and pool processes with their exited children
  (the task processes), the emulator, and the whole machine's busy cores (other users
  included: the machine may be shared).

Figures are printed, never asserted. Usage::

    python benchmarks/cohort_shards_celery.py [--cohort cohort_large] [--rounds 1]
        [--shard-rows 200000] [--page-size 5000] [--workers both|two|one] [--no-warmup]
        [--reuse]

``--reuse`` uses the stack ``make stack-celery`` started (``out/stack``) instead of starting one
(its DAG file is copied in; a stopped worker is started again at the end; the stack is left
running). Otherwise a stack of its own under ``out/bench-celery/`` is started and stopped, by
pid, at the end.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import os
import shutil
import signal
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

REPO: Final = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # devtools, when run as a script

from analytics_emulator.catalog import COHORTS  # noqa: E402
from analytics_emulator.export import DEFAULT_CACHE_ROWS  # noqa: E402

from devtools import sessions  # noqa: E402
from devtools.ports import free_port  # noqa: E402
from devtools.stack import ROOT, WORKERS, Stack  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Callable

DAG_FILE: Final = Path(__file__).resolve().parent / "dags" / "bench_cohort_shards.py"
DAG_ID: Final = DAG_FILE.stem
BENCH_ROOT: Final = REPO / "out" / "bench-celery"
NO_SCHEDULED_RUNS: Final = {"AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": "False"}
WARMUP: Final = {"cohort_code": "cohort_medium", "page_size": 5_000, "shard_rows": 10_000}
TASKS: Final = ("plan_shards", "read_shard", "publish_cohort")
CASES: Final = {2: "two", 1: "one"}
CASE_NAMES: Final = {2: "two workers", 1: "one worker"}
FIRST_DAY: Final = dt.date(2024, 6, 1)
SAMPLE_SECONDS: Final = 0.5
TASK_TITLE: Final = "airflow worker -- "
TICKS: Final = os.sysconf("SC_CLK_TCK")
MIB: Final = 1024


# -- /proc ----------------------------------------------------------------------------------


def _stat(pid: int) -> list[str]:
    """``/proc/<pid>/stat`` from the state on (the name may hold spaces); [] when gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return []
    return raw.rsplit(b")", 1)[-1].decode("ascii", "replace").split()


def _cpu_ticks(fields: list[str]) -> int:
    """utime + stime + cutime + cstime: the process and its children it has waited for."""
    return sum(int(value) for value in fields[11:15])


def _status_kib(pid: int, key: str) -> int:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1])
    return 0


def _title(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()


def _machine_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of all cores since boot."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]
    total = sum(values[:8])
    return total - idle, total


@dataclass
class Seen:
    """One process of a worker's session, as last sampled."""

    worker: str
    role: str
    title: str
    peak_kib: int = 0
    task_instance_id: str = ""


@dataclass
class Sampler:
    """Samples the sessions of the running workers every :data:`SAMPLE_SECONDS`."""

    leaders: dict[str, int]
    seen: dict[tuple[int, str], Seen] = field(default_factory=dict)
    stopping: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def start(self) -> None:
        self.sample()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        if self.thread is not None:
            self.thread.join()
        self.sample()

    def _loop(self) -> None:
        while not self.stopping.wait(SAMPLE_SECONDS):
            self.sample()

    def sample(self) -> None:
        by_session = {leader: name for name, leader in self.leaders.items()}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            fields = _stat(pid)
            if not fields or fields[0] == "Z" or int(fields[3]) not in by_session:
                continue
            worker = by_session[int(fields[3])]
            key = (pid, fields[19])
            peak = _status_kib(pid, "VmHWM")
            known = self.seen.get(key)
            title = _title(pid)
            if known is None or (title and title != known.title):
                role, ti_id = "pool", ""
                if pid == self.leaders[worker]:
                    role = "main"
                elif title.startswith(TASK_TITLE):
                    role, ti_id = "task", title.removeprefix(TASK_TITLE).split()[0]
                peak = max(peak, known.peak_kib if known else 0)
                known = self.seen[key] = Seen(worker, role, title, peak, ti_id)
            known.peak_kib = max(known.peak_kib, peak)

    def session_cpu(self) -> dict[str, int]:
        """CPU ticks of each worker's live main and pool processes, with their waited
        children (the task processes, once they have exited)."""
        ticks = dict.fromkeys(self.leaders, 0)
        for (pid, _), seen in self.seen.items():
            if seen.role != "task" and (fields := _stat(pid)):
                ticks[seen.worker] += _cpu_ticks(fields)
        return ticks


# -- the stack --------------------------------------------------------------------------------


def start_own_stack() -> Stack:
    stack = Stack(
        root=BENCH_ROOT,
        executor="celery",
        api_port=free_port(),
        extra_dags=[DAG_FILE],
        settings=dict(NO_SCHEDULED_RUNS),
    )
    if (BENCH_ROOT / "processes.json").exists():
        left = Stack(root=BENCH_ROOT).down()
        print(f"stopped a stack an earlier run of this benchmark left: {', '.join(left)}")
    seconds = stack.up()
    print(f"celery stack up in {seconds:.0f} s (under {BENCH_ROOT.relative_to(REPO)})")
    return stack


def reuse_stack() -> Stack:
    """The stack ``make stack-celery`` recorded in out/stack, with the benchmark's DAG added."""
    state_file = ROOT / "processes.json"
    if not state_file.exists():
        raise SystemExit("--reuse: no stack is recorded in out/stack (run `make stack-celery`)")
    state = json.loads(state_file.read_text())
    if state["executor"] != "celery":
        raise SystemExit("--reuse: the running stack uses the LocalExecutor, not Celery")
    stack = Stack(root=ROOT, executor="celery", api_port=state["api_port"])
    stack.ports = state["ports"]
    stack.processes = state["processes"]
    stack.identities = state.get("identities", {})
    stack.database_directory = state.get("database_directory", "")
    stack.check_alive()
    shutil.copy(DAG_FILE, stack.dags / DAG_FILE.name)
    wait_until(lambda: DAG_ID in stack.dag_ids(), 300, f"the dag-processor to store {DAG_ID}")
    print(f"reusing the celery stack in {ROOT.relative_to(REPO)} (api port {stack.api_port})")
    return stack


def wait_until(ready: Callable[[], Any], timeout: float, what: str, every: float = 1) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = ready()
        if value:
            return value
        time.sleep(every)
    raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")


def answering_workers(stack: Stack) -> set[str]:
    done = stack.airflow("celery", "list-workers", "-o", "json", timeout=120)
    names = {entry.get("worker_name", "") for entry in json.loads(done.stdout or "[]")}
    return {worker for worker in WORKERS if any(n.startswith(f"{worker}@") for n in names)}


def worker_running(stack: Stack, name: str) -> bool:
    pid = stack.processes.get(name)
    if not pid:
        return False
    return sessions.is_ours(pid, stack.identities.get(name, "")) and sessions.group_alive(pid)


def use_workers(stack: Stack, count: int) -> None:
    """Leave ``count`` workers running: the second one stopped (SIGTERM to its session, by
    pid, while it is idle) or started again, and wait until the running ones answer."""
    second = WORKERS[1]
    if count == 1 and worker_running(stack, second):
        sessions.stop({second: stack.processes[second]}, signal.SIGTERM)
    elif count == 2 and not worker_running(stack, second):
        stack.start_worker(second)
    wanted = set(WORKERS[:count])
    wait_until(lambda: answering_workers(stack) == wanted, 300, f"workers {sorted(wanted)}", 3)


# -- one run ----------------------------------------------------------------------------------


@dataclass
class RunFigures:
    label: str
    workers: int
    cohort: str
    rows: int
    shards: int
    wall: float
    queued: float
    plan: float
    read: float
    publish: float
    gaps: float
    reads_in_flight: float
    per_worker: dict[str, int]
    retried: int
    between_tasks: dict[str, float]
    peaks: dict[str, dict[str, float]]
    cpu: dict[str, float]
    seconds_taken: float

    def describe(self) -> str:
        per_worker = ", ".join(f"{w} {n}" for w, n in sorted(self.per_worker.items()))
        lines = [
            f"{self.label}: {self.cohort}, {self.rows:,} rows in {self.shards} shards",
            f"  run wall {self.wall:7.1f} s   {self.rows / self.wall:>9,.0f} rows/s"
            f"   (queued before start {self.queued:.1f} s; whole measurement "
            f"{self.seconds_taken:.0f} s)",
            f"  plan {self.plan:6.1f} s   read {self.read:7.1f} s "
            f"({self.rows / self.read:,.0f} rows/s, {self.reads_in_flight:.2f} reads in flight "
            f"on average)   publish {self.publish:6.1f} s   between phases {self.gaps:5.1f} s",
            f"  shards read per worker: {per_worker}; tries beyond the first: {self.retried}",
            "  a worker's idle time from one task's end to its next task's start (mean): "
            + ", ".join(f"{w} {s:.1f} s" for w, s in sorted(self.between_tasks.items())),
        ]
        for worker, peaks in sorted(self.peaks.items()):
            shown = "   ".join(f"{role} {mib:5.0f}" for role, mib in peaks.items())
            lines.append(f"  peak RSS MiB {worker}: {shown}")
        cpu = "   ".join(f"{name} {seconds:6.1f}" for name, seconds in self.cpu.items())
        lines.append(f"  CPU s: {cpu}")
        return "\n".join(lines)


def run_day(stack: Stack) -> dt.date:
    """A day no run of the benchmark's DAG has used (one logical date per run)."""
    rows = stack.query("SELECT count(*) FROM dag_run WHERE dag_id = %s", DAG_ID)
    return FIRST_DAY + dt.timedelta(days=int(rows[0][0]))


def busy_tasks(stack: Stack) -> list[tuple[str, str]]:
    """Tasks of other DAGs that hold a worker or will soon (a reused stack runs its example
    DAGs on their schedules): a measured run waits for them, so that it has the workers to
    itself. A deferred task waits in the triggerer, not on a worker, and is not waited for."""
    rows = stack.query(
        "SELECT dag_id, task_id FROM task_instance WHERE dag_id <> %s AND state IN "
        "('scheduled', 'queued', 'running', 'restarting', 'up_for_retry')",
        DAG_ID,
    )
    return [(str(dag_id), str(task_id)) for dag_id, task_id in rows]


def trigger(stack: Stack, conf: dict[str, Any]) -> str:
    day = run_day(stack).isoformat()
    done = stack.airflow(
        "dags", "trigger", DAG_ID, "--logical-date", day, "--conf", json.dumps(conf)
    )
    if done.returncode != 0:
        raise RuntimeError(f"airflow dags trigger failed:\n{done.stdout}\n{done.stderr}")
    ((run_id,),) = stack.query(
        "SELECT run_id FROM dag_run WHERE dag_id = %s AND logical_date = %s::timestamptz",
        DAG_ID,
        f"{day}T00:00:00+00:00",
    )
    return str(run_id)


def wait_for_run(stack: Stack, run_id: str, timeout: float) -> None:
    def finished() -> str:
        ((state,),) = stack.query(
            "SELECT state FROM dag_run WHERE dag_id = %s AND run_id = %s", DAG_ID, run_id
        )
        return str(state) if state in ("success", "failed") else ""

    state = wait_until(finished, timeout, f"{DAG_ID} {run_id}", every=2)
    if state != "success":
        report = json.dumps(tries(stack, run_id), indent=1, default=str)
        raise RuntimeError(f"{DAG_ID} {run_id} {state}:\n{report}")


def tries(stack: Stack, run_id: str) -> list[dict[str, Any]]:
    """Every try of every task of the run (the current ones and the history)."""
    columns = "id::text, task_id, map_index, try_number, state, hostname, start_date, end_date"
    history = columns.replace("id::text", "task_instance_id::text")
    rows = stack.query(
        f"SELECT {columns} FROM task_instance WHERE dag_id = %s AND run_id = %s "
        f"UNION ALL SELECT {history} FROM task_instance_history "
        "WHERE dag_id = %s AND run_id = %s",
        DAG_ID,
        run_id,
        DAG_ID,
        run_id,
    )
    keys = ("id", "task_id", "map_index", "try", "state", "hostname", "start", "end")
    return [dict(zip(keys, row, strict=True)) for row in rows]


def xcom(stack: Stack, run_id: str, task_id: str) -> Any:
    ((value,),) = stack.query(
        "SELECT value FROM xcom WHERE dag_id = %s AND run_id = %s AND task_id = %s "
        "AND map_index = -1 AND key = 'return_value'",
        DAG_ID,
        run_id,
        task_id,
    )
    return json.loads(value) if isinstance(value, str | bytes) else value


def span(rows: list[dict[str, Any]]) -> tuple[dt.datetime, dt.datetime]:
    starts = [row["start"] for row in rows if row["start"] is not None]
    ends = [row["end"] for row in rows if row["end"] is not None]
    return min(starts), max(ends)


def measure(stack: Stack, label: str, workers: int, conf: dict[str, Any]) -> RunFigures:
    """Run the DAG once with ``workers`` workers and gather its figures."""
    began = time.monotonic()
    wait_until(lambda: not busy_tasks(stack), 3600, "other DAGs' tasks to end", every=5)
    use_workers(stack, workers)
    leaders = {name: stack.processes[name] for name in WORKERS[:workers]}
    sampler = Sampler(leaders)
    sampler.start()
    emulator = stack.processes["emulator"]
    cpu_before = sampler.session_cpu()
    emulator_before = _cpu_ticks(_stat(emulator))
    machine_before = _machine_ticks()
    try:
        run_id = trigger(stack, conf)
        wait_for_run(stack, run_id, timeout=4 * 3600)
    finally:
        sampler.stop()
    cpu_after = sampler.session_cpu()
    emulator_after = _cpu_ticks(_stat(emulator))
    machine_after = _machine_ticks()

    ((queued_at, start, end),) = stack.query(
        "SELECT queued_at, start_date, end_date FROM dag_run WHERE dag_id = %s AND run_id = %s",
        DAG_ID,
        run_id,
    )
    every_try = tries(stack, run_id)
    by_task = {name: [t for t in every_try if t["task_id"] == name] for name in TASKS}
    (plan_start, plan_end), (read_start, read_end), (publish_start, publish_end) = (
        span(by_task[name]) for name in TASKS
    )
    summary = xcom(stack, run_id, "publish_cohort")
    rows = int(summary["rows"])
    check_and_remove_output(summary["uri"], rows, COHORTS.get(str(conf["cohort_code"])))
    reads = by_task["read_shard"]
    read_seconds = sum(
        (t["end"] - t["start"]).total_seconds() for t in reads if t["start"] and t["end"]
    )
    per_worker: dict[str, int] = {}
    for t in reads:
        if t["state"] == "success":
            per_worker[t["hostname"]] = per_worker.get(t["hostname"], 0) + 1
    machine_busy = machine_after[0] - machine_before[0]
    machine_total = machine_after[1] - machine_before[1]
    elapsed = machine_total / TICKS / (os.cpu_count() or 1)
    cpu = {w: (cpu_after[w] - cpu_before[w]) / TICKS for w in leaders}
    cpu["emulator"] = (emulator_after - emulator_before) / TICKS
    cpu["machine (all users)"] = machine_busy / TICKS
    cpu["of cores"] = machine_busy / TICKS / elapsed if elapsed else 0.0
    read_time = (read_end - read_start).total_seconds()
    return RunFigures(
        label=label,
        workers=workers,
        cohort=str(conf["cohort_code"]),
        rows=rows,
        shards=int(summary["shards"]),
        wall=(end - start).total_seconds(),
        queued=(start - queued_at).total_seconds(),
        plan=(plan_end - plan_start).total_seconds(),
        read=read_time,
        publish=(publish_end - publish_start).total_seconds(),
        gaps=(read_start - plan_end).total_seconds() + (publish_start - read_end).total_seconds(),
        reads_in_flight=read_seconds / read_time if read_time else 0.0,
        per_worker=per_worker,
        retried=sum(1 for t in every_try if t["try"] > 1),
        between_tasks=idle_between_tasks(every_try),
        peaks=peaks_by_role(sampler, every_try),
        cpu=cpu,
        seconds_taken=time.monotonic() - began,
    )


def idle_between_tasks(every_try: list[dict[str, Any]]) -> dict[str, float]:
    """Per worker, the mean time from the end of one of its tasks to the start of its next
    (the supervisor's teardown, the broker, the scheduler and the next task's start-up)."""
    gaps: dict[str, list[float]] = {}
    by_worker: dict[str, list[dict[str, Any]]] = {}
    for t in every_try:
        if t["hostname"] and t["start"] and t["end"]:
            by_worker.setdefault(t["hostname"], []).append(t)
    for worker, ran in by_worker.items():
        ran.sort(key=lambda t: t["start"])
        gaps[worker] = [
            (after["start"] - before["end"]).total_seconds()
            for before, after in itertools.pairwise(ran)
        ]
    return {worker: statistics.mean(found) for worker, found in gaps.items() if found}


def peaks_by_role(sampler: Sampler, every_try: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per worker: the peak RSS (MiB) of its main process, its pool process(es) and the
    largest task process of each task (plan, read, publish) that ran there."""
    task_of = {t["id"]: t["task_id"] for t in every_try}
    peaks: dict[str, dict[str, float]] = {}
    for seen in sampler.seen.values():
        role = seen.role
        if role == "task":
            role = task_of.get(seen.task_instance_id, "other task")
        mine = peaks.setdefault(seen.worker, {})
        mine[role] = max(mine.get(role, 0.0), seen.peak_kib / MIB)
    order = ("main", "pool", *TASKS, "other task")
    return {
        worker: {role: found[role] for role in order if role in found}
        for worker, found in peaks.items()
    }


def check_and_remove_output(uri: str, rows: int, expected: int | None) -> None:
    """The published file holds the rows the summary says (and the cohort's size); then it is
    removed, so that runs of ten million rows do not pile up on disk."""
    import pyarrow.parquet as pq

    path = Path(uri.removeprefix("file://"))
    in_file = pq.read_metadata(path).num_rows
    if in_file != rows or (expected is not None and rows != expected):
        raise RuntimeError(f"{uri}: {in_file} rows in the file, {rows} reported, {expected} sized")
    path.unlink()


# -- the rounds -------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cohort", default="cohort_massive", help="default: %(default)s (10M)")
    parser.add_argument("--rounds", type=int, default=1, help="pairs of runs (two, one)")
    parser.add_argument("--page-size", type=int, default=5_000)
    parser.add_argument("--shard-rows", type=int, default=200_000)
    parser.add_argument(
        "--workers",
        choices=("both", "two", "one"),
        default="both",
        help="run with two workers and with one (default), or only one of the two cases",
    )
    parser.add_argument("--no-warmup", action="store_true")
    parser.add_argument("--reuse", action="store_true", help="the stack of make stack-celery")
    args = parser.parse_args()
    if args.cohort not in COHORTS:
        parser.error(f"--cohort must be one of the emulator's cohorts: {', '.join(COHORTS)}")
    conf = {"cohort_code": args.cohort, "page_size": args.page_size, "shard_rows": args.shard_rows}

    def stop_benchmark(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop_benchmark)
    print(__doc__.split("\n\n")[0])
    started = time.monotonic()
    stack = reuse_stack() if args.reuse else start_own_stack()
    results: list[RunFigures] = []
    try:
        if not args.no_warmup:
            warmup = warmup_conf(conf)
            warm = measure(stack, "warm-up, two workers", 2, warmup)
            print(f"warm-up ({warmup['cohort_code']}): run wall {warm.wall:.1f} s")
        for round_number in range(args.rounds):
            order = (2, 1) if round_number % 2 == 0 else (1, 2)
            order = tuple(n for n in order if args.workers in ("both", CASES[n]))
            for workers in order:
                label = f"round {round_number + 1}, {CASE_NAMES[workers]}"
                results.append(measure(stack, label, workers, conf))
                print(results[-1].describe(), flush=True)
        report(results)
    finally:
        if args.reuse:
            if not worker_running(stack, WORKERS[1]):
                stack.start_worker(WORKERS[1])
        else:
            stack.down()
    print(f"benchmark took {time.monotonic() - started:.0f} s")


def warmup_conf(conf: dict[str, Any]) -> dict[str, Any]:
    """The warm-up run: the measured cohort itself when the emulator keeps its pages in its
    cache (cohorts of at most ``DEFAULT_CACHE_ROWS`` users), so that no measured run is the one
    that builds them; a small cohort otherwise (its pages are built on every call)."""
    if COHORTS[str(conf["cohort_code"])] <= DEFAULT_CACHE_ROWS:
        return dict(conf)
    return dict(WARMUP)


def report(results: list[RunFigures]) -> None:
    two = [r for r in results if r.workers == 2]
    one = [r for r in results if r.workers == 1]
    if not (two and one):
        return

    def median(runs: list[RunFigures], figure: str) -> float:
        return statistics.median(getattr(r, figure) for r in runs)

    print(f"\ntwo workers / one worker ({len(two)} run(s) each, medians):")
    for figure in ("wall", "plan", "read", "publish"):
        a, b = median(two, figure), median(one, figure)
        print(f"  {figure:<8} {a:7.1f} s / {b:7.1f} s = {a / b:.2f}")
    shards = two[0].shards
    print(
        f"  target: run wall <= 0.60. One worker reads the {shards} shards one after another, "
        f"two read {-(-shards // 2)} and {shards // 2}: {-(-shards // 2) / shards:.2f} of the "
        "read phase if every read (and the idle time after it) costs the same"
    )


if __name__ == "__main__":
    main()
