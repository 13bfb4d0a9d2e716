"""The built documentation site, opened page by page in Debian's headless Chromium.

Every page is loaded as a reader's browser loads it; the check fails on a link to a page or
anchor that does not exist, an image that does not load, a code block or image wider than the
column, a code line that wraps instead of scrolling, and a navigation entry cut off. It reads
the site ``make docs`` built (``make test`` builds it first), or builds one when there is none.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from devtools.browser import INSTALL_HINT, find_chromium
from devtools.docs_site import SCREENSHOTS, check_site, take_screenshots

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
BUILT = REPO / "out" / "docs" / "html"
FIGURES = ("funnel", "event_trend", "output_layout", "day_rule", "layers")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if find_chromium() is None:
        pytest.fail(f"Chromium is needed for the site check: {INSTALL_HINT}")
    if (BUILT / "index.html").exists():
        return BUILT
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(REPO / "docs"), str(target)],
        check=True,
    )
    return target


def test_every_page_has_working_links_and_images_and_fits_its_column(site: Path) -> None:
    report = check_site(site)

    assert report.problems == []
    assert report.pages >= 40
    assert report.links_checked > 1000


def test_the_generated_figures_are_shown(site: Path) -> None:
    images = {path.name for path in (site / "_images").iterdir()}
    assert {f"{name}.svg" for name in FIGURES} <= images


def test_a_broken_link_a_missing_image_a_wide_and_a_wrapping_code_block_are_caught(
    tmp_path: Path,
) -> None:
    (tmp_path / "index.html").write_text(
        "<html><body><article style='width: 300px'>"
        "<a href='missing.html'>gone</a> <a href='index.html#nowhere'>no anchor</a>"
        "<img src='missing.svg'>"
        "<pre style='white-space: pre'>" + "x" * 200 + "</pre>"
        "<pre style='white-space: pre-wrap; overflow-wrap: anywhere'>"
        + "wrapped "
        + "y" * 200
        + "</pre>"
        "<pre style='white-space: pre; overflow-x: auto'>scrolls " + "z" * 200 + "</pre>"
        "</article></body></html>",
        encoding="utf-8",
    )

    problems = check_site(tmp_path).problems

    assert any("missing.html leads nowhere" in problem for problem in problems), problems
    assert any("#nowhere names an anchor the page lacks" in problem for problem in problems)
    assert any("image missing.svg did not load" in problem for problem in problems)
    assert any("code block: xxxx" in problem and "wider" in problem for problem in problems)
    assert any("code block: wrapped" in problem and "wraps" in problem for problem in problems)
    assert not any("code block: scrolls" in problem for problem in problems), problems
    assert len(problems) == 5


def test_screenshots_show_the_pages_the_docs_name(site: Path, tmp_path: Path) -> None:
    written = take_screenshots(site, tmp_path)

    assert sorted(path.name for path in written) == sorted(SCREENSHOTS)
    for path in written:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        committed = REPO / "docs" / "_static" / "screenshots" / path.name
        assert committed.exists(), f"{committed} is not committed: run make screenshots"
    shutil.rmtree(tmp_path)
