"""A real S3-protocol server for tests: moto's server mode on a free port of 127.0.0.1
(``s3_server``), buckets made on it, and the public reads of a delivery bucket.

moto enforces bucket policies on anonymous reads (an object is private without one),
but verifies no signature."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

import aioboto3
from moto.server import ThreadedMotoServer

from tests.support.servers import free_port

#: Keys moto accepts (it checks no signature); the region requests are signed for.
CREDENTIALS = {"aws_access_key_id": "roost-test", "aws_secret_access_key": "roost-test-secret"}
REGION = "us-east-1"


@contextlib.contextmanager
def s3_server() -> Iterator[str]:
    """Start moto's S3 server in a thread; yield its URL; stop it on exit."""
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


async def make_buckets(endpoint: str, *names: str) -> None:
    """Create the buckets ``names`` on the server at ``endpoint``."""
    session = aioboto3.Session(**CREDENTIALS, region_name=REGION)
    async with session.client("s3", endpoint_url=endpoint) as s3:
        for name in names:
            await s3.create_bucket(Bucket=name)


async def allow_public_reads(endpoint: str, bucket: str, prefix: str = "") -> None:
    """A bucket policy letting anyone GET the objects of ``bucket`` under ``prefix`` (as
    compose's ``mc anonymous set download``, or a CDN's access): delivery only."""
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": "*",
                "Action": ["s3:GetObject"],
                "Resource": [f"arn:aws:s3:::{bucket}/{prefix}*"],
            }
        ],
    }
    session = aioboto3.Session(**CREDENTIALS, region_name=REGION)
    async with session.client("s3", endpoint_url=endpoint) as s3:
        await s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps(policy))
