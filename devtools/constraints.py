"""Pip constraints for the provider and every extra of it, generated from ``uv.lock``.

Airflow publishes ``constraints-<python>.txt`` files of pinned versions so that pip does not
have to search the huge space of Airflow's dependencies; this is the same for the provider:
``pip install ".[s3,iceberg,pandas,progress,openlineage]" -c constraints-3.11.txt`` from a clone
resolves at once, with every package pinned, whichever extras are asked for.

    python -m devtools.constraints            # write constraints-3.11.txt from uv.lock
    python -m devtools.constraints --check    # fail when the file is out of date with uv.lock
    python -m devtools.constraints --dry-run  # pip install --dry-run with it, in a fresh venv
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
UV = REPO / ".tools" / "bin" / "uv"
PYTHON_VERSION = "3.11"
EXTRAS = ("s3", "iceberg", "pandas", "progress", "openlineage")
"""Every extra of the provider: the file pins what any combination of them installs."""
CONSTRAINTS = REPO / f"constraints-{PYTHON_VERSION}.txt"
HEADER = f"""\
# Pinned versions for airflow-provider-analytics and every extra of it ({",".join(EXTRAS)}) on
# Python {PYTHON_VERSION}, generated from uv.lock by `python -m devtools.constraints` (do not edit
# by hand). Use, from a clone:
#   pip install ".[{",".join(EXTRAS)}]" -c constraints-{PYTHON_VERSION}.txt
"""


def generate() -> str:
    """The constraints text: every locked runtime package of the provider with every extra."""
    exported = subprocess.run(
        [
            str(UV),
            "export",
            "--frozen",
            "--format",
            "requirements.txt",
            "--package",
            "airflow-provider-analytics",
            *(option for extra in EXTRAS for option in ("--extra", extra)),
            "--no-default-groups",
            "--no-hashes",
            "--no-annotate",
            "--no-header",
            "--no-emit-project",
            "--no-emit-workspace",
        ],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    pins = sorted(line for line in exported.splitlines() if line and not line.startswith("#"))
    return HEADER + "\n".join(pins) + "\n"


def pinned(text: str) -> dict[str, set[str]]:
    """The constraints text as {normalised package name: its pinned versions} (one version per
    environment marker: a package may be pinned apart for Python 3.11 and 3.12)."""
    pins: dict[str, set[str]] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, rest = line.partition("==")
            pins.setdefault(_normalised(name), set()).add(rest.split(";")[0].strip())
    return pins


def _normalised(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(".", "-")


def unpinned(report: dict[str, Any], pins: dict[str, set[str]], own: set[str]) -> list[str]:
    """What a ``pip install --report`` would install that the constraints do not pin.

    :param report: pip's installation report (JSON).
    :param pins: :func:`pinned` of the constraints file.
    :param own: names that are the install's target itself (not pinned on purpose).
    """
    missing = []
    for item in report["install"]:
        name = _normalised(item["metadata"]["name"])
        version = item["metadata"]["version"]
        if name not in own and version not in pins.get(name, set()):
            missing.append(f"{name}=={version}")
    return sorted(missing)


def dry_run(constraints: Path, target: str) -> float:
    """``pip install --dry-run target -c constraints`` in a throwaway venv; seconds it took.

    The install pip would make is read back from its report: every package must be one the
    file pins, at the pinned version.

    :param constraints: the constraints file.
    :param target: what to install (a path with extras, or a requirement).
    :raises subprocess.CalledProcessError: when pip cannot resolve.
    :raises SystemExit: when pip would install a package the file does not pin.
    """
    with tempfile.TemporaryDirectory(prefix="constraints-check-") as scratch:
        venv = Path(scratch) / "venv"
        report = Path(scratch) / "report.json"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        started = time.monotonic()
        subprocess.run(
            [
                str(venv / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--quiet",
                "--dry-run",
                "--ignore-installed",
                "--report",
                str(report),
                target,
                "-c",
                str(constraints),
            ],
            check=True,
            timeout=600,
        )
        seconds = time.monotonic() - started
        missing = unpinned(
            json.loads(report.read_text()),
            pinned(constraints.read_text()),
            own={"airflow-provider-analytics"},
        )
        if missing:
            raise SystemExit(f"pip would install what {constraints.name} does not pin: {missing}")
        return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--check", action="store_true", help="fail if the file is stale")
    action.add_argument("--dry-run", action="store_true", help="prove pip resolves with it")
    args = parser.parse_args(argv)
    if args.dry_run:
        extras = ",".join(EXTRAS)
        seconds = dry_run(CONSTRAINTS, f"{REPO}[{extras}]")
        print(f"pip resolved .[{extras}] with {CONSTRAINTS.name} in {seconds:.1f} s, all pinned")
        return 0
    text = generate()
    if args.check:
        if not CONSTRAINTS.exists() or CONSTRAINTS.read_text() != text:
            print(f"{CONSTRAINTS.name} is out of date: run `python -m devtools.constraints`")
            return 1
        print(f"{CONSTRAINTS.name} matches uv.lock")
        return 0
    CONSTRAINTS.write_text(text)
    print(f"wrote {CONSTRAINTS.name}: {text.count('==')} pins")
    return 0


if __name__ == "__main__":
    sys.exit(main())
