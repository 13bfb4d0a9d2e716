"""Serving a stdlib HTTP server on 127.0.0.1 for the length of a ``with`` block: the base of
the small local servers tests write to send what the emulator never does."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    import socketserver
    from types import TracebackType


class ServedOnLoopback:
    """Serves ``httpd`` on a thread of its own while used as a context manager.

    :param httpd: the server (an HTTP server, or any threading socket server), bound to a
        loopback address.
    :param scheme: ``http`` or ``https``.
    """

    def __init__(self, httpd: socketserver.ThreadingTCPServer, scheme: str = "http") -> None:
        self.httpd = httpd
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False  # a paced answer may still be sending
        self.scheme = scheme
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)
