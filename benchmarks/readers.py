"""Readers of the export's NDJSON, compared on the same data: CPU seconds, and the decoding rule.

The export decodes blocks of whole lines with Arrow's JSON parser behind the decoding rule
(:class:`~airflow_provider_analytics.export.decoder.BlockDecoder`). This script times, each in a
fresh child process on the benchmark's data (``export_data.py``) held in memory as the export's
1 MiB blocks, so that no socket or file system is in the figures:

  rule, Arrow 1 thread    the decoder, parse then finish and complete, block by block
  rule, Arrow 2 threads   the same with two blocks parsed at once (``parse_threads=2``, the
                          package's default): Arrow's parser on two threads over independent
                          blocks, each block's result finished in stream order
  Arrow parse only        ``pyarrow.json.read_json`` of each block with the export's read schema,
                          one thread: the floor under the first two
  DuckDB, pipe            DuckDB's ``read_json`` (newline-delimited, the columns given) fed the
                          blocks through a pipe by a thread, as the response would feed it, to
                          Arrow record batches
  arro3-io                the Rust Arrow JSON reader (``arro3.io.read_json``) on the blocks as one
                          file-like object, with the same schema, to Arrow record batches

The last three parse only: whatever the rule needs beyond a reader's own refusals would come on
top. ``--probe`` feeds every reader the lines the rule must refuse or keep exact (NaN, a repeated
key, invalid UTF-8, an integer beyond int64, a marker in a typed column, an integer beyond 2**53,
two objects on one line) and prints what each reader does with them.

Rounds alternate the readers; the medians are printed. The machine may be shared: compare the
ratios of one run.

Usage: python benchmarks/readers.py [--rows 200000] [--rounds 3] [--probe] [--workdir out/bench]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from export_data import PLAN, TIMEZONE, ndjson_file  # noqa: E402

READERS = {
    "rule, Arrow 1 thread": "rule-1",
    "rule, Arrow 2 threads": "rule-2",
    "Arrow parse only": "arrow",
    "DuckDB, pipe": "duckdb",
    "arro3-io": "arro3",
}
BLOCK = 1 << 20


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _schema() -> Any:
    """The export's columns for the benchmark's plan (as the export decides them)."""
    from airflow_provider_analytics.export.schema import export_schema

    return export_schema([item["id"] for item in PLAN], PLAN, timezone=TIMEZONE)


def _blocks(path: Path) -> list[bytes]:
    from airflow_provider_analytics.core.ndjson import iter_counted_blocks

    with path.open("rb") as source:
        return [b for b, _ in iter_counted_blocks(iter(lambda: source.read(BLOCK), b""), BLOCK)]


def _rule(blocks: list[bytes], threads: int) -> int:
    from airflow_provider_analytics.core.pipeline import map_ahead
    from airflow_provider_analytics.export.decoder import BlockDecoder

    decoder = BlockDecoder(_schema())
    rows = 0
    for block, parsed in map_ahead(decoder.parse, blocks, threads):
        first = decoder.rows
        rows += decoder.complete(decoder.finish(block, parsed), first).num_rows
    return rows


def _read_schema() -> Any:
    """The schema Arrow reads a block with once the number columns are known (decimals as
    double, datetimes as texts): the decoder's read schema after its first block."""
    from airflow_provider_analytics.export.decoder import BlockDecoder

    decoder = BlockDecoder(_schema())
    with ndjson_file(Path(os.environ["READERS_DATA"]), 1_000).open("rb") as sample:
        decoder.decode(sample.read())
    return decoder.read_schema


def _arrow(blocks: list[bytes], schema: Any) -> int:
    import pyarrow as pa
    import pyarrow.json as pa_json

    options = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="infer")
    rows = 0
    for block in blocks:
        read = pa_json.ReadOptions(use_threads=False, block_size=len(block))
        rows += pa_json.read_json(pa.BufferReader(block), read, options).num_rows
    return rows


def _duckdb_columns(schema: Any) -> str:
    import pyarrow as pa

    def kind(arrow_type: Any) -> str:
        if pa.types.is_list(arrow_type):
            return kind(arrow_type.value_type) + "[]"
        if pa.types.is_boolean(arrow_type):
            return "BOOLEAN"
        if pa.types.is_integer(arrow_type):
            return "BIGINT"
        if pa.types.is_floating(arrow_type):
            return "DOUBLE"
        return "VARCHAR"

    return "{" + ", ".join(f"'{f.name}': '{kind(f.type)}'" for f in schema) + "}"


def _duckdb(blocks: list[bytes], schema: Any) -> int:
    import duckdb

    read, write = os.pipe()

    def feed() -> None:
        with os.fdopen(write, "wb") as sink:
            for block in blocks:
                sink.write(block)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    con = duckdb.connect()
    con.execute("SET threads TO 1")
    relation = con.sql(
        f"SELECT * FROM read_json('/dev/fd/{read}', format='newline_delimited', "
        f"columns={_duckdb_columns(schema)})"
    )
    rows = 0
    for batch in relation.fetch_record_batch(65_536):
        rows += batch.num_rows
    feeder.join()
    os.close(read)
    return rows


