"""Where the operator path's export time goes: py-spy across every thread, summed by stage.

Runs contender (a) of ``cohort_export.py`` (Airflow imported, hook from an ``AIRFLOW_CONN_*``
connection, ``ObjectStoragePath`` ``file://``) on the benchmark's data under ``py-spy record
--threads --native --format raw``, attached after the imports and the hook, before the
process's first export, and sums the samples of the export (every thread) by stage: each sample
goes to the stage of the first frame, from the innermost out, that names one. Samples of a
thread waiting (a lock, a queue, the GIL, a condition) are counted apart, so the shares are
shares of the CPU time.

py-spy (pinned) is installed into a virtual environment of its own under the work directory by
the project's uv; it needs ptrace (root, or ``kernel.yama.ptrace_scope`` 0).

Usage: python benchmarks/profile_export.py [--rows 1000000] [--rate 100] [--workdir out/bench]
           [--raw FILE] [--top 25]
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from export_data import ndjson_file, serving  # noqa: E402

PY_SPY = "py-spy==0.4.3"

STAGES: list[tuple[str, re.Pattern[str]]] = [
    (stage, re.compile(pattern))
    for stage, pattern in [
        ("zstd", r"ZSTD_|zstd"),
        (
            "UTF-8 validation",
            r"ValidateUTF8|UTF8DataValidator|ValidateFull|validate \(pyarrow|utf8_is_valid",
        ),
        ("Parquet encoding", r"parquet::|parquet_|write_table \(pyarrow/parquet"),
        ("parsing (Arrow JSON)", r"arrow::json::|rapidjson|read_json \(pyarrow"),
        (
            "conversions (datetimes, numbers)",
            r"_timestamps|_narrow_decimals|arrow::compute::|"
            r"number_rule|number_columns|_check_doubles|note_inexact|widen",
        ),
        ("marker scan", r"typed_markers|_without_typed_markers"),
        ("byte scans (key and line counts)", r"byte_scans|_key_ends|_byte_count"),
        ("splitting into blocks", r"iter_counted_blocks|_counted_lines"),
        ("socket (HTTP read)", r"urllib3|http/client|socket\.py|_read_chunks|iter_bytes|recv"),
        ("object storage (fsspec)", r"fsspec|upath|ObjectStoragePath|storage\.py|LocalFileOpener"),
        (
            "thread hand-offs",
            r"queue\.py|threading\.py:\d+\)|concurrent/futures|pipeline\.py|_bootstrap",
        ),
        ("row groups (concat, slices)", r"sinks/parquet\.py|concat_tables"),
    ]
]


def profiler(workdir: Path) -> Path:
    """py-spy in its own environment, made once with the project's uv."""
    venv = workdir / "profile-venv"
    binary = venv / "bin" / "py-spy"
    if binary.exists():
        return binary
    uv = str(ROOT / ".tools" / "bin" / "uv")
    subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    python = str(venv / "bin" / "python")
    subprocess.run([uv, "pip", "install", "--quiet", "--python", python, PY_SPY], check=True)
    return binary


WAITING = re.compile(
    r"PyThread_acquire_lock|pthread_cond_(timed)?wait|sem_(timed)?wait|"
    r"condition_variable::wait|epoll_wait|^poll |^select |take_gil"
)
"""Frames of a thread that waits (a lock, a queue, the GIL, a condition): no CPU time."""


def stage_of(frames: list[str]) -> str:
    """The stage of a sample: waiting, or the first frame from the innermost out that names
    one."""
    if any(WAITING.search(frame) for frame in frames[-4:]):
        return "waiting (no CPU)"
    for frame in reversed(frames):
        for stage, pattern in STAGES:
            if pattern.search(frame):
                return stage
    return "other"


