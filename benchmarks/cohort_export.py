"""Cohort export benchmark: the operator's path against DuckDB, a 20-line Arrow script and dlt.

Generated NDJSON (``export_data.py``: 1,000,000 users of 19 properties by default, ~450 MB)
is served over loopback by a ``sendfile`` server that costs almost nothing (the paged endpoint
too, from pages built once from the same file). Each contender runs in its own child process
(``export_contenders.py``) and is timed as that fresh process's first run, as an Airflow task
runs it: imports, client and export inside the clock; before it only Airflow's own start (for
the contenders that run as the operator does: Airflow imported, its filesystem discovery), whose
CPU seconds are printed apart. Rounds alternate the contenders (each round starting one further
along, the slow dlt dicts run last in each), and the medians of the rounds are reported:

  (a) provider        hook from an AIRFLOW_CONN_* connection, ObjectStoragePath file://
                      destination, the streamed export
  (a) pages           the cohort day job in mode="pages": shards of the paged endpoint (pages of
                      5,000, shards of 200,000), checked and merged into one object
                      (target: <= 1.5x (a)'s CPU per row)
  (a) Iceberg         (a) into an Iceberg table (SQL catalog on SQLite, local files), streamed
                      (target: <= 1.1x (a))
  (a) Iceberg, models (a) Iceberg in a process that has imported Airflow's models and
                      configured their mappers before the clock, as a LocalExecutor worker
                      forked from the scheduler has (not the issue's reference: shown beside)
  (b) duckdb          COPY (SELECT * FROM read_json(<local file>)) TO ... (parquet, zstd)
  (d) reference       requests streaming into pyarrow.json.open_json(r.raw, 16 MiB blocks,
                      threads on) and a zstd ParquetWriter
  dlt dicts           dlt's default idiom (records as dicts) into Parquet files
  dlt arrow           dlt's fast path (Arrow tables, read as in (d)) into Parquet files
  (a) markers         (a) on data with a masked marker every 1,000 rows, in turn in a number,
                      boolean, list, datetime and number column (target: <= 1.2x (a))
  (a) extra key       (a) on the same data with one key per record the export did not ask
                      for (a tag column a server added; target: <= 1.1x (a))
  (a) 4x rows         (a) on four times the rows (the file served four times over; target:
                      seconds per row and peak RSS within 10% of (a))

``--warm`` runs every contender's export a second time in the same process and shows its CPU
seconds beside the first, labelled "warm" (a warm process, which an Airflow task is not).

dlt runs in a virtual environment of its own, made under the work directory with pinned
versions by the project's uv; when it cannot be made, dlt is skipped with the reason printed.
Wall and CPU seconds (user + sys of the child, all threads) are those of the timed part; peak
RSS is the child's whole life. The machine may be shared: compare ratios of one run.

Usage: python benchmarks/cohort_export.py [--rows 1000000] [--rounds 5] [--quick] [--warm]
           [--no-dlt] [--dlt-dicts-rows N] [--no-markers] [--no-extra] [--no-4x]
           [--only NAME ...] [--baseline REV ...] [--workdir out/bench] [--json FILE]

``--baseline REV`` adds "(a) at REV": the same (a) run against the package as it was at a git
revision of this repository (extracted under the work directory, run with today's
dependencies), for before/after figures measured in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from export_data import ndjson_file, page_file, serving  # noqa: E402

DLT_PINS = ("dlt[parquet]==1.31.0", "pyarrow==26.0.1", "requests==2.34.2")
"""What the dlt environment holds (pyarrow as the project's lock has it)."""
CONTENDERS = "contenders"


def dlt_python(workdir: Path) -> Path | None:
    """The interpreter of the dlt environment, made (once per set of pins) with the project's
    uv; None, with the reason printed, when it cannot be made."""
    venv = workdir / "dlt-venv"
    python, stamp = venv / "bin" / "python", venv / "pins.txt"
    if python.exists() and stamp.exists() and stamp.read_text() == "\n".join(DLT_PINS):
        return python
    uv = ROOT / ".tools" / "bin" / "uv"
    if not uv.exists():
        print(f"dlt skipped: the project's uv is not at {uv.relative_to(ROOT)} (run make venv)")
        return None
    shutil.rmtree(venv, ignore_errors=True)
    started = time.perf_counter()
    for command in (
        [str(uv), "venv", "--quiet", "--python", sys.executable, str(venv)],
        [str(uv), "pip", "install", "--quiet", "--python", str(python), *DLT_PINS],
    ):
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            reason = (done.stderr or done.stdout).strip().splitlines()[-1:]
            print(f"dlt skipped: its environment could not be made ({' '.join(reason)})")
            shutil.rmtree(venv, ignore_errors=True)
            return None
    stamp.write_text("\n".join(DLT_PINS))
    took = time.perf_counter() - started
    print(f"made the dlt environment ({', '.join(DLT_PINS)}) in {took:.0f} s")
    return python


PAGE_SIZE = 5_000
"""Users per page of the pages contender (the job's default)."""


def run_child(
    command: list[str],
    workdir: Path,
    warm: bool = False,
    package: Path | None = None,
    models_ready: bool = False,
) -> dict[str, float]:
    """Run one contender (with ``package``: against the package found there); its figures
    (the last line it prints)."""
    # bytecode is written (once) so that imports do not recompile sources in every child
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    # a worker of its own, configured as in production: the machine's ~/airflow (and its
    # example plugins, which a worker loads with its first object storage write) stay out
    env |= {"AIRFLOW_HOME": str(workdir / "airflow"), "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
    if warm:
        env["BENCH_WARM"] = "1"
    if package is not None:
        env["PYTHONPATH"] = str(package)
    if models_ready:
        env["BENCH_MODELS_READY"] = "1"
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[1:])} failed:\n{done.stdout}\n{done.stderr}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _medians(runs: list[dict[str, float]]) -> dict[str, float]:
    keys = [k for k in runs[0] if k != "rows" and all(k in r for r in runs)]
    return {k: statistics.median(r[k] for r in runs) for k in keys} | {"rows": runs[0]["rows"]}


