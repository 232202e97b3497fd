"""The README's first request: docs/examples/review.json posted to `make run`'s server over TLS, answered as the
README says (a policy Karmada would accept and never act on, refused with the reason and the fix)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from relay.serve import RelayServer
from relay.settings import Settings
from tests.tls_clients import client_tls

REPO = Path(__file__).resolve().parent.parent
REVIEW = REPO / "docs" / "examples" / "review.json"


async def test_the_readme_s_sample_review_is_refused_with_its_reason(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text()
    assert "--data @docs/examples/review.json https://localhost:9443/validate" in readme
    relay = RelayServer(Settings(port=0, cert_dir=tmp_path / "certs"))
    await relay.start()
    try:
        assert relay.files.ca_file is not None
        context = client_tls(relay.files.ca_file)
        context.check_hostname = False
        body = REVIEW.read_bytes()
        reader, writer = await asyncio.open_connection("127.0.0.1", relay.port, ssl=context)
        writer.write(
            b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nConnection: close\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        answer = await reader.read()
        writer.close()
    finally:
        await relay.stop()
    head, _, payload = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    response = json.loads(payload)["response"]
    assert response["uid"] == json.loads(body)["request"]["uid"]
    assert response["allowed"] is False
    message = response["status"]["message"]
    assert "needs purgeMode Directly" in message
    # The README quotes the start of the answer.
    quoted = re.search(r'"message": ?"([^"]+)', readme)
    assert quoted and message.startswith(quoted.group(1).rstrip(".…")), quoted
