"""Every install hint works from a clone as written, in every shell: the package is not on
PyPI, so no hint installs it by name, and a target with extras is quoted (zsh reads an
unquoted ``[...]`` as a pattern and refuses it)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_HINT = re.compile(r"pip install (?P<rest>[^`\n]*)")


def hints(text: str) -> list[str]:
    """What follows each ``pip install`` of a text, to the end of its code span or line."""
    return [m["rest"].strip() for m in _HINT.finditer(text)]


def problems(hint: str) -> list[str]:
    """Why ``hint`` would not work from a clone in every shell (none when it does)."""
    found = []
    for word in re.findall(r'"[^"]*"|\'[^\']*\'|\S+', hint):
        if "[" in word and word[0] not in "\"'":
            found.append(f"unquoted extras: {word}")
        if re.match(r"""["']?airflow-provider-analytics\b""", word):
            found.append(f"installs from a package index: {word}")
    return found


def _sources() -> list[Path]:
    return [
        REPO / "README.md",
        *(REPO / "docs").rglob("*.md"),
        *(REPO / "airflow_provider_analytics").rglob("*.py"),
        *(REPO / "devtools").rglob("*.py"),
        *(REPO / "example_dags").glob("*.py"),
    ]


def test_a_hint_that_would_fail_is_named() -> None:
    assert problems("airflow-provider-analytics[pandas]") == [
        "unquoted extras: airflow-provider-analytics[pandas]",
        "installs from a package index: airflow-provider-analytics[pandas]",
    ]
    assert problems('"airflow-provider-analytics[iceberg]"') == [
        'installs from a package index: "airflow-provider-analytics[iceberg]"'
    ]
    assert problems('".[s3,iceberg]" -c constraints-3.11.txt') == []
    assert problems("./emulator") == []


def test_every_install_hint_works_from_a_clone_in_every_shell() -> None:
    found = {
        f"{path.relative_to(REPO)}: pip install {hint}: {problem}"
        for path in _sources()
        for hint in hints(path.read_text(encoding="utf-8"))
        for problem in problems(hint)
    }
    assert not found, sorted(found)
