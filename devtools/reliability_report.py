"""Write ``docs/reliability.md`` from the figures the reliability tests and load benchmarks left.

``make reliability`` runs ``tests/reliability`` with ``RELIABILITY_RESULTS_DIR`` set (the tests
then append JSON lines: ``matrix-*.jsonl``, ``bad_input-*``, ``hostile-*``, ``fuzz-*``,
``secrets-*``, ``load_small-*``), runs the two load benchmarks with ``--json`` into the same
folder, then this:

    python -m devtools.reliability_report out/reliability docs/reliability.md
"""

from __future__ import annotations

import argparse
import json
import os
import textwrap
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

RECOVERED: Final = "recovered"
FAILED: Final = "failed"
NOT_APPLICABLE: Final = "n/a"
RSS_TARGET_MIB: Final = 1024

FIXES: Final = (
    (
        "`CreateUtmOperator` lost the id of a link it had created when reading it back failed "
        "(the task failed with the read's error only, so a rerun made a duplicate link).",
        "It now fails with `UtmReadBackError` naming the new campaign id and saying not to create "
        "it again.",
    ),
    (
        "`CohortExportToParquetOperator` with an unknown `timezone` or `compression` failed only "
        "after three requests, with a bare Arrow error.",
        "Both are checked before the first request and refused naming the field.",
    ),
    (
        "`FunnelReportOperator`/`EventReportOperator` with an unknown `compression` ran the "
        "analysis and then failed with a bare Arrow error; a negative `window_days` was silently "
        "taken as one window.",
        "Both are checked before the first request and refused naming the field.",
    ),
    (
        "An analysis request with an empty (or blank) unknown key was refused with an error "
        "naming the field `''` invisibly (`: is not a known key`).",
        "An empty or odd key is shown quoted.",
    ),
    (
        "The emulator could not end an export cleanly but early (only cut the connection), so "
        "a proxy's silent truncation was untested; nor could it stall a stream mid-body.",
        "New faults `end_after_rows` (the export job's row count check catches it: retried, "
        "then `ExportIncompleteError` saying rows expected vs received) and `stall_after_rows` "
        "(the read timeout fires mid-stream; the job starts again).",
    ),
    (
        "A server error message was cut to 500 characters before secrets were masked: a token "
        "echoed across the cut leaked all but its last character.",
        "Server text is masked first, then cut (errors, the trigger's events and logs).",
    ),
    (
        "A token beyond Latin-1 was accepted, then every call raised `UnicodeEncodeError` "
        "carrying it; the appKey showed in clear in Airflow's connection views.",
        "Token, appKey and xtoken must be printable Latin-1 (refused without echo); the appKey "
        "is stored as extra `app_api_key`, a name Airflow masks (checked on a real api-server).",
    ),
    (
        "`cohort_code='../../../x'` and a rendered destination with `../` wrote outside the "
        "prefix; `limit=True` or `1.9` exported one user; 26 hostile values reached the server.",
        "Rendered values are checked, never coerced; partition values stay one path level; "
        "every string sent is bounded and free of control characters.",
    ),
    (
        "A 512-byte YAML alias bomb cost 60 s and 3 GB, a duplicate key dropped a block.",
        "The loader counts what aliases expand to and stops early; a key given twice is refused "
        "naming both lines; messages use a bounded repr.",
    ),
    (
        "A full disk gave a bare `OSError`; `reportUpdateTime` with milliseconds failed a "
        "report; slashed series labels never counted for the sensor.",
        "`AnalyticsStorageError` names the destination and cohort; every documented date-time "
        "form is read, an unreadable metadata field is logged; the sensor uses the frames' parser.",
    ),
)


def paragraph(text: str) -> list[str]:
    """A paragraph of prose, wrapped for reading the Markdown as text, and a blank line."""
    return [*textwrap.wrap(text, 96, break_long_words=False, break_on_hyphens=False), ""]


