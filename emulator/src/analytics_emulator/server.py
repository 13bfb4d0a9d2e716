"""Configuration, the ASGI app factory, and a server that runs it on loopback in a thread."""

from __future__ import annotations

import logging
import socket
import threading
import time
from typing import TYPE_CHECKING, Final

import uvicorn

from analytics_emulator.app import build_app
from analytics_emulator.config import EmulatorConfig
from analytics_emulator.connections import counting_protocol
from analytics_emulator.state import EmulatorState

if TYPE_CHECKING:
    from types import TracebackType

    from fastapi import FastAPI

STARTUP_TIMEOUT: Final = 30.0
SHUTDOWN_TIMEOUT: Final = 10.0
GRACEFUL_SHUTDOWN_SECONDS: Final = 2


def create_app(config: EmulatorConfig | None = None) -> FastAPI:
    """A fresh emulator application with its own state (``app.state.emulator``)."""
    config = config or EmulatorConfig()
    state = EmulatorState(
        seed=config.seed,
        cohorts=config.cohorts,
        app_key=config.app_key,
        export_cache_bytes=config.export_cache_bytes,
        export_cache_rows=config.export_cache_rows,
        proxy_cuts=config.cut_cohorts,
        membership_changes=config.membership_changes,
    )
    return build_app(config, state)


class EmulatorServer:
    """The emulator served by uvicorn on a daemon thread.

    ``start()`` binds the socket itself, so with ``port=0`` the port is known at once, and
    returns when the server accepts requests. ``stop()`` shuts it down and frees the port.
    Usable as a context manager.
    """

    def __init__(self, config: EmulatorConfig | None = None) -> None:
        self.config = config or EmulatorConfig()
        self.app = create_app(self.config)
        self.state: EmulatorState = self.app.state.emulator
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self.port: int | None = None

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise RuntimeError("the emulator is not running")
        host = f"[{self.config.host}]" if ":" in self.config.host else self.config.host
        return f"http://{host}:{self.port}"

    def start(self) -> EmulatorServer:
        if self._thread is not None:
            raise RuntimeError("the emulator is already running")
        family = socket.AF_INET6 if ":" in self.config.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.config.host, self.config.port))
        except OSError:
            sock.close()
            raise
        self._socket = sock
        self.port = int(sock.getsockname()[1])
        uvicorn_config = uvicorn.Config(
            self.app,
            log_config=None,
            log_level=self.config.log_level,
            access_log=self.config.access_log,
            http=counting_protocol(self.state.connections),
            lifespan="off",
            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
        )
        self._server = uvicorn.Server(uvicorn_config)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [sock]},
            name=f"analytics-emulator-{self.port}",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the emulator did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is not None and thread is not None:
            server.should_exit = True
            thread.join(SHUTDOWN_TIMEOUT)
            if thread.is_alive():
                server.force_exit = True
                thread.join(SHUTDOWN_TIMEOUT)
            if thread.is_alive():
                logging.getLogger(__name__).warning("the emulator thread did not stop")
        if self._socket is not None:
            self._socket.close()
        self._server = self._thread = self._socket = None
        self.port = None

    def __enter__(self) -> EmulatorServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