def summarise(raw: Path, top: int) -> None:
    """Print the samples of the export by stage, by thread and by innermost function."""
    by_stage: collections.Counter[str] = collections.Counter()
    by_thread: collections.Counter[str] = collections.Counter()
    by_leaf: collections.Counter[str] = collections.Counter()
    for line in raw.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        frames = stack.split(";")
        exporting = any("export_cohort_to_parquet" in frame for frame in frames)
        if not exporting and not any(f.startswith("Thread._bootstrap ") for f in frames):
            continue  # the main thread before or after the export (its exit's collection)
        count = int(count_text)
        stage = stage_of(frames)
        by_stage[stage] += count
        if stage == "waiting (no CPU)":
            continue
        by_thread[_thread_role(frames)] += count
        by_leaf[re.sub(r" \((?!anonymous).*", "", frames[-1])[:90]] += count
    waiting = by_stage.pop("waiting (no CPU)", 0)
    running = sum(by_stage.values())
    print(f"{running} samples running, {waiting} waiting (all threads)\n")
    print(f"{'stage (share of the samples running)':<40}{'share':>7}")
    for stage, count in by_stage.most_common():
        print(f"{stage:<40}{count / running:>7.1%}")
    print(f"\n{'thread':<40}{'share':>7}")
    for role, count in by_thread.most_common():
        print(f"{role:<40}{count / running:>7.1%}")
    print(f"\n{'innermost function':<90}{'share':>7}")
    for leaf, count in by_leaf.most_common(top):
        print(f"{leaf:<90}{count / running:>7.1%}")


def _thread_role(frames: list[str]) -> str:
    joined = ";".join(frames)
    for role, mark in (
        ("write-behind (row groups)", "_write_row_group"),
        ("parse workers", "BlockDecoder.parse"),
    ):
        if mark in joined:
            return role
    if "export_cohort_to_parquet" in joined:
        return "main (socket, blocks, finish, row groups)"
    return "other"


def profile(spy: Path, workdir: Path, rows: int, rate: int, raw: Path) -> str:
    """Run (a) on ``rows`` users, with py-spy attached for its timed export only; the
    export's figures."""
    data = ndjson_file(workdir / "data", rows)
    warm_up = ndjson_file(workdir / "data", 1_000)
    cohorts = {"warm-up": (warm_up, 1, 1_000), "clean": (data, 1, rows)}
    env = os.environ | {
        "AIRFLOW_HOME": str(workdir / "airflow"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "BENCH_PROFILE_HANDSHAKE": "1",
    }
    out = str(workdir / "profile.parquet")
    with serving(cohorts) as base_url:
        script = str(HERE / "export_contenders.py")
        child = subprocess.Popen(
            [sys.executable, script, "provider", base_url, "clean", out],
            env=env,
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdin is not None and child.stdout is not None
        while (line := child.stdout.readline()) and line.strip() != "ready":
            pass  # the first export's log lines
        if not line:
            raise SystemExit("the export did not start")
        options = ["--threads", "--native", "--format", "raw", "--rate", str(rate)]
        spying = subprocess.Popen(
            [str(spy), "record", *options, "--output", str(raw), "--pid", str(child.pid)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(1.0)  # py-spy attaches
        child.stdin.write("go\n")
        child.stdin.flush()
        figures = child.stdout.read().strip().splitlines()[-1]
        child.wait()
        _, errors = spying.communicate(timeout=60)
    if child.returncode != 0 or not raw.exists():
        raise SystemExit(f"the profiled export failed: {errors}")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rate", type=int, default=100, help="samples a second")
    parser.add_argument("--workdir", type=Path, default=ROOT / "out" / "bench")
    parser.add_argument("--raw", type=Path, help="summarise this raw profile instead")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    if args.raw:
        summarise(args.raw, args.top)
        return
    workdir: Path = args.workdir.resolve()
    raw = workdir / "profile.raw.txt"
    figures = profile(profiler(workdir), workdir, args.rows, args.rate, raw)
    print(f"export: {figures}")
    print(f"raw profile: {raw}\n")
    summarise(raw, args.top)


if __name__ == "__main__":
    main()
