"""The architecture page names modules; each must exist, so the map cannot drift from the code."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "airflow_provider_analytics"
PAGE = ROOT / "docs" / "architecture.md"


def named_modules() -> set[str]:
    """Module paths the page names in backticks: ``client/api.py``, ``storage.py``, or a
    bare file name such as ``attempts.py`` inside its package's section."""
    return set(re.findall(r"`([\w/]+\.py)`", PAGE.read_text(encoding="utf-8")))


def test_every_module_the_architecture_page_names_exists() -> None:
    names = named_modules()
    assert len(names) > 30
    package_files = {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")}
    missing = sorted(
        name
        for name in names
        if name not in package_files
        and not any(f.endswith(f"/{name}") for f in package_files)
        and not (ROOT / name).exists()
    )
    assert missing == []
