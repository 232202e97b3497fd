"""Readiness that means something: the TLS listener answers a real handshake with a valid certificate.

controller-runtime learnt this the hard way (controller-runtime#723): a webhook reported ready before it served, and the
apiserver's first calls failed. `/readyz` here dials our own listener over TLS and verifies the served chain and its
validity period against our CA when we have one; it fails when the chain does not verify, the certificate has expired,
the CA file is missing or unusable, the server is shutting down, or a background task of the relay (the reconcile loop,
the caBundle sync, a member's fence watcher) has stopped: a relay whose fence watcher is gone is not a member relay.

The name in the certificate is not checked: the certificate names what the apiserver dials (the Service, e.g. the
only name in a cert-manager Certificate), never the address we dial ourselves (loopback, or a pod IP given to
--host), so a hostname check here would keep such a pod unready forever while it serves fine.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

# A probe result is reused for this long, so a busy kubelet (or a curl loop) does not turn /readyz into a
# handshake storm; it is far below the kubelet's default 10 s probe period.
PROBE_CACHE_SECONDS = 2.0
# A handshake on loopback takes ~1-3 ms; 2 s only trips when the event loop or the listener is wedged.
DIAL_TIMEOUT_SECONDS = 2.0

# A CA bundle holds a few certificates of ~1 KB; anything far larger is not one and is not read whole.
MAX_CA_BUNDLE_BYTES = 1024 * 1024

LOOPBACK_FOR_WILDCARD = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


@dataclass
class Readiness:
    host: str
    port: int
    ca_file: Path | None
    certificate_not_after: Callable[[], datetime | None]
    clock: Callable[[], float] = time.monotonic
    shutting_down: bool = False
    # Background tasks that ended by themselves, by name, with their cause (relay/serve.py `supervised`).
    stopped_tasks: dict[str, str] = field(default_factory=dict)
    _cached: tuple[float, tuple[str, ...]] | None = field(default=None, repr=False)

    def dial_host(self) -> str:
        return LOOPBACK_FOR_WILDCARD.get(self.host, self.host)

    async def problems(self) -> tuple[str, ...]:
        if self.shutting_down:
            return ("shutting down",)
        stopped = tuple(f"{name} stopped: {cause}" for name, cause in sorted(self.stopped_tasks.items()))
        if stopped:
            return stopped
        now = self.clock()
        if self._cached is not None and now - self._cached[0] < PROBE_CACHE_SECONDS:
            return self._cached[1]
        found: list[str] = []
        not_after = self.certificate_not_after()
        if not_after is None:
            found.append("no serving certificate loaded")
        elif not_after <= datetime.now(UTC):
            found.append(f"serving certificate expired at {not_after.isoformat()}")
        dial_problem = await self._dial()
        if dial_problem:
            found.append(dial_problem)
        self._cached = (now, tuple(found))
        return self._cached[1]

    def _client_context(self) -> ssl.SSLContext | str:
        """The context of the self-dial, or why there is none (the CA file is missing or unusable)."""
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        context.check_hostname = False  # chain and validity only (module docstring)
        if self.ca_file is None:
            # Certificates from elsewhere without a CA file: still require a completed handshake.
            context.verify_mode = ssl.CERT_NONE
            return context
        try:
            with self.ca_file.open("rb") as file:
                data = file.read(MAX_CA_BUNDLE_BYTES + 1)
            if len(data) > MAX_CA_BUNDLE_BYTES:
                return f"{self.ca_file}: larger than {MAX_CA_BUNDLE_BYTES} bytes, not a CA bundle"
            context.load_verify_locations(cadata=data.decode("ascii"))
        except FileNotFoundError:
            return f"{self.ca_file}: missing"
        except (ValueError, ssl.SSLError):  # empty, not PEM, not ASCII (UnicodeDecodeError is a ValueError)
            return f"{self.ca_file}: not a PEM CA bundle"
        except OSError as error:  # after ssl.SSLError, which is one
            return f"{self.ca_file}: cannot read ({error.strerror})"
        return context

    async def _dial(self) -> str | None:
        context = self._client_context()
        if isinstance(context, str):
            return context
        host = self.dial_host()
        try:
            _, writer = await asyncio.wait_for(
                asyncio.open_connection(host, self.port, ssl=context, server_hostname=None), DIAL_TIMEOUT_SECONDS
            )
        except (TimeoutError, OSError, ssl.SSLError) as error:
            return f"TLS listener on {host}:{self.port} does not answer: {type(error).__name__}: {error}"[:200]
        writer.close()
        with contextlib.suppress(OSError, ssl.SSLError):
            await writer.wait_closed()
        return None
