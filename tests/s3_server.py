"""A real S3 API on loopback for the object storage tests: moto's server in a thread of the
test process, on a free port, and helpers to upload a local tree to it.

The tests that use it skip when the ``s3`` extra (s3fs) or moto's server is not installed;
``pip install -e '.[test]'`` installs both.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

import pytest

# Credentials the server accepts from anyone: moto checks none.
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_DEFAULT_REGION": "us-east-1"}


@dataclass
class S3Server:
    endpoint: str
    client: object  # a boto3 S3 client talking to it

    @property
    def options(self) -> dict:
        """The --storage-options that reach this server. The credentials go with them: the
        workers of a pool come from a fork server that may have started before the test set
        the environment."""
        return {"endpoint_url": self.endpoint, "key": CREDENTIALS["AWS_ACCESS_KEY_ID"],
                "secret": CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
                "client_kwargs": {"region_name": CREDENTIALS["AWS_DEFAULT_REGION"]}}

    def bucket(self, name: str) -> str:
        self.client.create_bucket(Bucket=name)
        return f"s3://{name}"

    def upload(self, local: Path, url: str) -> str:
        """Every file under ``local`` put below ``url`` (``s3://bucket/prefix``) at its
        relative path; ``url`` back."""
        bucket, _, prefix = url[len("s3://"):].partition("/")
        for path in sorted(Path(local).rglob("*")):
            if path.is_file():
                key = "/".join(filter(None, [prefix, path.relative_to(local).as_posix()]))
                self.client.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())
        return url

    def put(self, url: str, data: bytes) -> None:
        bucket, _, key = url[len("s3://"):].partition("/")
        self.client.put_object(Bucket=bucket, Key=key, Body=data)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def s3_server():
    """A moto S3 server on a free loopback port, with its credentials in the environment
    (the commands a test starts inherit them)."""
    pytest.importorskip("s3fs", reason="the s3 extra (s3fs) is not installed")
    server_module = pytest.importorskip("moto.server", reason="moto[server] is not installed")
    boto3 = pytest.importorskip("boto3")
    import logging

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request on stderr
    saved = {name: os.environ.get(name) for name in CREDENTIALS}
    os.environ.update(CREDENTIALS)
    port = free_port()
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    try:
        yield S3Server(endpoint, boto3.client("s3", endpoint_url=endpoint))
    finally:
        server.stop()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
