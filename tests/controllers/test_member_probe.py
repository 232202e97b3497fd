"""The probe of a member that does not answer (controllers/access/members.py `MemberProxy.answers`): one request within
its deadline, not urllib3's three retries after it (a cut member took 12 s instead of 3 and held every reconcile of a
binding waiting on it)."""

from __future__ import annotations

import socket
import time

from kubernetes import client

from controllers.access.members import PROBE_TIMEOUT_SECONDS, MemberProxy


def test_a_member_that_never_answers_costs_one_probe_deadline() -> None:
    with socket.socket() as silent:  # the kernel completes the handshake; nothing ever reads or answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        configuration = client.Configuration()
        configuration.host = f"https://127.0.0.1:{silent.getsockname()[1]}"
        configuration.verify_ssl = False
        proxy = MemberProxy(client.ApiClient(configuration))
        started = time.monotonic()
        assert proxy.answers("member1", remember_seconds=60) is False
        took = time.monotonic() - started
        assert took < 2 * PROBE_TIMEOUT_SECONDS, f"{took:.1f} s"
        assert proxy.answers("member1", remember_seconds=60) is False  # remembered: no second request
        assert time.monotonic() - started < 2 * PROBE_TIMEOUT_SECONDS
