"""The export benchmarks' data and server: generated NDJSON, served with ``socket.sendfile``.

The data has the shape of a real cohort export: 19 properties of every plan type, full-precision
doubles, ids printed the way a Java double prints them, CJK text, nulls inside lists, the masked
marker in a masked text column on every row and in a typed column (a datetime) every 10,000 rows
(or, for the marker case, every 1,000 rows, in turn in a number, boolean, list, datetime and
number column). Records are written compactly, as a Java serializer writes them. Files are kept
under the work directory and reused while their name (rows, marker spacing, version) matches.

The server answers the three calls of an export (the plan, the count, the body); the body is
the file, sent by the kernel (``socket.sendfile``), so the server costs almost nothing and the
figures measure the client. It also answers the paged endpoint (``page``, ``pageSize``) from
pages built once from the same file (:func:`page_file`), each sent by the kernel from where it
stands in one file of pages; a page of other properties (the shards' check of their first
page's ids) is built from it, one of another size from the NDJSON file, when asked. Connections
are kept alive (HTTP/1.1), as a platform behind a proxy keeps them. Only the standard library is
imported here.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import random
import threading
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

VERSION = 3
"""Part of every data file's name: bump when the records change."""
TOKEN, APP_KEY = "bench-token", "bench-app-key"
TIMEZONE = "Asia/Shanghai"
MARKER = "(已脱敏)"
PLAN = [
    *({"id": name, "dataType": "number"} for name in ("distinct_id", "score", "price")),
    *({"id": name, "dataType": "number"} for name in ("age", "balance")),
    *({"id": name, "dataType": "string"} for name in ("city", "nickname", "email", "device")),
    {"id": "phone", "dataType": "string", "masking": 1},
    *({"id": name, "dataType": "boolean"} for name in ("is_vip", "opted_in", "verified")),
    *({"id": name, "dataType": "datetime"} for name in ("register_time", "last_login")),
    {"id": "birthday", "dataType": "datetime"},
    *({"id": name, "dataType": "array<string>"} for name in ("interests", "devices", "labels")),
]
COLUMNS = [item["id"] for item in PLAN]
EXTRA_KEY = "tag.source"
"""The key the "extra key" data adds to every record (not in :data:`PLAN`)."""
MARKED_COLUMNS = ["score", "is_vip", "interests", "last_login", "balance"]
CITIES = ["上海", "北京", "深圳", "杭州", "成都", "Wien", "São Paulo", "東京"]
WORDS = ["运动", "音乐", "旅行", "美食", "读书", "gaming", "电影", None]


