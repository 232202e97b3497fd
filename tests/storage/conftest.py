"""A real S3-protocol server (moto's standalone server, in its own process) on a free loopback port, and a fresh bucket
in it for each test."""

import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import boto3
import pytest
import s3fs

from tests.processes import free_port
from tests.storage.s3_options import options


@pytest.fixture(scope="session")
def s3_endpoint():
    port = free_port()
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    server = Path(sys.executable).with_name("moto_server")
    command = [str(server)] if server.exists() else [sys.executable, "-m", "moto.server"]
    process = subprocess.Popen(
        command + ["-H", "127.0.0.1", "-p", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail("moto_server did not start")
            time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    process.terminate()
    process.wait(10)


@pytest.fixture
def bucket(s3_endpoint):
    name = f"ckpt-{uuid.uuid4().hex[:12]}"
    boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    ).create_bucket(Bucket=name)
    return s3fs.S3FileSystem(**options(s3_endpoint)), name
