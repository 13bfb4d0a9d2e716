"""Where the reliability tests leave their figures for ``devtools/reliability_report.py``.

Nothing is written unless ``RELIABILITY_RESULTS_DIR`` is set (``make reliability`` sets it),
so an ordinary ``make test`` leaves no files behind. Each pytest-xdist worker appends JSON
lines to its own file per kind (``matrix-gw0.jsonl``), so parallel workers never interleave.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Mapping

RESULTS_DIR_ENV: Final = "RELIABILITY_RESULTS_DIR"


def results_dir() -> Path | None:
    """The folder results go to, or None when results are not being collected."""
    value = os.environ.get(RESULTS_DIR_ENV)
    return Path(value) if value else None


def record(kind: str, entry: Mapping[str, Any]) -> None:
    """Append one result of ``kind`` (``matrix``, ``bad_input``, ...) as a JSON line.

    :param kind: the result family; the report reads ``<kind>-*.jsonl``.
    :param entry: JSON-able fields of the result.
    """
    directory = results_dir()
    if directory is None:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / f"{kind}-{worker}.jsonl").open("a", encoding="utf-8") as sink:
        sink.write(json.dumps(dict(entry), sort_keys=True, default=str) + "\n")
