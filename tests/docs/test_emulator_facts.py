"""The emulator's sizes and dates, as the docs state them, are the emulator's own: pages draw
them from ``docs/_ext/emulator_facts.py`` through substitutions, and no page (the README
included, which has no substitutions) states another cohort range."""

from __future__ import annotations

import datetime as dt
import re
import sys
from pathlib import Path

from analytics_emulator.catalog import COHORTS, EVENT_LOG_DAYS

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "docs" / "_ext"))

import emulator_facts  # noqa: E402

_RANGE = re.compile(r"cohorts (?:from|of) (?P<low>[\d,]+) to (?P<high>[\d,]+) users", re.I)


def test_the_substitutions_are_the_catalogs_values() -> None:
    facts = emulator_facts.substitutions()
    assert facts["emulator_cohort_range"] == (
        f"{min(COHORTS.values()):,} to {max(COHORTS.values()):,}"
    )
    for code, size in COHORTS.items():
        assert f"`{code}` ({size:,})" in facts["emulator_cohorts"]
    first, last = emulator_facts.event_log_span()
    assert facts["emulator_event_log"] == f"{first} to {last}"
    span = dt.date.fromisoformat(last) - dt.date.fromisoformat(first)
    assert span.days + 1 == EVENT_LOG_DAYS


def test_no_page_states_another_cohort_range() -> None:
    truth = emulator_facts.cohort_range()
    pages = [REPO / "README.md", *(REPO / "docs").rglob("*.md")]
    stated = {
        (page.relative_to(REPO).as_posix(), f"{m['low']} to {m['high']}")
        for page in pages
        for m in _RANGE.finditer(page.read_text(encoding="utf-8").replace("\n", " "))
    }
    assert all(value == truth for _, value in stated), stated


def test_the_pages_use_the_substitutions() -> None:
    for page in ("quickstart.md", "emulator.md"):
        text = (REPO / "docs" / page).read_text(encoding="utf-8")
        assert "{{ emulator_cohort_range }}" in text, page
        assert "{{ emulator_event_log }}" in text, page
