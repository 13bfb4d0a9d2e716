"""``make docs`` (which ``make test`` runs) leaves the checkout as it found it: it writes no
file git tracks and leaves no file git would pick up.

The build runs the Makefile's own recipe, into a temporary folder (``DOCS_OUT``). The check
compares ``git status --porcelain`` before and after, with a digest of every file it lists, so
a developer's own uncommitted edits neither fail it nor hide a write into an already edited
file. Only what the build needs to leave is allowed: folders git ignores (``docs/_generated``
for the figures, ``out/``).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def tree_state(root: Path = REPO) -> dict[str, str]:
    """Each path ``git status`` reports in the checkout at ``root`` (changed, staged, deleted
    or untracked and not ignored): its status and a digest of what it holds now."""
    listed = subprocess.run(
        ["git", "status", "--porcelain", "-z", "--untracked-files=all"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout.decode()
    entries = iter(listed.split("\0"))
    state = {}
    for entry in entries:
        if not entry:
            continue
        status, path = entry[:2], entry[3:]
        if "R" in status or "C" in status:
            next(entries)  # the name it was renamed or copied from
        file = root / path
        digest = hashlib.sha256(file.read_bytes()).hexdigest() if file.is_file() else "-"
        state[path] = f"{status} {digest}"
    return state


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


@pytest.fixture(scope="module")
def checkout() -> None:
    if shutil.which("git") is None or shutil.which("make") is None:
        pytest.skip("git and make are needed")
    inside = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], cwd=REPO, capture_output=True, text=True
    )
    if inside.returncode != 0 or Path(inside.stdout.strip()).resolve() != REPO.resolve():
        pytest.skip("not a git checkout of the repository")


def test_tree_state_sees_a_new_file_and_a_second_edit_of_an_edited_one(tmp_path: Path) -> None:
    """The comparison catches what a plain ``git status`` would not: another write into a
    file that was already edited. Ignored files are left out."""
    if shutil.which("git") is None:
        pytest.skip("git is needed")

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True
        )

    git("init", "-q")
    (tmp_path / ".gitignore").write_text("/out/\n")
    (tmp_path / "page.md").write_text("one\n")
    git("add", ".")
    git("commit", "-q", "-m", "start")
    (tmp_path / "page.md").write_text("two\n")
    edited = tree_state(tmp_path)
    (tmp_path / "page.md").write_text("three\n")
    (tmp_path / "new.png").write_bytes(b"png")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "site.html").write_text("ignored")

    assert list(edited) == ["page.md"]
    assert changed(edited, tree_state(tmp_path)) == ["new.png", "page.md"]


def test_the_docs_build_writes_no_file_git_sees(checkout: None, tmp_path: Path) -> None:
    out = tmp_path / "docs"
    before = tree_state()

    subprocess.run(
        ["make", "--no-print-directory", "docs", f"DOCS_OUT={out}"],
        cwd=REPO,
        check=True,
        timeout=1200,
    )

    assert (out / "html" / "index.html").exists()
    assert (out / "html" / "_images" / "layers.svg").exists()
    assert changed(before, tree_state()) == []
