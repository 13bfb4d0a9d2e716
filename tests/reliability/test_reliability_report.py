"""``devtools/reliability_report.py``: the page written from recorded figures."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from devtools.reliability_report import main, matrix_counts, render, unique_cases

if TYPE_CHECKING:
    from pathlib import Path


def case(row: str, fault: str, outcome: str, **fields: Any) -> dict[str, Any]:
    return {
        "order": 0 if row == "list_events" else 1,
        "row": row,
        "subject": row,
        "layer": "hook operation",
        "target": row,
        "fault": fault,
        "fault_order": {"503": 0, "503*": 1, "cut": 2}[fault],
        "fault_description": f"fault {fault}",
        "stream_fault": fault == "cut",
        "expected": outcome,
        "outcome": outcome,
        "error_type": None,
        "message": None,
        "hits": 1,
        "problems": [],
        **fields,
    }


CASES = [
    case("list_events", "503", "recovered"),
    case(
        "list_events",
        "503*",
        "failed",
        error_type="AnalyticsServerError",
        message="list_events: server error after 3 attempt(s)",
    ),
    case("export_cohort_users", "cut", "n/a", message="stream faults need a stream"),
]


def write_lines(folder: Path, name: str, entries: list[dict[str, Any]]) -> None:
    (folder / name).write_text("".join(json.dumps(e) + "\n" for e in entries))


@pytest.fixture
def results(tmp_path: Path) -> Path:
    write_lines(tmp_path, "matrix-gw0.jsonl", CASES)
    write_lines(tmp_path, "matrix-gw1.jsonl", [CASES[2]])  # n/a cells come from every worker
    write_lines(
        tmp_path,
        "bad_input-gw0.jsonl",
        [
            {
                "target": "hook",
                "label": "limit 0",
                "field": "limit",
                "error_type": "AnalyticsValidationError",
                "message": "limit: must be a positive integer (got 0)",
                "requests": 0,
            },
            {
                "target": "hook",
                "label": "cohort code with /",
                "field": "cohort_code",
                "error_type": "AnalyticsValidationError",
                "message": "cohort_code: must not contain '/'",
                "requests": 0,
                "hostile": True,
            },
        ],
    )
    write_lines(
        tmp_path,
        "hostile-gw1.jsonl",
        [{"case": "a token echoed across the cut", "outcome": "masked: 0 fragments"}],
    )
    write_lines(
        tmp_path,
        "fuzz-gw0.jsonl",
        [{"target": "emulator list_events", "examples": 60, "statuses": {"200": 40, "400": 20}}],
    )
    write_lines(
        tmp_path,
        "secrets-gw0.jsonl",
        [
            {
                "subject": "DeleteUtmOperator",
                "scenario": "succeeds",
                "places": ["XComs", "log records"],
                "characters": 1200,
                "log_records": 3,
                "files": 0,
                "occurrences": 0,
            }
        ],
    )
    return tmp_path


def test_cases_are_counted_once_and_judged() -> None:
    cases = unique_cases([*CASES, CASES[2]])
    assert len(cases) == 3
    assert matrix_counts(cases) == {
        "tried": 2,
        "recovered": 1,
        "failed cleanly": 1,
        "lost or corrupted": 0,
        "not applicable": 1,
    }
    damaged = [case("list_events", "503", "recovered", problems=["temporary objects left"])]
    assert matrix_counts(damaged)["lost or corrupted"] == 1


def test_the_page_shows_the_matrix_and_the_figures(results: Path) -> None:
    page = render(results)
    assert "| 2 | 1 | 1 | 0 | 1 |" in page
    assert "| list_events | hook operation | ✓ | ServerError |" in page
    assert "| export_cohort_users | hook operation | – |" in page
    assert "`list_events: server error after 3 attempt(s)`" in page
    assert "- stream faults need a stream (1 cells)" in page
    assert "| hook | limit 0 | `limit` |" in page
    hostile = page[page.index("## Hostile input") :]
    assert "1 of the 1 below were refused before any request" in hostile
    assert "| hook | cohort code with / | `cohort_code` |" in hostile
    assert "| hook | limit 0 |" not in hostile
    assert "| a token echoed across the cut | masked: 0 fragments |" in hostile
    assert "| emulator list_events | 60 | 200: 40, 400: 20 |" in page
    assert "| 1 | 1,200 | 3 | 0 | 0 |" in page
    assert "The export load benchmark was not run for this report." in page


def test_main_writes_the_page_and_refuses_an_empty_folder(results: Path, tmp_path: Path) -> None:
    output = tmp_path / "docs" / "reliability.md"
    assert main([str(results), str(output)]) == 0
    assert output.read_text(encoding="utf-8").startswith("# Reliability and security")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SystemExit):
        main([str(empty), str(output)])
