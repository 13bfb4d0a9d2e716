"""Run the emulator as a separate process (for the demo, benchmarks and DAG runs)."""

from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from types import TracebackType


def command_line(
    port_file: Path,
    credentials: Mapping[str, str],
    cohorts: Mapping[str, int] | None = None,
    options: Sequence[str] = (),
) -> list[str]:
    """``python -m analytics_emulator`` on any free port, written to ``port_file`` once it
    listens.

    Each value is joined to its option by ``=``: argparse reads a separate argument that
    begins with ``-`` (as a random token may) as an option, not as a value.

    :param port_file: where the emulator writes its port.
    :param credentials: ``token``, ``app_key``, ``xtoken`` and optionally ``admin_token``.
    :param cohorts: extra cohort codes and sizes.
    :param options: further command line options, each written ``--name=value``
        (``--proxy-cut=cohort_medium:rows=5000``).
    """
    named = [("port", "0"), ("port-file", str(port_file))]
    named += [(name.replace("_", "-"), value) for name, value in credentials.items()]
    named += [("cohort", f"{code}={size}") for code, size in (cohorts or {}).items()]
    return [
        sys.executable,
        "-m",
        "analytics_emulator",
        *(f"--{name}={value}" for name, value in named),
        *options,
    ]


class EmulatorProcess:
    """``python -m analytics_emulator`` on a free loopback port.

    :param credentials: ``token``, ``app_key``, ``xtoken`` and optionally ``admin_token``.
    :param cohorts: extra cohort codes and sizes.
    :param options: further command line options (see :func:`command_line`).
    :param startup_timeout: seconds to wait for the port to be bound.
    """

    def __init__(
        self,
        *,
        credentials: Mapping[str, str],
        cohorts: Mapping[str, int] | None = None,
        options: Sequence[str] = (),
        startup_timeout: float = 60.0,
    ) -> None:
        self.credentials = dict(credentials)
        self.cohorts = dict(cohorts or {})
        self.options = tuple(options)
        self.startup_timeout = startup_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self.base_url = ""

    def start(self) -> EmulatorProcess:
        with tempfile.TemporaryDirectory(prefix="analytics-emulator-") as workdir:
            port_file = Path(workdir) / "port"
            command = command_line(port_file, self.credentials, self.cohorts, self.options)
            self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
            deadline = time.monotonic() + self.startup_timeout
            while not (port_file.exists() and port_file.read_text().strip()):
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("the emulator did not start")
                time.sleep(0.05)
            self.base_url = f"http://127.0.0.1:{port_file.read_text().strip()}"
        return self

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> EmulatorProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
