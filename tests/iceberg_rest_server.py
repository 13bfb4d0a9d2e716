"""A small Iceberg REST catalog server on loopback, for tests. Not a real catalog.

No Iceberg REST catalog server that runs here installs from PyPI or Debian (checked:
``apache-polaris`` on PyPI is Polaris' Python client and CLI, the server is Java;
``lakana-server`` is a pre-beta data platform whose core pins pyiceberg below 0.13, answers only
its own principals' access tokens and refuses staged table creation, which pyiceberg uses;
Debian packages none). So this serves the part of the Iceberg REST protocol that pyiceberg's
``RestCatalog`` uses to create namespaces and tables, load tables and commit to them, over a
pyiceberg SQL catalog on SQLite. The client goes through its real HTTP path, its error mapping
and its commit retries; table metadata is written by the server's SQL catalog, which checks
each commit's requirements against the table's current metadata, and may live on S3.

What it implements:

- ``GET /v1/config`` (empty defaults and overrides, no ``endpoints`` list, no ``prefix``);
- ``POST /v1/namespaces``, ``GET``/``HEAD /v1/namespaces/{ns}``, listing namespaces
  (``GET /v1/namespaces``, ``?parent=``) and tables (``GET /v1/namespaces/{ns}/tables``);
- ``POST /v1/namespaces/{ns}/tables`` (direct and ``stage-create``);
- ``GET``/``HEAD /v1/namespaces/{ns}/tables/{table}``;
- ``POST /v1/namespaces/{ns}/tables/{table}`` (commit: requirements, then updates);
- a static bearer token (401 without it); 404 for a missing table or namespace, 409 for an
  existing one or a commit whose requirements fail, 500 with the reason for anything else.

What it does not implement (a request for it gets 404 or the error of its backend):

- authentication beyond one static token: no OAuth2 token endpoint (``/v1/oauth/tokens``), no
  token refresh or exchange, no SigV4, no authorization of any kind;
- pagination, dropping or renaming namespaces or tables,
  namespace property updates, ``/register``;
- multi-table transactions (``/v1/transactions/commit``), views, metrics reporting, server-side
  scan planning, credential vending (the ``X-Iceberg-Access-Delegation`` header is ignored; each
  client brings its own storage credentials), per-table ``config`` in load responses;
- ETags, idempotency keys, and the 5xx "commit state unknown" answers a real server may give;
  a commit is never half-applied here, so clients' handling of unknown outcomes is not tested;
- durability and scale: one process, SQLite, state lost when the test ends.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote

from pyiceberg.catalog.rest import CreateTableRequest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import (
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from pyiceberg.table import CommitTableRequest

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pyiceberg.table import Table

_NAMESPACES = re.compile(r"^/v1/namespaces/?$")
_NAMESPACE = re.compile(r"^/v1/namespaces/(?P<namespace>[^/]+)$")
_TABLES = re.compile(r"^/v1/namespaces/(?P<namespace>[^/]+)/tables/?$")
_TABLE = re.compile(r"^/v1/namespaces/(?P<namespace>[^/]+)/tables/(?P<table>[^/]+)$")
_ERRORS: dict[type[Exception], tuple[int, str]] = {
    NoSuchTableError: (404, "NoSuchTableException"),
    NoSuchNamespaceError: (404, "NoSuchNamespaceException"),
    NamespaceAlreadyExistsError: (409, "AlreadyExistsException"),
    TableAlreadyExistsError: (409, "AlreadyExistsException"),
    CommitFailedException: (409, "CommitFailedException"),
}


class _Named:
    """What ``SqlCatalog.commit_table`` reads from a table: its name."""

    def __init__(self, identifier: tuple[str, ...]) -> None:
        self.identifier = identifier

    def name(self) -> tuple[str, ...]:
        return self.identifier


def _namespace(text: str) -> tuple[str, ...]:
    return tuple(unquote(text).split("\x1f"))


def _table_body(table: Table) -> str:
    metadata = table.metadata.model_dump_json()
    location = json.dumps(table.metadata_location)
    return f'{{"metadata-location": {location}, "metadata": {metadata}, "config": {{}}}}'


class _Handler(BaseHTTPRequestHandler):
    server: RestCatalogServer
    query = ""

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _reply(self, status: int, body: str = "") -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _dispatch(self) -> None:
        path, _, self.query = self.path.partition("?")
        if self.server.token and self.headers.get("Authorization") != f"Bearer {self.server.token}":
            self._reply(
                401, '{"error": {"message": "bad token", "type": "NotAuthorized", "code": 401}}'
            )
            return
        try:
            self._route(path)
        except tuple(_ERRORS) as error:
            status, kind = _ERRORS[type(error)]
            body = {"error": {"message": str(error), "type": kind, "code": status}}
            self._reply(status, json.dumps(body))
        except Exception as error:  # a server bug: answer 500 with the reason, as servers do
            body = {"error": {"message": repr(error), "type": "ServerError", "code": 500}}
            self._reply(500, json.dumps(body))

    def _route(self, path: str) -> None:
        catalog = self.server.backend
        method = self.command
        if path == "/v1/config" and method == "GET":
            self._reply(200, '{"defaults": {}, "overrides": {}}')
        elif _NAMESPACES.match(path) and method == "POST":
            request = json.loads(self._body())
            catalog.create_namespace(tuple(request["namespace"]), request.get("properties") or {})
            self._reply(200, json.dumps({"namespace": request["namespace"], "properties": {}}))
        elif _NAMESPACES.match(path) and method == "GET":
            parent = parse_qs(self.query).get("parent", [""])[0]
            found = catalog.list_namespaces(_namespace(parent) if parent else ())
            self._reply(200, json.dumps({"namespaces": [list(name) for name in found]}))
        elif (match := _NAMESPACE.match(path)) and method in ("GET", "HEAD"):
            namespace = _namespace(match["namespace"])
            properties = catalog.load_namespace_properties(namespace)
            self._reply(200, json.dumps({"namespace": list(namespace), "properties": properties}))
        elif (match := _TABLES.match(path)) and method == "GET":
            found = catalog.list_tables(_namespace(match["namespace"]))
            names = [{"namespace": list(name[:-1]), "name": name[-1]} for name in found]
            self._reply(200, json.dumps({"identifiers": names}))
        elif (match := _TABLES.match(path)) and method == "POST":
            self._create_table(_namespace(match["namespace"]))
        elif (match := _TABLE.match(path)) and method in ("GET", "HEAD"):
            identifier = (*_namespace(match["namespace"]), unquote(match["table"]))
            self._reply(200, _table_body(catalog.load_table(identifier)))
        elif (match := _TABLE.match(path)) and method == "POST":
            identifier = (*_namespace(match["namespace"]), unquote(match["table"]))
            request = CommitTableRequest.model_validate_json(self._body())
            with self.server.commit_lock:
                self.server.commits += 1
            response = catalog.commit_table(
                _Named(identifier),  # type: ignore[arg-type]
                request.requirements,
                request.updates,
            )
            self._reply(200, response.model_dump_json())
        else:
            self._reply(
                404, json.dumps({"error": {"message": path, "type": "NotFound", "code": 404}})
            )

    def _create_table(self, namespace: tuple[str, ...]) -> None:
        catalog = self.server.backend
        optional = {"location": None, "partition-spec": None, "write-order": None}
        request = CreateTableRequest.model_validate({**optional, **json.loads(self._body())})
        identifier = (*namespace, request.name)
        arguments: dict[str, Any] = {
            "schema": request.table_schema,
            "properties": request.properties,
        }
        if request.partition_spec is not None:
            arguments["partition_spec"] = request.partition_spec
        if request.write_order is not None:
            arguments["sort_order"] = request.write_order
        if request.stage_create:
            if catalog.table_exists(identifier):
                raise TableAlreadyExistsError(".".join(identifier))
            staged = catalog._create_staged_table(
                identifier, location=request.location, **arguments
            )
            metadata = staged.metadata.model_dump_json()
            self._reply(
                200, f'{{"metadata-location": null, "metadata": {metadata}, "config": {{}}}}'
            )
            return
        table = catalog.create_table(identifier, location=request.location, **arguments)
        self._reply(200, _table_body(table))

    do_GET = do_POST = do_HEAD = _dispatch


class RestCatalogServer(ThreadingHTTPServer):
    """The server, backed by a SQL catalog on SQLite under ``directory``.

    :param directory: where the SQLite file goes (and the warehouse, unless given).
    :param token: a bearer token every request must carry, or None.
    :param warehouse: where new tables go (``s3://bucket/prefix`` for object storage).
    :param properties: FileIO properties the server writes table metadata with
        (``s3.endpoint``, ...); clients bring their own.
    """

    daemon_threads = True

    def __init__(
        self,
        directory: str,
        *,
        token: str | None = None,
        warehouse: str | None = None,
        properties: dict[str, str] | None = None,
    ) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.backend = SqlCatalog(
            "rest_backend",
            uri=f"sqlite:///{directory}/rest_catalog.db",
            warehouse=warehouse or f"file://{directory}/rest_warehouse",
            **(properties or {}),
        )
        self.token = token
        self.commits = 0
        self.commit_lock = threading.Lock()

    @property
    def uri(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"


def serve(
    directory: str,
    *,
    token: str | None = None,
    warehouse: str | None = None,
    properties: dict[str, str] | None = None,
) -> Iterator[RestCatalogServer]:
    """Run a server in a thread for the duration of a fixture."""
    server = RestCatalogServer(directory, token=token, warehouse=warehouse, properties=properties)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
