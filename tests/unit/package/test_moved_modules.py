"""Every module the changelog says moved in 0.2.0 with an alias still imports under its old
name until 0.3.0, warns naming the new home, and hands over the same objects; the table is
read from the changelog, so a promised alias cannot go missing (four did: ``client.errors``,
``client.rules``, ``client.redaction`` and ``client.ndjson`` had gone without one)."""

from __future__ import annotations

import importlib
import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = "airflow_provider_analytics"


def promised() -> list[tuple[str, str]]:
    """(old, new) module pairs of the 0.2.0 table "old module | new module"."""
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    release = text.split("\n## 0.2.0", 1)[1].split("\n## ", 1)[0]
    table = release.split("| old module | new module |", 1)[1].strip().splitlines()[1:]
    pairs = []
    for row in table:
        if not row.strip():
            continue
        if not row.lstrip().startswith("|"):
            break
        old_cell, new_cell = row.split("|")[1:3]
        olds = re.findall(r"`([\w.]+)`", old_cell)
        news = re.findall(r"`([\w.]+)`", new_cell)[: len(olds)]
        pairs += zip(olds, news, strict=True)
    return pairs


def test_the_table_is_read() -> None:
    assert ("client.errors", "core.errors") in promised()
    assert ("sinks.parquet", "output.parquet") in promised()


@pytest.mark.parametrize(("old", "new"), promised())
def test_an_old_module_name_warns_and_hands_over_the_new_modules_names(old: str, new: str) -> None:
    moved = importlib.import_module(f"{PACKAGE}.{new}")
    name = next(
        name
        for name, value in vars(moved).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == moved.__name__
    )
    alias = importlib.import_module(f"{PACKAGE}.{old}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        handed = getattr(alias, name)
    assert handed is getattr(moved, name)
    (warning,) = caught
    assert warning.category is DeprecationWarning
    assert f"{PACKAGE}.{new}" in str(warning.message) and "0.3.0" in str(warning.message)
