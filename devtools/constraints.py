"""Pip constraints for the provider and its ``[s3]`` extra, generated from ``uv.lock``.

Airflow publishes ``constraints-<python>.txt`` files of pinned versions so that pip does not
have to search the huge space of Airflow's dependencies; this is the same for the provider:
``pip install "airflow-provider-analytics[s3]" -c constraints-3.11.txt`` resolves at once.

    python -m devtools.constraints            # write constraints-3.11.txt from uv.lock
    python -m devtools.constraints --check    # fail when the file is out of date with uv.lock
    python -m devtools.constraints --dry-run  # pip install --dry-run with it, in a fresh venv
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
UV = REPO / ".tools" / "bin" / "uv"
PYTHON_VERSION = "3.11"
CONSTRAINTS = REPO / f"constraints-{PYTHON_VERSION}.txt"
HEADER = f"""\
# Pinned versions for airflow-provider-analytics and its [s3] extra on Python {PYTHON_VERSION},
# generated from uv.lock by `python -m devtools.constraints` (do not edit by hand). Use:
#   pip install "airflow-provider-analytics[s3]" -c constraints-{PYTHON_VERSION}.txt
"""


def generate() -> str:
    """The constraints text: every locked runtime package of the provider with ``[s3]``."""
    exported = subprocess.run(
        [
            str(UV),
            "export",
            "--frozen",
            "--format",
            "requirements.txt",
            "--package",
            "airflow-provider-analytics",
            "--extra",
            "s3",
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


def dry_run(constraints: Path, target: str) -> float:
    """``pip install --dry-run target -c constraints`` in a throwaway venv; seconds it took.

    :param constraints: the constraints file.
    :param target: what to install (a path with extras, or a requirement).
    :raises subprocess.CalledProcessError: when pip cannot resolve.
    """
    with tempfile.TemporaryDirectory(prefix="constraints-check-") as scratch:
        venv = Path(scratch) / "venv"
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
                target,
                "-c",
                str(constraints),
            ],
            check=True,
            timeout=600,
        )
        return time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--check", action="store_true", help="fail if the file is stale")
    action.add_argument("--dry-run", action="store_true", help="prove pip resolves with it")
    args = parser.parse_args(argv)
    if args.dry_run:
        seconds = dry_run(CONSTRAINTS, f"{REPO}[s3]")
        print(f"pip resolved .[s3] with {CONSTRAINTS.name} in {seconds:.1f} s")
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