def _arro3(blocks: list[bytes], schema: Any) -> int:
    from arro3.io import read_json

    rows = 0
    for batch in read_json(io.BytesIO(b"".join(blocks)), schema, batch_size=65_536):
        rows += batch.num_rows
    return rows


def child(name: str, data: Path) -> None:
    """One reader on ``data``; prints its figures as one line of JSON."""
    blocks = _blocks(data)
    schema = _read_schema() if name in ("arrow", "duckdb", "arro3") else None
    wall, cpu = time.perf_counter(), _cpu()
    if name.startswith("rule-"):
        rows = _rule(blocks, int(name[-1]))
    else:
        rows = {"arrow": _arrow, "duckdb": _duckdb, "arro3": _arro3}[name](blocks, schema)
    figures = {"seconds": time.perf_counter() - wall, "cpu": _cpu() - cpu, "rows": rows}
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(figures | {"peak_rss_mib": peak}))


PROBES = {
    "NaN in a number column": b'{"n":NaN,"t":"a"}\n',
    "a repeated key": b'{"n":1,"n":2,"t":"a"}\n',
    "invalid UTF-8 in a text": b'{"n":1,"t":"\xff\xfe"}\n',
    "an integer beyond int64": b'{"n":9223372036854775808,"t":"a"}\n',
    "the marker in a number column": '{"n":"(已脱敏)","t":"a"}\n'.encode(),
    "2**53 + 1 in a double column": b'{"d":9007199254740993,"n":1,"t":"a"}\n',
    "two objects on one line": b'{"n":1,"t":"a"}{"n":2,"t":"b"}\n',
}


def probe() -> None:
    """What each reader does with the lines the rule refuses or keeps exact."""
    import duckdb
    import pyarrow as pa
    import pyarrow.json as pa_json
    from arro3.io import read_json

    schema = pa.schema([("n", pa.int64()), ("t", pa.string()), ("d", pa.float64())])
    columns = "{'n': 'BIGINT', 't': 'VARCHAR', 'd': 'DOUBLE'}"

    def arrow(line: bytes) -> Any:
        options = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error")
        table = pa_json.read_json(pa.BufferReader(line), parse_options=options)
        table.column("t").validate(full=True)
        return table.to_pylist()

    def arro3(line: bytes) -> Any:
        reader = read_json(io.BytesIO(line), schema)
        return pa.table(reader.read_all()).to_pylist()

    def duck(line: bytes) -> Any:
        path = Path(os.environ["READERS_DATA"]) / "probe.ndjson"
        path.write_bytes(line)
        con = duckdb.connect()
        return con.sql(
            f"SELECT * FROM read_json('{path}', format='newline_delimited', columns={columns})"
        ).fetchall()

    for what, line in PROBES.items():
        print(f"\n{what}: {line!r}")
        for name, read in (("Arrow", arrow), ("DuckDB", duck), ("arro3-io", arro3)):
            try:
                shown = f"read {read(line)!r}"
            except Exception as error:  # what the reader says is the result shown
                shown = f"refused ({type(error).__name__}: {str(error).splitlines()[0][:90]})"
            print(f"  {name:<9} {shown}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--probe", action="store_true", help="only the refusal probes")
    parser.add_argument("--workdir", type=Path, default=ROOT / "out" / "bench")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    data_dir = (args.workdir / "data").resolve()
    os.environ["READERS_DATA"] = str(data_dir)
    data = ndjson_file(data_dir, args.rows)
    ndjson_file(data_dir, 1_000)
    if args.child:
        child(args.child, data)
        return
    if args.probe:
        probe()
        return
    print(f"{args.rows:,} rows, {data.stat().st_size / 1e6:,.0f} MB; {args.rounds} rounds")
    results: dict[str, list[dict[str, float]]] = {}
    names = list(READERS)
    for round_number in range(args.rounds):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            command = [sys.executable, __file__, "--rows", str(args.rows), "--child", READERS[name]]
            command += ["--workdir", str(args.workdir)]
            done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
            if done.returncode != 0:
                print(f"{name} failed:\n{done.stderr[-2000:]}")
                continue
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            results.setdefault(name, []).append(figures)
            print(
                f"round {round_number + 1} {name:<24}{figures['seconds']:7.2f} s "
                f"{figures['cpu']:7.2f} s CPU {figures['peak_rss_mib']:6.0f} MiB",
                flush=True,
            )
    base = statistics.median(r["cpu"] for r in results["rule, Arrow 1 thread"])
    print(f"\n{'reader':<24}{'rows':>10}{'wall s':>8}{'CPU s':>8}{'CPU/rule 1':>12}{'MiB':>7}")
    for name, runs in results.items():
        wall = statistics.median(r["seconds"] for r in runs)
        cpu = statistics.median(r["cpu"] for r in runs)
        peak = statistics.median(r["peak_rss_mib"] for r in runs)
        rows = int(runs[0]["rows"])
        print(f"{name:<24}{rows:>10,}{wall:>8.2f}{cpu:>8.2f}{cpu / base:>12.2f}{peak:>7.0f}")


if __name__ == "__main__":
    main()
