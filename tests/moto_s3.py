"""moto's server on 127.0.0.1 as the S3-protocol (and Glue) endpoint of the tests that need
one: started with a bucket, stopped afterwards, with a client and a key listing."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import boto3
from moto.server import ThreadedMotoServer

if TYPE_CHECKING:
    from collections.abc import Iterator

REGION = "us-east-1"


@contextlib.contextmanager
def moto_server(bucket: str) -> Iterator[str]:
    """Serve moto on a free loopback port with the empty ``bucket``; yield its endpoint."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        s3_client(endpoint).create_bucket(Bucket=bucket)
        yield endpoint
    finally:
        server.stop()


def s3_client(endpoint: str) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name=REGION,
    )


def keys(endpoint: str, bucket: str, prefix: str = "") -> list[str]:
    """Every object key under ``prefix``, sorted."""
    pages = (
        s3_client(endpoint).get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    )
    return sorted(item["Key"] for page in pages for item in page.get("Contents", []))
