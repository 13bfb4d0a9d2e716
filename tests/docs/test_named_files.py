"""Every source file the documentation names in backticks exists where it says, and is not one
of the package's deprecated aliases: a page cannot send a reader to a file that moved (four
pages did, to ``sinks/iceberg.py``, ``core/answers.py``, a stack test and the emulator)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "airflow_provider_analytics"
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
"""The pages a reader follows (the changelog names files as they were, on purpose)."""

NAMED = re.compile(r"`((?:[\w.-]+/)+[\w.-]+\.py)`")


def named_files() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        for path in NAMED.findall(page.read_text(encoding="utf-8")):
            found.append((str(page.relative_to(ROOT)), path))
    return found


def test_the_pages_name_files() -> None:
    """The check itself finds what it checks (a pattern that matched nothing would pass)."""
    assert ("docs/client.md", "airflow_provider_analytics/client/answers.py") in named_files()


@pytest.mark.parametrize(("page", "path"), named_files())
def test_each_named_file_exists_and_is_no_alias(page: str, path: str) -> None:
    """A path is read from the repository's root, or from the package's (``core/rules.py``)."""
    candidates = [ROOT / path, PACKAGE / path]
    found = next((candidate for candidate in candidates if candidate.is_file()), None)
    assert found is not None, f"{page} names {path}, which is not in the repository"
    if found.is_relative_to(PACKAGE):
        source = found.read_text(encoding="utf-8")
        assert "moved_module(" not in source, f"{page} names {path}, a deprecated alias"
