"""The built documentation site, opened in headless Chromium: checked, and photographed.

    python -m devtools.docs_site check out/docs/html
    python -m devtools.docs_site screenshots out/docs/html docs/_static/screenshots

``check`` opens every page and reports a link to a page or anchor that does not exist, an
image that did not load, a code block or image wider than the page's column, a code line
that wraps (long lines scroll inside their block instead), and a navigation entry cut off.
``screenshots`` writes PNGs of the pages in :data:`SCREENSHOTS` (``make screenshots`` runs it
into ``docs/_static/screenshots``; ``make docs`` never does, so a build leaves the tracked
pictures alone).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from devtools.browser import Browser, find_chromium

WIDTH = 1280
HEIGHT = 900
SCREENSHOTS = {
    "index.png": ("index.html", 1000),
    "operator_page.png": ("operators/cohort_export.html", 1000),
    "output_layout.png": ("output_layout.html", 1500),
}
"""File name: the page and the height of the picture, from the top of the page."""

PAGE_SCRIPT = """
(() => {
  const column = document.querySelector("article") || document.body;
  const right = column.getBoundingClientRect().right + 1;
  const wide = [];
  const wrapped = [];
  for (const pre of document.querySelectorAll("pre")) {
    if (pre.offsetParent === null) continue;  // not displayed
    const first = pre.textContent.trim().split("\\n")[0].slice(0, 70);
    const style = getComputedStyle(pre);
    // A line of code wraps when the block may wrap and a line is wider than the block: laid
    // out without wrapping, it would be wider.
    if (style.whiteSpace !== "pre") {
      const kept = pre.style.whiteSpace;
      pre.style.whiteSpace = "pre";
      if (pre.scrollWidth > pre.clientWidth + 1) wrapped.push("code block: " + first);
      pre.style.whiteSpace = kept;
    }
    // A long line scrolls inside its block; text spilling out of it, or a block reaching past
    // the column, is too wide.
    const spills = style.overflowX === "visible" && pre.scrollWidth > pre.clientWidth + 1;
    if (spills || pre.getBoundingClientRect().right > right) wide.push("code block: " + first);
  }
  const brokenImages = [];
  for (const img of document.images) {
    if (!img.complete || img.naturalWidth === 0) brokenImages.push(img.getAttribute("src"));
    else if (img.getBoundingClientRect().right > right) {
      wide.push("image: " + img.getAttribute("src"));
    }
  }
  const cutNavigation = [...document.querySelectorAll(".sidebar-tree a")]
    .filter((a) => a.scrollWidth > a.clientWidth + 1)
    .map((a) => a.textContent.trim());
  return {
    title: document.title,
    links: [...document.querySelectorAll("a[href]")].map((a) => a.href),
    ids: [...document.querySelectorAll("[id]")].map((e) => e.id),
    wide,
    wrapped,
    brokenImages,
    cutNavigation,
  };
})()
"""


@dataclass
class SiteReport:
    """What the check found, page by page (paths relative to the site's root)."""

    pages: int = 0
    links_checked: int = 0
    external_links: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)


def site_pages(root: Path) -> list[Path]:
    """Every HTML page of the built site."""
    return sorted(root.rglob("*.html"))


def check_site(root: Path) -> SiteReport:
    """Open every page of the site under ``root`` and collect its problems."""
    root = root.resolve()
    report = SiteReport()
    ids: dict[Path, set[str]] = {}
    links: list[tuple[Path, str]] = []
    with Browser(WIDTH, HEIGHT) as browser:
        for page in site_pages(root):
            browser.open(page.as_uri())
            found = browser.evaluate(PAGE_SCRIPT)
            where = page.relative_to(root).as_posix()
            report.pages += 1
            ids[page] = set(found["ids"])
            links.extend((page, link) for link in found["links"])
            report.problems.extend(
                f"{where}: {item} is wider than its column" for item in found["wide"]
            )
            report.problems.extend(
                f"{where}: {item} has a line that wraps (code scrolls, it must not wrap)"
                for item in found["wrapped"]
            )
            report.problems.extend(
                f"{where}: image {src} did not load" for src in found["brokenImages"]
            )
            report.problems.extend(
                f"{where}: navigation entry {name!r} is cut off" for name in found["cutNavigation"]
            )
    for page, link in links:
        parts = urlsplit(link)
        if parts.scheme in {"http", "https", "mailto"}:
            report.external_links.add(link)
            continue
        report.links_checked += 1
        where = page.relative_to(root).as_posix()
        if parts.scheme != "file":
            report.problems.append(f"{where}: link {link} is neither a page nor a web address")
            continue
        target = Path(unquote(parts.path))
        if not target.exists():
            report.problems.append(f"{where}: link to {link} leads nowhere")
        elif parts.fragment and target.suffix == ".html":
            anchors = ids.get(target)
            if anchors is not None and unquote(parts.fragment) not in anchors:
                report.problems.append(f"{where}: link {link} names an anchor the page lacks")
    return report


def take_screenshots(root: Path, target: Path) -> list[Path]:
    """PNGs of the pages in :data:`SCREENSHOTS` into ``target``."""
    written = []
    with Browser(WIDTH, HEIGHT) as browser:
        for name, (page, height) in SCREENSHOTS.items():
            browser.open((root.resolve() / page).as_uri())
            browser.screenshot(target / name, height=height)
            written.append(target / name)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.docs_site", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="check every page of a built site")
    check.add_argument("site", type=Path)
    shots = commands.add_parser("screenshots", help="photograph the pages the docs show")
    shots.add_argument("site", type=Path)
    shots.add_argument("target", type=Path)
    args = parser.parse_args(argv)
    if find_chromium() is None:
        print(
            "Chromium is not installed (`python -m devtools.browser install` as root)",
            file=sys.stderr,
        )
        return 1
    if args.command == "screenshots":
        for path in take_screenshots(args.site, args.target):
            print(f"wrote {path}")
        return 0
    report = check_site(args.site)
    print(
        f"{report.pages} pages, {report.links_checked} links checked, "
        f"{len(report.external_links)} web addresses not fetched"
    )
    for problem in report.problems:
        print(problem)
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
