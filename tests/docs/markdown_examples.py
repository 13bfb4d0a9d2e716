"""The Python examples of a Markdown page, read from the page itself.

Two kinds: fenced ```` ```python ```` blocks (indented ones inside list items too), and the
inline code of a table whose last column is headed ``example`` (the client page's operations
table). A block preceded by ``<!-- example: skip (reason) -->`` is returned with that reason
so the runner can list it instead of running it.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

_OPEN = re.compile(r"^(?P<indent>\s*)```python\s*$")
_CLOSE = re.compile(r"^\s*```\s*$")
_SKIP = re.compile(r"^\s*<!--\s*example:\s*skip\s*\((?P<reason>[^)]+)\)\s*-->\s*$")
_CODE_SPAN = re.compile(r"^`(?P<code>.+)`$")


@dataclass(frozen=True)
class Example:
    """One example: where it starts (1-based line), its code, and why it is not run if so."""

    line: int
    code: str
    skip_reason: str | None = None


def fenced_python(text: str) -> Iterator[Example]:
    """Every ```` ```python ```` block, dedented by its fence's indentation."""
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        opened = _OPEN.match(lines[index])
        if opened is None:
            index += 1
            continue
        skip = _SKIP.match(lines[index - 1]) if index > 0 else None
        end = index + 1
        while end < len(lines) and not _CLOSE.match(lines[end]):
            end += 1
        if end == len(lines):
            raise ValueError(f"line {index + 1}: a ```python block is never closed")
        code = textwrap.dedent("\n".join(lines[index + 1 : end])) + "\n"
        yield Example(index + 2, code, skip.group("reason") if skip else None)
        index = end + 1


def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def table_examples(text: str) -> Iterator[Example]:
    """The code span in the last cell of each row of tables whose last header is ``example``."""
    lines = text.splitlines()
    in_table = False
    for number, line in enumerate(lines, start=1):
        if not line.lstrip().startswith("|"):
            in_table = False
            continue
        cells = _cells(line)
        if not in_table:
            in_table = cells[-1] == "example"
            continue
        span = _CODE_SPAN.match(cells[-1])
        if span is not None:
            yield Example(number, span.group("code") + "\n")


def examples(text: str) -> list[Example]:
    """Both kinds, in the order they appear on the page."""
    return sorted([*fenced_python(text), *table_examples(text)], key=lambda e: e.line)
