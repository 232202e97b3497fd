"""How many of our files one `/validate` or `/mutate` request passes through, and how often control comes back.

Runs the admission server's aiohttp application in-process (no TLS, no socket tuning: only our code matters here),
posts one review of the documented Flink policy, and records with `sys.setprofile` every call into a file of this
repository while the request is served. Prints the files in the order they are first entered and the number of
returns into a file already left (a "come back"). Usage: `.venv/bin/python bench/admission_path.py [validate|mutate]`.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from relay.settings import Settings  # noqa: E402
from tests.admission_reviews import admission_review  # noqa: E402
from tests.policies import flink_policy  # noqa: E402
from webhook.handlers import AdmissionHandlers  # noqa: E402
from webhook.health import Readiness  # noqa: E402
from webhook.server import AdmissionServer  # noqa: E402

PACKAGES = ("failover", "webhook", "relay", "controllers", "certs")


def _ours(filename: str) -> str | None:
    path = Path(filename)
    try:
        relative = path.resolve().relative_to(ROOT)
    except ValueError:
        return None
    return str(relative) if relative.parts[0] in PACKAGES else None


async def trace(endpoint: str) -> list[str]:
    readiness = Readiness(host="127.0.0.1", port=0, ca_file=None, certificate_not_after=lambda: None)
    server = AdmissionServer(AdmissionHandlers(), readiness, max_body_bytes=Settings().max_body_bytes)
    body = json.dumps(admission_review(flink_policy(purgeMode="Gracefully"))).encode()
    sequence: list[str] = []

    def profile(frame: Any, event: str, _: Any) -> None:
        if event == "call":
            name = _ours(frame.f_code.co_filename)
            if name is not None and (not sequence or sequence[-1] != name):
                sequence.append(name)

    async with TestClient(TestServer(server.application())) as client:
        sys.setprofile(profile)
        try:
            async with client.post(f"/{endpoint}", data=body, headers={"Content-Type": "application/json"}) as reply:
                await reply.read()
        finally:
            sys.setprofile(None)
    return sequence


def main() -> None:
    endpoint = sys.argv[1] if len(sys.argv) > 1 else "validate"
    sequence = asyncio.run(trace(endpoint))
    files = list(dict.fromkeys(sequence))
    comebacks = sum(1 for index, name in enumerate(sequence) if name in sequence[:index])
    # The path proper: the webhook's own files and the rule module they hand the object to (the rule's helpers in
    # failover/ are its business). "To the verdict": the files entered until control first leaves failover/.
    rule = next((name for name in sequence if name.startswith("failover/")), None)
    core = [name for name in sequence if name.startswith("webhook/") or name == rule]
    core_files = list(dict.fromkeys(core))
    first_return = next(
        (
            i
            for i, name in enumerate(sequence)
            if i and name.startswith("webhook/") and sequence[i - 1].startswith("failover/")
        ),
        len(sequence),
    )
    to_verdict = list(
        dict.fromkeys(name for name in sequence[:first_return] if name.startswith("webhook/") or name == rule)
    )
    core_comebacks = sum(
        1 for index, name in enumerate(core) if index and name != core[index - 1] and name in core[:index]
    )
    print(f"/{endpoint}: {len(files)} files, control returns to an already-entered file {comebacks} times")
    print(
        f"core (webhook/ + the rule module): {len(core_files)} files, {core_comebacks} returns; "
        f"socket to verdict: {len(to_verdict)} files ({', '.join(to_verdict)})"
    )
    print("files in order of first entry: " + ", ".join(files))
    print("call sequence (file changes): " + " -> ".join(sequence))


if __name__ == "__main__":
    main()