def _ratio(a: dict[str, float], other: dict[str, float] | None, key: str) -> str:
    return f"{a[key] / other[key]:.2f}" if other else "n/a"


def print_summary(median: dict[str, dict[str, float]]) -> None:
    warm = any("warm_cpu" in figures for figures in median.values())
    print(
        f"\n{'contender':<22}{'rows':>11}{'wall s':>9}{'CPU s':>8}{'CPU us/row':>11}"
        f"{'peak RSS MiB':>14}{'file MiB':>10}" + (f"{'warm CPU s':>12}" if warm else "")
    )
    for name, figures in median.items():
        print(
            f"{name:<22}{int(figures['rows']):>11,}{figures['seconds']:>9.2f}"
            f"{figures['cpu']:>8.2f}{figures['cpu'] / figures['rows'] * 1e6:>11.2f}"
            f"{figures['peak_rss_mib']:>14.0f}{figures['bytes'] / 2**20:>10.1f}"
            + (f"{figures['warm_cpu']:>12.2f}" if "warm_cpu" in figures else "")
        )
    a = median["(a) provider"]
    print(
        f"\nbefore the clock (CPU s): Airflow imported {a.get('airflow_start', 0):.2f}, "
        f"its filesystem discovery {a.get('discovery', 0):.2f}"
    )
    b, d = median.get("(b) duckdb"), median.get("(d) reference")
    dlts = [median[name] for name in ("dlt arrow", "dlt dicts") if name in median]
    fastest = min(dlts, key=lambda figures: figures["seconds"]) if dlts else None
    print()
    for label, other in (("(b)", b), ("(d)", d), ("dlt fastest", fastest)):
        print(
            f"(a)/{label:<12} wall {_ratio(a, other, 'seconds'):>5}  CPU "
            f"{_ratio(a, other, 'cpu'):>5}  (target <= 1.0)"
        )
    print(f"(a) peak RSS      {a['peak_rss_mib']:.0f} MiB  (target <= 256, Airflow imported)")
    for name, before in median.items():
        if name.startswith("(a) at "):
            print(
                f"(a)/{name[4:]:<13} wall {_ratio(a, before, 'seconds'):>5}  CPU "
                f"{_ratio(a, before, 'cpu'):>5}  peak RSS {_ratio(a, before, 'peak_rss_mib')}"
                "  (this package against the same path at that revision)"
            )
    if marked := median.get("(a) markers 1/1000"):
        print(
            f"markers/(a)       wall {marked['seconds'] / a['seconds']:.2f}  CPU "
            f"{marked['cpu'] / a['cpu']:.2f}  (target <= 1.2)"
        )
    if extra := median.get("(a) extra key"):
        print(
            f"extra key/(a)     wall {extra['seconds'] / a['seconds']:.2f}  CPU "
            f"{extra['cpu'] / a['cpu']:.2f}  (target <= 1.1)"
        )
    if pages := median.get("(a) pages"):
        per_row = (pages["cpu"] / pages["rows"]) / (a["cpu"] / a["rows"])
        print(f"pages/(a)         CPU per row {per_row:.2f}  (target <= 1.5)")
    if iceberg := median.get("(a) Iceberg"):
        print(
            f"Iceberg/(a)       wall {iceberg['seconds'] / a['seconds']:.2f}  CPU "
            f"{iceberg['cpu'] / a['cpu']:.2f}  (target <= 1.1)"
        )
    if ready := median.get("(a) Iceberg, models"):
        print(
            f"Iceberg, models/(a) wall {ready['seconds'] / a['seconds']:.2f}  CPU "
            f"{ready['cpu'] / a['cpu']:.2f}  (Airflow's models imported before the clock, "
            f"{ready.get('models', 0):.2f} CPU s, as a worker forked from the scheduler has them)"
        )
    if large := median.get("(a) 4x rows"):
        per_row = (large["seconds"] / large["rows"]) / (a["seconds"] / a["rows"]) - 1
        cpu_row = (large["cpu"] / large["rows"]) / (a["cpu"] / a["rows"]) - 1
        growth = large["peak_rss_mib"] / a["peak_rss_mib"] - 1
        print(
            f"4x/(a) per row    wall {per_row:+.1%}  CPU {cpu_row:+.1%}  peak RSS {growth:+.1%}"
            "  (target within 10%)"
        )