def _java_double(value: float) -> str:
    """A double as a Java platform prints it (``BigDecimal.valueOf(d).toPlainString()``):
    shortest digits in plain notation, so ids end in 000, and a whole number of 10^7 or more
    without ``.0``."""
    text = format(Decimal(repr(value)), "f")
    if abs(value) >= 1e7 and text.endswith(".0"):
        text = text[:-2]
    return text


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _record(rng: random.Random, row: int, marker_every: int, rotate: bool, extra: bool) -> str:
    day = rng.randrange(1, 28)
    values: dict[str, Any] = {
        "distinct_id": _java_double(float(rng.getrandbits(63) - (1 << 62))),
        "score": repr(rng.random() * 100),
        "price": repr(round(rng.uniform(0, 5000), 2)),
        "age": str(rng.randrange(16, 90)),
        "balance": repr(rng.uniform(-1000, 1e6)),
        "city": _text(rng.choice(CITIES)),
        "nickname": _text(f"用户{row}"),
        "email": _text(f"user{row}@example.com"),
        "device": _text(rng.choice(["iPhone 15", "Pixel 8", "华为 Mate 60"])),
        "phone": _text(MARKER),
        "is_vip": rng.choice(["true", "false"]),
        "opted_in": rng.choice(["true", "false", "null"]),
        "verified": rng.choice(["true", "false"]),
        "register_time": f'"2023-{rng.randrange(1, 13):02d}-{day:02d} 10:{day:02d}:05"',
        "last_login": f'"2024-01-{day:02d} 0{rng.randrange(10)}:00:00.{rng.randrange(1000):03d}"',
        "birthday": f'"19{rng.randrange(50, 99)}-0{rng.randrange(1, 10)}-{day:02d}"',
        "interests": _text(rng.sample(WORDS, rng.randrange(0, 4))),
        "devices": _text(["ios", None] if row % 7 == 0 else ["android"]),
        "labels": "null" if row % 5 == 0 else _text(["新客", "高价值"]),
    }
    if row % marker_every == marker_every - 1:
        column = (
            MARKED_COLUMNS[(row // marker_every) % len(MARKED_COLUMNS)] if rotate else "last_login"
        )
        values[column] = _text(MARKER)
    if extra:  # a key the export does not ask for, as a tag column a server added
        values[EXTRA_KEY] = _text(f"t{row % 7}")
    return "{" + ",".join(f'"{k}":{v}' for k, v in values.items()) + "}\n"


def ndjson_file(
    directory: Path, rows: int, *, marker_every: int = 10_000, extra: bool = False
) -> Path:
    """The data file of ``rows`` records in ``directory``, written unless it is there already.

    :param marker_every: a typed column holds the masked marker once in this many rows; below
        10,000 the column rotates through :data:`MARKED_COLUMNS`.
    :param extra: each record also holds :data:`EXTRA_KEY`, which the export does not ask for
        (the same records otherwise).
    """
    rotate = marker_every < 10_000
    tail = "-extra" if extra else ""
    path = directory / f"users-v{VERSION}-{rows}-m{marker_every}{tail}.ndjson"
    if path.exists():
        return path
    directory.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    rng = random.Random(20240105)
    with partial.open("w", encoding="utf-8") as sink:
        for start in range(0, rows, 10_000):
            sink.write(
                "".join(
                    _record(rng, row, marker_every, rotate, extra)
                    for row in range(start, min(start + 10_000, rows))
                )
            )
    partial.rename(path)
    return path


def page_file(ndjson: Path, page_size: int) -> tuple[Path, list[int]]:
    """The pages of ``page_size`` users of ``ndjson`` as the paged endpoint sends them
    (``{"count", "page", "size", "users": [...]}``), one after another in one file, written
    beside it unless it is there already; and where each page starts (the file's size last)."""
    path = ndjson.with_name(f"{ndjson.stem}-pages{page_size}.json")
    index = path.with_suffix(".offsets")
    if path.exists() and index.exists():
        return path, json.loads(index.read_text())
    with ndjson.open("rb") as source:
        rows = sum(1 for _ in source)
    offsets = [0]
    partial = path.with_suffix(".partial")
    with ndjson.open("rb") as source, partial.open("wb") as sink:
        page = 0
        while users := [line.rstrip(b"\n") for line in itertools.islice(source, page_size)]:
            page += 1
            head = json.dumps({"count": rows, "page": page, "size": len(users)})[:-1]
            sink.write(head.encode() + b',"users":[' + b",".join(users) + b"]}")
            offsets.append(sink.tell())
    partial.rename(path)
    index.write_text(json.dumps(offsets))
    return path, offsets


class _Handler(BaseHTTPRequestHandler):
    """Answers the three calls of an export; the body is sent with ``socket.sendfile``."""

    server: _Server
    protocol_version = "HTTP/1.1"  # connections kept alive, as a platform behind a proxy does

    def log_message(self, *args: Any) -> None:
        pass

    def _json(self, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # list_user_properties
        self._json(PLAN)

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        path, repeat, rows = self.server.cohorts[request["cohortCode"]]
        if not self.path.endswith("/export"):  # get_cohort_users: the count, or a page
            if "page" in request:
                self._page(request, path, rows)
            else:
                self._json({"count": rows, "page": 1, "size": 0, "users": []})
            return
        size = path.stat().st_size
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Content-Length", str(size * repeat))
        self.end_headers()
        self.wfile.flush()
        with path.open("rb") as body:
            for _ in range(repeat):
                self.connection.sendfile(body, 0, size)

    def _page(self, request: dict[str, Any], path: Path, rows: int) -> None:
        """A page: sent from the file of pages when it is one of them, built from it when it
        holds fewer properties (the shards' check of their first page's ids), else built."""
        number, size = request["page"], request["pageSize"]
        pages = self.server.pages.get(request["cohortCode"])
        properties = request.get("properties")
        if pages and pages[2] == size:
            pages_path, offsets, _ = pages
            start, end = offsets[number - 1], offsets[number]
            if properties is not None and len(properties) != len(PLAN):
                with pages_path.open("rb") as source:
                    source.seek(start)
                    page = json.loads(source.read(end - start))
                page["users"] = [{k: user[k] for k in properties} for user in page["users"]]
                self._json(page)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(end - start))
            self.end_headers()
            self.wfile.flush()
            with pages_path.open("rb") as body:
                self.connection.sendfile(body, start, end - start)
            return
        first = (number - 1) * size
        users = []
        with path.open("rb") as source:
            for row, line in enumerate(source):
                if row >= first + size:
                    break
                if row >= first:
                    user = json.loads(line)
                    users.append({k: user[k] for k in properties or user})
        self._json({"count": rows, "page": number, "size": len(users), "users": users})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    cohorts: dict[str, tuple[Path, int, int]]
    pages: dict[str, tuple[Path, list[int], int]]


@contextlib.contextmanager
def serving(
    cohorts: dict[str, tuple[Path, int, int]],
    pages: dict[str, tuple[Path, list[int], int]] | None = None,
) -> Iterator[str]:
    """Serve ``cohorts`` (code -> file, times it is sent, rows) on 127.0.0.1, and the paged
    endpoint of those in ``pages`` (code -> :func:`page_file`'s file and offsets, page size);
    yields the base URL."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.cohorts = cohorts
    server.pages = pages or {}
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
