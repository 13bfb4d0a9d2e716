"""Debian's Chromium, headless, driven over the DevTools protocol: for the docs site's checks
and its screenshots.

    python -m devtools.browser install          # apt-get install chromium, when missing (root)
    python -m devtools.browser where            # print the browser's path, or fail

The protocol runs over a pair of pipes (``--remote-debugging-pipe``: the browser reads
commands on its descriptor 3 and writes answers on 4, each message JSON ending in a NUL
byte), so no port is opened and no client library is needed.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "chromium-headless-shell")
DEBIAN_PACKAGE = "chromium"
INSTALL_HINT = "run `python -m devtools.browser install` (as root: it uses apt-get)"
COMMAND_TIMEOUT = 60.0
"""Seconds one protocol command (a page load included) may take."""


class BrowserError(RuntimeError):
    """The browser is missing, died, or answered a command with an error."""


def find_chromium() -> str | None:
    """The path of an installed Chromium, or None."""
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def install() -> str:
    """Chromium's path, installing Debian's package first when it is missing (needs root)."""
    found = find_chromium()
    if found:
        return found
    if os.geteuid() != 0:
        raise BrowserError(
            f"Chromium is not installed; as root run `apt-get install {DEBIAN_PACKAGE}` "
            "(or `python -m devtools.browser install`)"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-q"], check=True, env=env, stdout=subprocess.DEVNULL)
    subprocess.run(
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", DEBIAN_PACKAGE],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    found = find_chromium()
    if found is None:
        raise BrowserError(f"apt-get installed {DEBIAN_PACKAGE} but no browser is on the PATH")
    return found


class Browser:
    """One headless Chromium and one page in it. Use as a context manager.

    :param width: the page's viewport width in CSS pixels.
    :param height: the viewport height.
    """

    def __init__(self, width: int = 1280, height: int = 900) -> None:
        self.width = width
        self.height = height
        self._pid: int | None = None
        self._to_browser: int | None = None
        self._from_browser: int | None = None
        self._buffer = b""
        self._next_id = 0
        self._session: str | None = None
        self._events: list[dict[str, Any]] = []
        self._profile = tempfile.TemporaryDirectory(prefix="analytics-docs-browser-")

    def __enter__(self) -> Browser:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def start(self) -> None:
        executable = find_chromium()
        if executable is None:
            raise BrowserError(f"Chromium is not installed: {INSTALL_HINT}")
        commands_read, commands_write = os.pipe()
        answers_read, answers_write = os.pipe()
        arguments = [
            executable,
            "--headless",
            "--remote-debugging-pipe",
            "--no-sandbox",  # as root, Chromium refuses to start with its sandbox
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--force-color-profile=srgb",
            "--font-render-hinting=none",
            f"--user-data-dir={self._profile.name}",
            f"--window-size={self.width},{self.height}",
            "about:blank",
        ]
        with open(os.devnull, "wb") as devnull:
            actions = [
                (os.POSIX_SPAWN_DUP2, commands_read, 3),
                (os.POSIX_SPAWN_DUP2, answers_write, 4),
                (os.POSIX_SPAWN_DUP2, devnull.fileno(), 1),
                (os.POSIX_SPAWN_DUP2, devnull.fileno(), 2),
            ]
            self._pid = os.posix_spawn(
                executable, arguments, os.environ, file_actions=actions, setsid=True
            )
        os.close(commands_read)
        os.close(answers_write)
        self._to_browser, self._from_browser = commands_write, answers_read
        target = self.command("Target.createTarget", {"url": "about:blank"})["targetId"]
        attached = self.command("Target.attachToTarget", {"targetId": target, "flatten": True})
        self._session = attached["sessionId"]
        self.command("Page.enable")
        self.command("Runtime.enable")
        self.command(
            "Emulation.setDeviceMetricsOverride",
            {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False},
        )

    def close(self) -> None:
        if self._pid is not None:
            with contextlib.suppress(BrowserError, OSError):
                self.command("Browser.close", session=False, timeout=5)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                if os.waitpid(self._pid, os.WNOHANG) != (0, 0):
                    break
                time.sleep(0.05)
            else:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self._pid, signal.SIGKILL)
                os.waitpid(self._pid, 0)
            self._pid = None
        for descriptor in (self._to_browser, self._from_browser):
            if descriptor is not None:
                with contextlib.suppress(OSError):
                    os.close(descriptor)
        self._to_browser = self._from_browser = None
        self._profile.cleanup()

    def _send(self, message: dict[str, Any]) -> None:
        assert self._to_browser is not None
        data = json.dumps(message).encode() + b"\0"
        while data:
            written = os.write(self._to_browser, data)
            data = data[written:]

    def _receive(self, deadline: float) -> dict[str, Any]:
        assert self._from_browser is not None
        while b"\0" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BrowserError("the browser did not answer in time")
            ready, _, _ = select.select([self._from_browser], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise BrowserError("the browser closed its protocol pipe (it exited)")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        decoded: dict[str, Any] = json.loads(message)
        return decoded

    def command(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session: bool = True,
        timeout: float = COMMAND_TIMEOUT,
    ) -> dict[str, Any]:
        """Send one protocol command and return its result; events meanwhile are kept."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self._session is not None:
            message["sessionId"] = self._session
        self._send(message)
        deadline = time.monotonic() + timeout
        while True:
            answer = self._receive(deadline)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer.get("result", {})
                return result
            if "method" in answer:
                self._events.append(answer)

    def _wait_for_event(self, method: str, timeout: float = COMMAND_TIMEOUT) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            for index, event in enumerate(self._events):
                if event["method"] == method:
                    return self._events.pop(index)
            answer = self._receive(deadline)
            if "method" in answer:
                self._events.append(answer)

    def open(self, url: str) -> None:
        """Load ``url`` and wait for its load event and its fonts."""
        self._events.clear()
        navigated = self.command("Page.navigate", {"url": url})
        if navigated.get("errorText"):
            raise BrowserError(f"{url}: {navigated['errorText']}")
        self._wait_for_event("Page.loadEventFired")
        self.evaluate("document.fonts.ready.then(() => true)")

    def evaluate(self, expression: str) -> Any:
        """The JSON value of a JavaScript expression in the page (promises awaited)."""
        result = self.command(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"the page's script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, target: Path, height: int | None = None) -> None:
        """A PNG of the page's top ``height`` pixels (default: the viewport)."""
        clip = {"x": 0, "y": 0, "width": self.width, "height": height or self.height, "scale": 1}
        shot = self.command(
            "Page.captureScreenshot",
            {"format": "png", "clip": clip, "captureBeyondViewport": True},
        )
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(base64.b64decode(shot["data"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.browser", description=__doc__)
    parser.add_argument("action", choices=["install", "where"])
    args = parser.parse_args(argv)
    try:
        path = install() if args.action == "install" else find_chromium()
    except (BrowserError, subprocess.CalledProcessError) as error:
        print(error, file=sys.stderr)
        return 1
    if path is None:
        print(f"Chromium is not installed: {INSTALL_HINT}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
