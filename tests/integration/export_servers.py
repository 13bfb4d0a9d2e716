"""A small stand-in platform on 127.0.0.1 that sends a cohort export exactly as scripted.

It answers the three calls an export makes (the plan, the cohort's count, the export) and
writes the export's body with a function given by the test, so a test can send what real
servers send: odd values, invalid bytes, a cut body, a trickle, gzip, an HTML page.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from tests.loopback import ServedOnLoopback

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import BinaryIO


class ExportServer(ServedOnLoopback):
    """Serves ``plan`` and a cohort of ``count`` users whose export body ``write`` sends.

    :param plan: user property records returned by the plan listing.
    :param count: the cohort size the count call reports.
    :param body: the export body, sent whole (with ``Content-Length``), unless ``write`` is given.
    :param write: writes the body itself (after the headers) for cut or paced bodies.
    :param headers: export answer headers (``Content-Type`` defaults to NDJSON).
    :param pages: answers the paged endpoint from the request's body (by default: the count
        and no users); bytes are sent as they are (numbers written as a server writes them).
    :param status: the export answer's status.
    """

    def __init__(
        self,
        *,
        plan: list[dict[str, Any]],
        count: int,
        body: bytes = b"",
        write: Callable[[BinaryIO], None] | None = None,
        headers: dict[str, str] | None = None,
        pages: Callable[[dict[str, Any]], Any] | None = None,
        status: int = 200,
    ) -> None:
        server = self
        self.exports = 0

        class Handler(BaseHTTPRequestHandler):
            def _json(self, payload: Any) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._json(plan)

            def do_POST(self) -> None:
                asked = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if not self.path.endswith("/export"):
                    empty = {"count": count, "page": 1, "size": 0, "users": []}
                    self._json(pages(json.loads(asked)) if pages else empty)
                    return
                server.exports += 1
                self.send_response(status)
                answer = {"Content-Type": "application/x-ndjson", **(headers or {})}
                if write is None:
                    answer["Content-Length"] = str(len(body))
                for key, value in answer.items():
                    self.send_header(key, value)
                self.end_headers()
                try:
                    if write is None:
                        self.wfile.write(body)
                    else:
                        write(self.wfile)
                    self.wfile.flush()
                except OSError:
                    pass  # the client gave up: that is what some tests want
                self.close_connection = True

            def log_message(self, format: str, *args: Any) -> None:
                return None

        super().__init__(ThreadingHTTPServer(("127.0.0.1", 0), Handler))