def read_lines(folder: Path, kind: str) -> list[dict[str, Any]]:
    """Every JSON line of ``<kind>-*.jsonl`` in ``folder``."""
    entries = []
    for path in sorted(folder.glob(f"{kind}-*.jsonl")):
        with path.open(encoding="utf-8") as lines:
            entries += [json.loads(line) for line in lines if line.strip()]
    return entries


def read_json(folder: Path, name: str) -> dict[str, Any] | None:
    path = folder / name
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    """A Markdown table; ``|`` in cells is escaped."""

    def cell(value: Any) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


def short_error(name: str | None) -> str:
    return (name or "").removeprefix("Analytics")


def unique_cases(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per (row, fault): not-applicable cells are recorded by every test worker."""
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for entry in entries:
        seen[(entry["row"], entry["fault"])] = entry
    return sorted(seen.values(), key=lambda e: (e["order"], e["fault_order"]))


def matrix_counts(cases: list[dict[str, Any]]) -> dict[str, int]:
    run = [c for c in cases if c["outcome"] != NOT_APPLICABLE]
    damaged = [c for c in run if c["problems"]]
    return {
        "tried": len(run),
        "recovered": sum(1 for c in run if c["outcome"] == RECOVERED and not c["problems"]),
        "failed cleanly": sum(1 for c in run if c["outcome"] == FAILED and not c["problems"]),
        "lost or corrupted": len(damaged),
        "not applicable": len(cases) - len(run),
    }


def matrix_grid(cases: list[dict[str, Any]], *, stream: bool) -> list[str]:
    """Rows (operations, operators) by faults; a cell is ✓, an error name, or –."""
    chosen = [c for c in cases if c["stream_fault"] == stream]
    faults = sorted({(c["fault_order"], c["fault"]) for c in chosen})
    rows: dict[str, dict[str, str]] = {}
    for case in chosen:
        cells = rows.setdefault(case["row"], {"layer": case["layer"]})
        if case["problems"]:
            cells[case["fault"]] = "**DAMAGED**"
        elif case["outcome"] == RECOVERED:
            cells[case["fault"]] = "✓"
        elif case["outcome"] == FAILED:
            cells[case["fault"]] = short_error(case["error_type"])
        else:
            cells[case["fault"]] = "–"
    header = ["subject [faulted operation]", "layer", *(f"`{key}`" for _, key in faults)]
    return table(
        header,
        (
            [row, cells["layer"], *(cells.get(key, "") for _, key in faults)]
            for row, cells in rows.items()
        ),
    )


def matrix_section(cases: list[dict[str, Any]]) -> list[str]:
    counts = matrix_counts(cases)
    legend: dict[str, str] = {}
    for case in cases:
        legend.setdefault(case["fault"], case["fault_description"])
    order = {c["fault"]: c["fault_order"] for c in cases}
    messages: dict[str, str] = {}
    for case in cases:
        if case["outcome"] == FAILED and case["error_type"] not in messages:
            messages[case["error_type"]] = case["message"]
    skipped = [c for c in cases if c["outcome"] == NOT_APPLICABLE]
    reasons = Counter((c["message"] or "") for c in skipped)
    lines = [
        "## Fault matrix",
        "",
        "Each case runs one subject (an operation through the hook, an operator, the sensor or",
        "the trigger) against the emulator over real HTTP with one fault armed for the",
        "operation named in brackets, and compares the outcome with a fault-free run of the",
        "same subject:",
        "",
        "- **recovered** (✓): same result (XCom), same platform state (ad tracking links,",
        "  accounts, tracking plan) and same output (Parquet rows and values) as without the",
        "  fault;",
        "- **failed cleanly** (an error name): the error type the rules promise, with a message",
        "  that names the operation and says what to check (see the samples below).",
        "",
        "Whatever the outcome, every case also checks that no temporary or partial object is",
        "left at the destination, that a failed run left no object at all, that no user id,",
        "link or record is duplicated, and, for subjects that create nothing, that a rerun",
        "after the failure gives exactly the fault-free result. A case breaking any of these",
        "would be counted as *lost or corrupted* (and fails the suite).",
        "",
        *table(
            ["faults tried", "recovered", "failed cleanly", "lost or corrupted", "not applicable"],
            [
                [
                    counts["tried"],
                    counts["recovered"],
                    counts["failed cleanly"],
                    counts["lost or corrupted"],
                    counts["not applicable"],
                ]
            ],
        ),
        "",
        "Connection settings during the matrix: 3 attempts, backoff base 0.01 s, connect/read/",
        "export read timeouts 10 s, but read timeouts of 2 s in the `stall` and `stall-mid`",
        "cases (the emulator holds a stalled request until the client gives up); the export",
        "operator runs with `attempts=2`. A `*` marks a persistent fault (every request of the",
        "case), the others hit one request.",
        "",
        "### Faults",
        "",
        *table(
            ["fault", "what the emulator does"],
            ([f"`{key}`", text] for key, text in sorted(legend.items(), key=lambda i: order[i[0]])),
        ),
        "",
        "### Every operation and operator",
        "",
        *matrix_grid(cases, stream=False),
        "",
        "### The export stream",
        "",
        *matrix_grid(cases, stream=True),
        "",
        "– : not applicable:",
        "",
        *(f"- {reason} ({count} cells)" for reason, count in reasons.items()),
        "",
        "### What the failures say",
        "",
        "One message per error type, as the task log shows it:",
        "",
        *table(
            ["error", "message"],
            ([short_error(name), f"`{text}`"] for name, text in sorted(messages.items())),
        ),
        "",
    ]
    return lines


def bad_input_section(entries: list[dict[str, Any]]) -> list[str]:
    cases = {(e["target"], e["label"]): e for e in entries if not e.get("hostile")}
    refused_early = [e for e in cases.values() if e["requests"] == 0]
    targets = Counter(target for target, _ in cases)
    return [
        "## Bad input",
        "",
        *paragraph(
            f"{len(cases)} distinct invalid inputs across the hook, the connection, every "
            f"operator and the sensor; {len(refused_early)} of them were refused before any "
            "request reached the emulator (checked twice: no request passed through `requests`' "
            "transport adapter, and the emulator's request counters did not move), each with an "
            "error that names the field. The hostile ones are listed in the next section."
        ),
        *table(["given to", "invalid inputs"], sorted(targets.items())),
        "",
        "<details><summary>Every input and the error it got</summary>",
        "",
        *table(
            ["given to", "what is wrong", "field named", "error"],
            (
                [e["target"], e["label"], f"`{e['field']}`", f"{e['error_type']}: {e['message']}"]
                for e in sorted(cases.values(), key=lambda e: (e["target"], e["label"]))
            ),
        ),
        "",
        "</details>",
        "",
    ]


def hostile_section(bad: list[dict[str, Any]], handled: list[dict[str, Any]]) -> list[str]:
    """Inputs built to break out: the refusals from the catalogue, then the other outcomes."""
    refused = {(e["target"], e["label"]): e for e in bad if e.get("hostile")}
    early = sum(1 for e in refused.values() if e["requests"] == 0)
    outcomes = {e["case"]: e["outcome"] for e in handled}
    return [
        "## Hostile input",
        "",
        *paragraph(
            f"Values crafted to escape a path, split a header or a query, be coerced into "
            f"something else or exhaust a parser. {early} of the {len(refused)} below were "
            "refused before any request, each by an error naming the field (`file` for a plan "
            "file's decoding), and nothing was written. A destination may not hold `.` or `..` "
            "segments nor point into a system directory (`/etc`, `/usr`, `/proc`...): the "
            "untemplated part of a destination is the DAG author's to choose, the rendered rest "
            "stays inside it."
        ),
        *table(
            ["given to", "hostile input", "field named", "error"],
            (
                [e["target"], e["label"], f"`{e['field']}`", f"{e['error_type']}: {e['message']}"]
                for e in sorted(refused.values(), key=lambda e: (e["target"], e["label"]))
            ),
        ),
        "",
        *paragraph(
            "Hostile input that is not simply refused, and what happens instead. The appKey's "
            "masking in Airflow's own connection views is checked against a real "
            "`airflow api-server` (`tests/airflow/test_connection_views.py`), outside this run."
        ),
        *table(["case", "outcome"], sorted(outcomes.items())),
        "",
    ]


def fuzz_section(entries: list[dict[str, Any]]) -> list[str]:
    targets = {e["target"]: e for e in entries}
    server = [e for t, e in targets.items() if t.startswith("emulator")]
    client = [e for t, e in targets.items() if not t.startswith("emulator")]
    requests = sum(e["examples"] for e in server)
    server_errors = sum(
        count
        for e in server
        for status, count in e["statuses"].items()
        if int(status) >= 500 and int(status) != 501
    )

    def outcomes(entry: dict[str, Any]) -> str:
        return ", ".join(f"{key}: {value}" for key, value in sorted(entry["statuses"].items()))

    return [
        "## Fuzzing",
        "",
        *paragraph(
            "Hypothesis builds requests that are wrong in one place (a value replaced by an "
            'awkward one at any depth, such as `1e400`, `2**63`, `"2024-02-30"`, `[]`, a key '
            "removed or an unknown one added), raw bytes, odd content types, odd query strings "
            f"and path segments. {requests} such requests went to the emulator over HTTP: "
            f"{server_errors} got a server error (501 is the platform's documented *not "
            "completed*, e.g. a duplicate account). The client's validators got arbitrary values "
            "and near-valid bodies: each passed or raised `AnalyticsValidationError` naming a "
            "field, never another exception; and every analysis body the client passed was "
            "answered by the emulator, or refused only for what the client cannot know (a "
            "cohort, event or property that does not exist)."
        ),
        *table(
            ["target", "examples", "outcomes (HTTP status: count)"],
            ([e["target"], e["examples"], outcomes(e)] for e in server),
        ),
        "",
        *table(
            ["target", "examples", "outcomes"],
            ([e["target"], e["examples"], outcomes(e)] for e in client),
        ),
        "",
    ]


def secrets_section(entries: list[dict[str, Any]]) -> list[str]:
    runs = {(e["subject"], e["scenario"]): e for e in entries}
    places = sorted({place for e in runs.values() for place in e["places"]})
    subjects = sorted({subject for subject, _ in runs})
    scenarios = sorted({scenario for _, scenario in runs})
    return [
        "## Secrets",
        "",
        *paragraph(
            f"{len(runs)} runs ({len(subjects)} subjects: every operator, the sensor in poke "
            "mode, and the sensor deferred with its trigger; scenarios: "
            + ", ".join(scenarios)
            + ") with distinctive token, appKey, xtoken (and account password) values. "
            "Airflow's secret masker was kept unaware of them (the provider's calls to "
            "`mask_secret` were recorded instead, and checked), so a leak would show as it is. "
            "Searched: " + ", ".join(places) + "."
        ),
        *table(
            ["runs", "characters searched", "log records", "files read", "occurrences"],
            [
                [
                    len(runs),
                    f"{sum(e['characters'] for e in runs.values()):,}",
                    sum(e["log_records"] for e in runs.values()),
                    sum(e["files"] for e in runs.values()),
                    sum(e["occurrences"] for e in runs.values()),
                ]
            ],
        ),
        "",
        *paragraph(
            "Transport: `http://` to a host that is not loopback is refused unless the "
            "connection sets `allow_insecure_http`; TLS is verified by default (against a local "
            "HTTPS server with a self-signed certificate the client fails with *TLS failed* and "
            "the server never receives a request; with the certificate as `verify` the call "
            "succeeds); redirects are not followed, so the credentials never reach another host."
        ),
    ]


def load_section(
    exports: dict[str, Any] | None,
    exports_hook: dict[str, Any] | None,
    calls: dict[str, Any] | None,
    small: list[dict[str, Any]],
) -> list[str]:
    lines = ["## Load", ""]
    if exports is None:
        lines += ["The export load benchmark was not run for this report.", ""]
    else:
        lines += [
            *paragraph(
                f"`benchmarks/load_exports.py`: {exports['exports']} exports of a "
                f"{exports['rows_per_export']:,}-user cohort at once, one per worker of a process "
                f"pool pinned to {exports['machine']['cpus_used']} cores, the emulator serving "
                "them from its own process. Each worker runs the export job the operator runs "
                "(Parquet, zstd, default settings) with a plain client; every file is read back."
            ),
            *table(
                ["export", "rows", "rows in file", "distinct user ids", "seconds", "peak RSS MiB"],
                (
                    [
                        r["export"],
                        f"{r['rows']:,}",
                        f"{r['file_rows']:,}",
                        f"{r['distinct_ids']:,}",
                        r["seconds"],
                        r["peak_rss_mib"],
                    ]
                    for r in exports["results"]
                ),
            ),
            "",
            *table(
                ["figure", "measured", "target"],
                [
                    ["wall time", f"{exports['wall_seconds']} s", ""],
                    ["rows per second, together", f"{exports['rows_per_second']:,}", ""],
                    [
                        "combined peak RSS (sum of the workers' peaks)",
                        f"{exports['sum_of_peak_rss_mib']} MiB",
                        f"< {RSS_TARGET_MIB} MiB",
                    ],
                    [
                        "highest sampled total RSS / PSS",
                        f"{exports['sampled_combined_rss_mib']} / "
                        f"{exports['sampled_combined_pss_mib']} MiB",
                        "",
                    ],
                    ["rows lost", exports["rows_lost"], "0"],
                ],
            ),
            "",
        ]
    if exports_hook is not None:
        lines += paragraph(
            "The same through the hook (`--via hook`: each worker also imports Airflow to read "
            f"the connection): combined peak RSS {exports_hook['sum_of_peak_rss_mib']} MiB "
            f"(PSS {exports_hook['sampled_combined_pss_mib']} MiB), {exports_hook['rows_lost']} "
            f"rows lost, {exports_hook['wall_seconds']} s. The difference, about "
            f"{_airflow_overhead(exports, exports_hook)} MiB per process, is Airflow's own "
            "import footprint, which every Airflow task process carries whatever it runs: over "
            "the 1 GiB target in RSS, under it in PSS, where the processes share the library "
            "pages they map."
        )
    if calls is None:
        lines += ["The small-calls benchmark was not run for this report.", ""]
    else:
        latency = calls["latency_ms"]
        lines += [
            *paragraph(
                f"`benchmarks/small_calls.py`: {calls['calls']} small calls (plan listings, a "
                f"cohort page, an event analysis, a plan update) from {calls['threads']} threads "
                "through one client."
            ),
            *table(
                ["figure", "measured", "target"],
                [
                    ["errors", calls["errors"], "0"],
                    ["requests the emulator saw", calls["requests_seen"], f"{calls['calls']}"],
                    [
                        "TCP connections accepted by the emulator",
                        calls["connections_opened"],
                        f"<= {calls['threads']} (reused)",
                    ],
                    ["calls per second", calls["calls_per_second"], ""],
                    [
                        "latency p50 / p95 / max",
                        f"{latency['p50']} / {latency['p95']} / {latency['max']} ms",
                        "",
                    ],
                ],
            ),
            "",
        ]
    if small:
        lines += [
            "Scaled down, both run in `make test` (`tests/reliability/test_load_small.py`); this",
            "run:",
            "",
            *(f"- {_small_figures(entry)}" for entry in small),
            "",
        ]
    return lines


def _airflow_overhead(exports: dict[str, Any] | None, hook: dict[str, Any]) -> str:
    if exports is None:
        return "?"
    difference = hook["sum_of_peak_rss_mib"] - exports["sum_of_peak_rss_mib"]
    return f"{difference / max(hook['exports'], 1):.0f}"


def _small_figures(entry: dict[str, Any]) -> str:
    if entry["benchmark"] == "load_exports":
        return (
            f"{entry['exports']} exports x {entry['rows_per_export']:,} rows: "
            f"{entry['rows_lost']} rows lost, combined peak RSS {entry['sum_of_peak_rss_mib']} MiB"
        )
    return (
        f"{entry['calls']} calls over {entry['threads']} threads: {entry['errors']} errors, "
        f"{entry['connections_opened']} connections"
    )


def render(folder: Path) -> str:
    """The whole page from the figures in ``folder``."""
    cases = unique_cases(read_lines(folder, "matrix"))
    bad = read_lines(folder, "bad_input")
    hostile = read_lines(folder, "hostile")
    fuzz = read_lines(folder, "fuzz")
    secrets = read_lines(folder, "secrets")
    small = read_lines(folder, "load_small")
    exports = read_json(folder, "load_exports.json")
    exports_hook = read_json(folder, "load_exports_hook.json")
    calls = read_json(folder, "small_calls.json")
    counts = matrix_counts(cases)
    cores = exports["machine"]["cpus_used"] if exports else os.cpu_count()
    bad_cases = {(e["target"], e["label"]): e for e in bad}
    secret_runs = {(e["subject"], e["scenario"]): e for e in secrets}
    summary = [
        ["fault cases tried", counts["tried"]],
        ["recovered (same result, state and output)", counts["recovered"]],
        ["failed cleanly (expected error type, clear message)", counts["failed cleanly"]],
        ["lost or corrupted data", counts["lost or corrupted"]],
        [
            "invalid inputs refused before any request, naming the field",
            f"{sum(1 for e in bad_cases.values() if e['requests'] == 0)} of {len(bad_cases)}",
        ],
        [
            "fuzzed inputs (emulator requests + validator values)",
            sum({e["target"]: e["examples"] for e in fuzz}.values()),
        ],
        [
            "secret occurrences in logs, XComs, errors, fields, reprs, files",
            f"{sum(e['occurrences'] for e in secret_runs.values())} in {len(secret_runs)} runs",
        ],
    ]
    if exports:
        summary.append(
            [
                f"{exports['exports']} x {exports['rows_per_export']:,}-row exports at once",
                f"{exports['rows_lost']} rows lost, combined peak RSS "
                f"{exports['sum_of_peak_rss_mib']} MiB (target < {RSS_TARGET_MIB})",
            ]
        )
    if calls:
        summary.append(
            [
                f"{calls['calls']} small calls over {calls['threads']} threads",
                f"{calls['errors']} errors, {calls['connections_opened']} TCP connections",
            ]
        )
    lines = [
        "# Reliability and security",
        "",
        "What the provider does when the platform or the network misbehaves, or a DAG passes",
        "bad parameters, measured rather than promised. Every figure on this page comes from",
        "the tests in `tests/reliability/` and the benchmarks `benchmarks/load_exports.py` and",
        "`benchmarks/small_calls.py`, run against the bundled emulator on 127.0.0.1 on a",
        f"machine with {cores} CPU cores. The page is generated; see",
        "[Regenerating](#regenerating).",
        "",
        *table(["check", "figure"], summary),
        "",
        *matrix_section(cases),
        *bad_input_section(bad),
        *hostile_section(bad, hostile),
        *fuzz_section(fuzz),
        *secrets_section(secrets),
        *load_section(exports, exports_hook, calls, small),
        "## Found and fixed",
        "",
        *table(["what the tests found", "what changed"], FIXES),
        "",
        "## Regenerating",
        "",
        "```bash",
        "make reliability   # the tests in tests/reliability, both load benchmarks, this page",
        "```",
        "",
        "The matrix, bad-input, fuzzing, secrets and scaled-down load tests also run in",
        "`make test`; only this page and the full-size benchmarks need `make reliability`",
        "(a few minutes on two cores).",
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write docs/reliability.md from test figures.")
    parser.add_argument("results", type=Path, help="folder the tests and benchmarks wrote to")
    parser.add_argument("output", type=Path, help="the Markdown page to write")
    args = parser.parse_args(argv)
    if not any(args.results.glob("matrix-*.jsonl")):
        parser.error(f"no matrix results in {args.results}; run the tests with the folder set")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(render(args.results), encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