def baseline_package(revision: str, workdir: Path) -> Path:
    """The package as it was at ``revision`` (a git revision of this repository), extracted
    once under the work directory; run with the project's current dependencies."""
    commit = subprocess.run(
        ["git", "rev-parse", "--short", f"{revision}^{{commit}}"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    ).stdout.strip()
    folder = workdir / f"baseline-{commit}"
    if not (folder / "airflow_provider_analytics").is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "archive", commit, "airflow_provider_analytics"],
            capture_output=True,
            cwd=ROOT,
            check=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=None, help="default 1,000,000")
    parser.add_argument("--rounds", type=int, default=None, help="default 5")
    parser.add_argument("--quick", action="store_true", help="100,000 rows, 3 rounds")
    parser.add_argument("--warm", action="store_true", help="also time a second, warm run")
    parser.add_argument("--no-dlt", action="store_true", help="leave dlt out")
    parser.add_argument(
        "--dlt-dicts-rows", type=int, help="rows of the (slow) dlt dicts contender (0: skip it)"
    )
    parser.add_argument("--no-pages", action="store_true", help="leave the pages case out")
    parser.add_argument("--no-markers", action="store_true", help="leave the marker case out")
    parser.add_argument("--no-extra", action="store_true", help="leave the extra-key case out")
    parser.add_argument("--no-4x", action="store_true", help="leave the 4x-rows case out")
    parser.add_argument("--only", nargs="*", help="contenders to run (names as printed)")
    parser.add_argument(
        "--baseline",
        action="append",
        default=[],
        metavar="REV",
        help="also run (a) against the package at git revision REV (before/after figures)",
    )
    parser.add_argument("--workdir", type=Path, default=ROOT / "out" / "bench")
    parser.add_argument("--json", type=Path, help="write the medians here")
    args = parser.parse_args()
    rows = args.rows or (100_000 if args.quick else 1_000_000)
    rounds = args.rounds or (3 if args.quick else 5)
    workdir: Path = args.workdir.resolve()
    runs_dir = workdir / "runs"
    shutil.rmtree(runs_dir, ignore_errors=True)
    runs_dir.mkdir(parents=True)

    started = time.perf_counter()
    clean = ndjson_file(workdir / "data", rows)
    marked = ndjson_file(workdir / "data", rows, marker_every=1_000)
    extra = None if args.no_extra else ndjson_file(workdir / "data", rows, extra=True)
    dicts_rows = rows if args.dlt_dicts_rows is None else min(args.dlt_dicts_rows, rows)
    dicts = ndjson_file(workdir / "data", dicts_rows) if dicts_rows not in (0, rows) else clean
    print(
        f"{rows:,} rows, {clean.stat().st_size / 1e6:,.0f} MB of NDJSON "
        f"(made or found in {time.perf_counter() - started:.0f} s); {rounds} rounds"
    )
    pages = {} if args.no_pages else {"clean": (*page_file(clean, PAGE_SIZE), PAGE_SIZE)}
    cohorts = {
        "clean": (clean, 1, rows),
        "dicts": (dicts, 1, dicts_rows),
        "markers": (marked, 1, rows),
        **({"extra": (extra, 1, rows)} if extra else {}),
        "clean4x": (clean, 4, 4 * rows),
    }
    script = str(HERE / "export_contenders.py")
    me = [sys.executable, script]
    dlt = None if args.no_dlt else dlt_python(workdir)

    def out(name: str) -> str:
        return str(runs_dir / name)

    results: dict[str, list[dict[str, float]]] = {}
    with serving(cohorts, pages) as base_url:
        contenders = {
            "(a) provider": [*me, "provider", base_url, "clean", out("a.parquet")],
            "(a) pages": [*me, "provider-pages", base_url, "clean", out("pages")],
            "(a) Iceberg": [*me, "provider-iceberg", base_url, "clean", out("iceberg")],
            "(a) Iceberg, models": [*me, "provider-iceberg", base_url, "clean", out("icem")],
            "(b) duckdb": [*me, "duckdb", str(clean), out("b.parquet")],
            "(d) reference": [*me, "reference", base_url, "clean", out("d.parquet")],
        }
        if dlt is not None:
            run_dlt = [str(dlt), script]
            contenders["dlt arrow"] = [*run_dlt, "dlt-arrow", base_url, "clean", out("da")]
            if dicts_rows:
                contenders["dlt dicts"] = [*run_dlt, "dlt-dicts", base_url, "dicts", out("dd")]
            else:
                print("dlt dicts skipped (--dlt-dicts-rows 0)")
        if not args.no_markers:
            contenders["(a) markers 1/1000"] = [*me, "provider", base_url, "markers", out("m")]
        if not args.no_extra:
            contenders["(a) extra key"] = [*me, "provider", base_url, "extra", out("x.parquet")]
        if not args.no_4x:
            contenders["(a) 4x rows"] = [*me, "provider", base_url, "clean4x", out("4x.parquet")]
        if args.no_pages:
            del contenders["(a) pages"]
        packages: dict[str, Path] = {}
        for revision in args.baseline:
            folder = baseline_package(revision, workdir)
            name = f"(a) at {folder.name.removeprefix('baseline-')}"
            contenders[name] = [*me, "provider", base_url, "clean", out("base.parquet")]
            packages[name] = folder
        if args.only:
            kept = {*args.only, *packages, "(a) provider"}
            contenders = {k: v for k, v in contenders.items() if k in kept}
        names = list(contenders)
        # the slow dlt dicts run ends every round: what ran right after its 90 seconds took up
        # to 1.4x its CPU seconds on a shared machine, so that place rotates among the others
        # (the first of each round) instead of falling to one contender in every round
        last = [name for name in names if name == "dlt dicts"]
        rotated = [name for name in names if name not in last]
        for round_number in range(rounds):
            shift = round_number % len(rotated)
            for name in rotated[shift:] + rotated[:shift] + last:
                shutil.rmtree(runs_dir, ignore_errors=True)
                runs_dir.mkdir()
                figures = run_child(
                    contenders[name],
                    workdir,
                    args.warm,
                    packages.get(name),
                    models_ready=name.endswith(", models"),
                )
                results.setdefault(name, []).append(figures)
                print(
                    f"round {round_number + 1} {name:<20} {figures['seconds']:7.2f} s "
                    f"{figures['cpu']:7.2f} s CPU {figures['peak_rss_mib']:6.0f} MiB peak "
                    f"{int(figures['rows']):>11,} rows"
                    + (f" ({figures['before']:.0f} MiB before)" if figures.get("before") else "")
                    + (f" warm {figures['warm_cpu']:.2f} s CPU" if "warm_cpu" in figures else ""),
                    flush=True,
                )

    median = {name: _medians(results[name]) for name in names}
    print_summary(median)
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "rounds": rounds, CONTENDERS: median}))


if __name__ == "__main__":
    main()
